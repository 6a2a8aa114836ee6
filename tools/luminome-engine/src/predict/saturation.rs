//! `luminome-predict --npz` on a saturated dataset (`luminome-mask-pairs --saturate BED`):
//! each interval's substitutions as one row of `(N, 4, L)` arrays, the layout
//! `luminome-importance --method ism` writes for a classifier and TF-MoDISco-style tools read.
//! mask-pairs names each saturated site's interval in its variant ID (`chrom:start-end`,
//! 1-based), so the rows need neither the BED nor the reference again.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::{bail, Context, Result};
use luminome_io::atomic::AtomicFile;
use luminome_io::npz::{NpyArraySpec, NpyElem, NpzWriter};
use luminome_io::pair_dataset::{PairDataset, VariantSite};

use super::variants::base_class;

/// The BED a dataset was saturated from, when `luminome-mask-pairs --saturate` built it (its
/// second source is `saturate:BED`).
pub fn saturated_bed(dataset: &PairDataset) -> Option<&str> {
    dataset
        .meta()
        .sources
        .get(1)
        .and_then(|s| s.strip_prefix("saturate:"))
}

/// One interval of the BED, 0-based half-open.
struct Interval {
    chrom: String,
    start: u64,
    end: u64,
}

/// The LLR of every substitution scored so far, by interval (in the order first seen, which is
/// the BED's) and base.
#[derive(Default)]
pub struct Saturation {
    intervals: Vec<Interval>,
    by_id: HashMap<String, usize>,
    /// (interval, offset in it) → the reference base (0..4 for A, C, G, T) and the LLR of each
    /// base (0 at the reference's own).
    bases: BTreeMap<(usize, u64), (usize, [f32; 4])>,
}

impl Saturation {
    /// Records the LLR of `v`'s ALT allele.
    pub fn record(&mut self, v: &VariantSite, llr: f32) -> Result<()> {
        let i = match self.by_id.get(&v.id) {
            Some(&i) => i,
            None => {
                self.intervals.push(parse_interval(v)?);
                self.by_id.insert(v.id.clone(), self.intervals.len() - 1);
                self.intervals.len() - 1
            }
        };
        let interval = &self.intervals[i];
        if v.chrom != interval.chrom || v.pos <= interval.start || v.pos > interval.end {
            bail!(
                "the saturated site {}:{} is not inside its interval {} (variant_id of the dataset's index)",
                v.chrom,
                v.pos,
                v.id
            );
        }
        let class = |allele: &str| {
            base_class(allele).with_context(|| {
                format!(
                    "the saturated site {}:{} has allele {allele}, not one of A, C, G, T",
                    v.chrom, v.pos
                )
            })
        };
        let (reference, alternate) = (class(&v.reference)?, class(&v.alternate)?);
        let slot = self
            .bases
            .entry((i, v.pos - 1 - interval.start))
            .or_insert((reference, [0.0; 4]));
        slot.1[alternate] = llr;
        Ok(())
    }

    /// The npz, assembled but not committed: `ism` (N, 4, L) the LLR of each base (0 at the
    /// reference's own and off the scored bases), `contrib` (N, 4, L) one-hot × the base's
    /// score (the reference's log-likelihood over the mean of its three substitutions, −mean
    /// LLR: positive where the model favours the genome's base), `onehot` (N, 4, L) float32,
    /// and the intervals: `chrom` (text), `start`, `end` (N) int64, 0-based half-open; L = the
    /// longest interval, shorter ones padded with 0.
    pub fn write_npz(&self, dest: &Path) -> Result<AtomicFile> {
        let n = self.intervals.len() as u64;
        let width = self.intervals.iter().map(|i| i.end - i.start).max();
        let width = width.unwrap_or(0) as usize;
        let chrom_chars = self.intervals.iter().map(|i| i.chrom.chars().count());
        let chrom_chars = chrom_chars.max().unwrap_or(0).max(1) as u32;
        let planes = [n, 4, width as u64];
        let mut npz = NpzWriter::create(
            dest,
            &[
                NpyArraySpec::new("ism", NpyElem::F32, &planes),
                NpyArraySpec::new("contrib", NpyElem::F32, &planes),
                NpyArraySpec::new("onehot", NpyElem::F32, &planes),
                NpyArraySpec::new("chrom", NpyElem::Unicode(chrom_chars), &[n]),
                NpyArraySpec::new("start", NpyElem::I64, &[n]),
                NpyArraySpec::new("end", NpyElem::I64, &[n]),
            ],
        )?;
        for (i, interval) in self.intervals.iter().enumerate() {
            let [mut ism, mut contrib, mut onehot] = [(); 3].map(|_| vec![0f32; 4 * width]);
            for (&(_, offset), &(reference, llr)) in self.bases.range((i, 0)..(i + 1, 0)) {
                let at = |base: usize| base * width + offset as usize;
                for (base, &x) in llr.iter().enumerate() {
                    ism[at(base)] = x;
                }
                onehot[at(reference)] = 1.0;
                contrib[at(reference)] = -llr.iter().sum::<f32>() / 3.0;
            }
            npz.push_f32(0, &ism)?;
            npz.push_f32(1, &contrib)?;
            npz.push_f32(2, &onehot)?;
            npz.push_str(3, &[interval.chrom.as_str()])?;
            npz.push_i64(4, &[interval.start as i64])?;
            npz.push_i64(5, &[interval.end as i64])?;
        }
        npz.finish()
    }
}

/// The interval a saturated site's ID names: `chrom:start-end`, 1-based inclusive.
fn parse_interval(v: &VariantSite) -> Result<Interval> {
    let parsed = v.id.rsplit_once(':').and_then(|(chrom, range)| {
        let (start, end) = range.split_once('-')?;
        let (start, end) = (start.parse::<u64>().ok()?, end.parse::<u64>().ok()?);
        (start >= 1 && end >= start).then(|| Interval {
            chrom: chrom.to_string(),
            start: start - 1,
            end,
        })
    });
    match parsed {
        Some(i) => Ok(i),
        None => bail!(
            "variant_id {} of the saturated site {}:{} is not an interval chrom:start-end (the dataset's index was changed after luminome-mask-pairs --saturate wrote it)",
            v.id,
            v.chrom,
            v.pos
        ),
    }
}
