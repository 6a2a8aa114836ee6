//! What every variant-scoring predictor writes besides its TSV, whatever model made the scores
//! (the bi-strand family's heads, a published Caduceus model): the scored VCF (the input's
//! records with the scores in INFO) and the track of the lowest LLR per position (bedGraph or
//! bigWig), from a pair dataset of variant windows (luminome-mask-pairs --variants).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use luminome_io::atomic::Commit;
use luminome_io::bedgraph::BedGraphWriter;
use luminome_io::bigwig::ChromSizes;
use luminome_io::pair_dataset::{PairDataset, VariantSite};
use luminome_io::reference::Reference;
use luminome_io::variant_scores::{write_scored_vcf, AlleleScore, Indexing, VariantScores};

use super::saturation::{saturated_bed, Saturation};
use super::{ExtraOutputs, Tally};

/// The scores of the alleles predicted so far, kept for the VCF and the track.
#[derive(Default)]
pub struct VariantOutputs {
    scores: VariantScores,
    /// Lowest LLR per (chrom, 0-based position).
    track: BTreeMap<(String, u64), f32>,
    /// Every substitution by interval, for a saturated dataset (--npz).
    saturation: Option<Saturation>,
    /// Each recorded record and its three scores, when kept (a sharded run's part).
    tally: Option<Tally>,
}

impl VariantOutputs {
    /// Outputs whose VCF header describes LLR, LLR_A and LLR_B as given.
    pub fn described(descriptions: [&'static str; 3]) -> Self {
        let mut o = Self::default();
        o.scores.descriptions = Some(descriptions);
        o
    }

    /// Outputs for `dataset`: a saturated one's also keep each interval's substitutions.
    pub fn of_dataset(mut self, dataset: &PairDataset) -> Self {
        self.saturation = saturated_bed(dataset).map(|_| Saturation::default());
        self
    }

    /// Records the score of one ALT allele of `v`, dataset row `record`.
    pub fn record(&mut self, record: usize, v: &VariantSite, score: AlleleScore) -> Result<()> {
        let llr = score.llr;
        if let Some(t) = &mut self.tally {
            t.records.push(record as u64);
            t.values
                .extend([llr, score.llr_a, score.llr_b].map(f64::from));
        }
        if let Some(s) = &mut self.saturation {
            s.record(v, llr)?;
        }
        self.scores
            .alleles
            .insert((v.line, v.alternate.clone()), score);
        self.scores.ref_match.insert(v.line, v.ref_match);
        self.scores.sites.insert(v.line, (v.chrom.clone(), v.pos));
        let slot = self
            .track
            .entry((v.chrom.clone(), v.pos - 1))
            .or_insert(llr);
        *slot = slot.min(llr);
        Ok(())
    }

    /// Keeps what [`Self::record`] is given from here on, for [`Self::tally`].
    pub fn start_tally(&mut self) {
        self.tally = Some(Tally {
            width: 3,
            ..Tally::default()
        });
    }

    /// What [`Self::record`] was given since [`Self::start_tally`], in order.
    pub fn tally(&self) -> Tally {
        self.tally.clone().unwrap_or(Tally {
            width: 3,
            ..Tally::default()
        })
    }

    /// Records a shard's tally again: `site` gives the variant of a dataset row.
    pub fn replay<'a>(
        &mut self,
        tally: &Tally,
        site: impl Fn(usize) -> Option<&'a VariantSite>,
    ) -> Result<()> {
        if tally.width != 3 || tally.values.len() != 3 * tally.records.len() {
            bail!(
                "a shard's tally holds {} values per record, not the 3 scores of a variant",
                tally.width
            );
        }
        for (&r, s) in tally.records.iter().zip(tally.values.chunks_exact(3)) {
            let v = site(r as usize).with_context(|| {
                format!("a shard's tally names record {r}, which is no variant of the dataset")
            })?;
            // f32 → f64 → f32 is exact.
            let score = AlleleScore {
                llr: s[0] as f32,
                llr_a: s[1] as f32,
                llr_b: s[2] as f32,
            };
            self.record(r as usize, v, score)?;
        }
        Ok(())
    }

    /// Checks, before any output, that the extra outputs can be written for `dataset`.
    pub fn check_extra(dataset: &PairDataset, variants: bool, extra: &ExtraOutputs) -> Result<()> {
        if extra.any() && !variants {
            bail!(
                "{}: --vcf, --bedgraph and --npz need a dataset of variant windows (luminome-mask-pairs --variants or --saturate)",
                dataset.path().display()
            );
        }
        if extra.npz.is_some() && saturated_bed(dataset).is_none() {
            bail!(
                "{}: --npz writes each interval of luminome-mask-pairs --saturate as (4, L) arrays; this dataset's variants come from a file (their scores are in the TSV, or --vcf)",
                dataset.path().display()
            );
        }
        if extra.vcf.is_some() {
            let source = variants_source(dataset, extra)?;
            if !source.is_file() {
                bail!(
                    "{}: the variants file the dataset was built from is not there; give it with --variants",
                    source.display()
                );
            }
        }
        Ok(())
    }

    /// The VCF and the track, uncommitted.
    pub fn write_extra(
        &self,
        dataset: &PairDataset,
        extra: &ExtraOutputs,
    ) -> Result<Vec<Box<dyn Commit>>> {
        let mut files: Vec<Box<dyn Commit>> = Vec::new();
        if let Some(dest) = &extra.vcf {
            let source = variants_source(dataset, extra)?;
            let scored = write_scored_vcf(
                &source,
                dest,
                &self.scores,
                &reference_contigs(dataset),
                &[
                    ("source".into(), "luminome-predict".into()),
                    (
                        "luminome_predictVersion".into(),
                        env!("CARGO_PKG_VERSION").into(),
                    ),
                    (
                        "luminome_predictCommand".into(),
                        luminome_cli::command_line(),
                    ),
                ],
            )?;
            if let Indexing::Unsorted(reason) = &scored.index {
                // A warning, shown with --quiet too: a missing index surprises a pipeline later.
                eprintln!(
                    "luminome-predict: warning: {} has no tabix index: its records are not sorted \
                     as the variants file had them ({reason}); `bcftools sort` then `tabix -p vcf` indexes it",
                    dest.display()
                );
            }
            files.push(Box::new(scored));
        }
        if let Some(dest) = &extra.bedgraph {
            // A bigWig's chromosome sizes: --chrom-sizes, or the reference the dataset was built
            // from.
            let sizes = match &extra.chrom_sizes {
                Some(p) => Some(ChromSizes::read(p)?),
                None => dataset.meta().sources.first().and_then(|r| {
                    let contigs = reference_contigs(dataset);
                    (!contigs.is_empty())
                        .then(|| ChromSizes::from_sequences(&contigs, Path::new(r)))
                }),
            };
            let mut w = BedGraphWriter::create_track(
                dest,
                Some("track type=bedGraph name=\"luminome LLR\" description=\"lowest ln P(ALT) - ln P(REF) per position\""),
                sizes,
            )?;
            for ((chrom, pos), &llr) in &self.track {
                w.push(chrom, *pos, pos + 1, llr)?;
            }
            files.push(Box::new(w));
        }
        if let Some(dest) = &extra.npz {
            let saturation = self.saturation.as_ref().with_context(|| {
                format!(
                    "internal: {} was not opened as a saturated dataset",
                    dataset.path().display()
                )
            })?;
            files.push(Box::new(saturation.write_npz(dest)?));
        }
        Ok(files)
    }
}

/// The sequences (names, lengths) of the reference the dataset was built from (its metadata's
/// first source), when that file is still there; empty otherwise.
fn reference_contigs(dataset: &PairDataset) -> Vec<(String, u64)> {
    match dataset.meta().sources.first() {
        Some(r) if Path::new(r).is_file() => Reference::open(Path::new(r))
            .map(|r| r.sequences().to_vec())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The variants file the dataset was built from (its metadata's second source), as written
/// when the dataset was made, which may be relative to another folder than today's: tried as
/// stored (from the current folder), then from the dataset's folder, then by its file name in
/// the dataset's folder; none existing is an error naming every try and `--variants`.
fn variants_source(dataset: &PairDataset, extra: &ExtraOutputs) -> Result<PathBuf> {
    if let Some(bed) = saturated_bed(dataset) {
        bail!(
            "{}: built by luminome-mask-pairs --saturate {bed} (every substitution of its intervals), so there are no VCF records to annotate; the TSV has a row per substitution, the bedGraph the lowest LLR per base and --npz every interval as (4, L) arrays",
            dataset.path().display()
        );
    }
    if let Some(v) = &extra.variants {
        return Ok(v.clone());
    }
    let stored = dataset
        .meta()
        .sources
        .get(1)
        .map(PathBuf::from)
        .with_context(|| {
            format!(
                "{}: the dataset names no variants file; give --variants",
                dataset.path().display()
            )
        })?;
    let folder = dataset
        .path()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut tries = vec![stored.clone()];
    if stored.is_relative() {
        tries.push(folder.join(&stored));
    }
    if let Some(name) = stored.file_name() {
        tries.push(folder.join(name));
    }
    tries.dedup();
    if let Some(found) = tries.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    bail!(
        "{}: the variants file it was built from ({}) is not at {}; give --variants",
        dataset.path().display(),
        stored.display(),
        tries
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" or ")
    )
}

/// The class of a single-base allele: A, C, G, T → 0..3 (any case); `None` for anything else.
pub fn base_class(allele: &str) -> Option<usize> {
    ["A", "C", "G", "T"]
        .iter()
        .position(|b| b.eq_ignore_ascii_case(allele))
}

/// The TSV columns of a variant scorer after `record name`: the variant, its three scores (named
/// by the family) and the INFO values mask-pairs kept.
pub fn variant_columns(scores: [&str; 3], info_keys: &[String]) -> Vec<String> {
    let mut c: Vec<String> = ["chrom", "pos", "id", "ref", "alt", "ref_match"]
        .into_iter()
        .chain(scores)
        .map(String::from)
        .collect();
    c.extend(info_keys.iter().map(|k| format!("info_{k}")));
    c
}

/// The values of [`variant_columns`] for one ALT allele (a score the model did not make: NA).
pub fn variant_values(v: &VariantSite, scores: [Option<f32>; 3], info: &[String]) -> Vec<String> {
    let mut values = vec![
        v.chrom.clone(),
        v.pos.to_string(),
        v.id.clone(),
        v.reference.clone(),
        v.alternate.clone(),
        u8::from(v.ref_match).to_string(),
    ];
    values.extend(
        scores
            .iter()
            .map(|s| s.map_or("NA".to_string(), |x| format!("{x:.6}"))),
    );
    values.extend(info.iter().cloned());
    values
}

/// The first rows of each variant window in `records`: the ALT alleles of one VCF record share
/// their window (mask-pairs writes them one after the other), so a model runs once per window.
/// Returns the window rows and, for each record, the index of its window.
pub fn windows_of(
    records: &[usize],
    line_of: impl Fn(usize) -> Option<u64>,
) -> (Vec<usize>, Vec<usize>) {
    let mut windows: Vec<usize> = Vec::new();
    let mut window_of = Vec::with_capacity(records.len());
    for &r in records {
        let line = line_of(r);
        let same = windows.last().is_some_and(|&w| line_of(w) == line);
        if !same {
            windows.push(r);
        }
        window_of.push(windows.len() - 1);
    }
    (windows, window_of)
}
