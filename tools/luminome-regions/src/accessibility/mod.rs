//! Accessibility per region and cell type, from a bigWig or bedGraph coverage track, a 10x
//! fragments file, a BAM file or a per-interval counts table; and its normalisation.
//!
//! Raw values (what each source gives for a region `[s, e)`):
//! - bigWig / bedGraph coverage: the sum of the per-base signal over the region
//!   (`Σ value × overlapping bp`).
//! - fragments: `insertions` (default) counts Tn5 insertion sites (`start` and `end - 1` of each
//!   fragment row) inside the region; `fragments` counts fragment rows that overlap it. Each row
//!   counts once whatever its duplicate count (column 5).
//! - BAM: alignments whose 5' end lies in the region, after the MAPQ / flag filters.
//! - counts table (`chrom start end value`): the values of the rows whose midpoint lies in the
//!   region, so a row is counted once even when it straddles two regions.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use luminome_io::bam;
use luminome_io::bigwig::{BigWigTrack, CoverageInterval};
use luminome_io::{bed, fragments, InputError};

use crate::regions::{toggled_chr, RegionSet};

pub mod normalise;
pub mod source;

pub use normalise::{call_peaks, Normalisation};
pub use source::{AccessibilitySource, ChromRename, CountOptions, FragmentMode, SourceKind};

/// Fail when the file's chromosome names and the reference's have nothing in common on the
/// chromosomes that carry regions, and say what to do when only the `chr` prefix differs.
fn check_names(
    path: &Path,
    file_names: &HashSet<String>,
    set: &RegionSet,
    rename: ChromRename,
) -> Result<()> {
    let wanted: Vec<&str> = set
        .chroms
        .iter()
        .filter(|c| !c.regions.is_empty())
        .map(|c| c.name.as_str())
        .collect();
    if wanted.is_empty() || wanted.iter().any(|w| file_names.contains(*w)) {
        return Ok(());
    }
    let toggled = wanted.iter().find(|w| {
        let t = toggled_chr(w);
        file_names.contains(&t) || file_names.contains(rename.apply(&t).as_ref())
    });
    let mut sample: Vec<&String> = file_names.iter().collect();
    sample.sort();
    sample.truncate(5);
    if let Some(w) = toggled {
        let flag = if w.starts_with("chr") {
            "add-chr"
        } else {
            "remove-chr"
        };
        bail!(InputError::file(
            path,
            format!(
                "chromosome names do not match the reference: the reference has {w:?}, this file has {:?}; \
                 pass --acc-chrom-names {flag} to map them",
                toggled_chr(w)
            )
        ));
    }
    bail!(InputError::file(
        path,
        format!(
            "no chromosome in common with the regions (regions on {:?}, file has e.g. {sample:?})",
            &wanted[..wanted.len().min(5)]
        )
    ))
}

/// Index of the region of `regions` (sorted, non-overlapping) that contains `pos`.
pub fn region_containing(regions: &[(u64, u64)], pos: u64) -> Option<usize> {
    let i = regions.partition_point(|r| r.1 <= pos);
    (i < regions.len() && regions[i].0 <= pos).then_some(i)
}

/// `Σ value × overlap` of sorted coverage intervals over each sorted region.
pub fn sum_coverage(intervals: &[CoverageInterval], regions: &[(u64, u64)], out: &mut [f64]) {
    let mut j = 0;
    for (k, &(s, e)) in regions.iter().enumerate() {
        while j < intervals.len() && intervals[j].end <= s {
            j += 1;
        }
        let mut sum = 0.0;
        let mut t = j;
        while t < intervals.len() && intervals[t].start < e {
            let iv = &intervals[t];
            let overlap = iv.end.min(e).saturating_sub(iv.start.max(s));
            sum += iv.value as f64 * overlap as f64;
            t += 1;
        }
        out[k] = sum;
    }
}

/// A bedGraph (or counts table) as per-chromosome interval lists (names renamed), with the
/// furthest end on each chromosome and its line (checked against the reference's lengths).
struct BedGraphTable {
    by_chrom: HashMap<String, Vec<CoverageInterval>>,
    furthest: HashMap<String, (u64, u64)>,
}

fn read_bedgraph(path: &Path, rename: ChromRename) -> Result<BedGraphTable> {
    let mut by_chrom: HashMap<String, Vec<CoverageInterval>> = HashMap::new();
    let mut furthest: HashMap<String, (u64, u64)> = HashMap::new();
    for rec in bed::open(path)? {
        let rec = rec?;
        let value: f32 = rec
            .name
            .as_deref()
            .ok_or_else(|| {
                InputError::line(path, rec.line, "expected 4 columns: chrom start end value")
            })?
            .parse()
            .map_err(|_| {
                InputError::line(
                    path,
                    rec.line,
                    format!("value {:?} is not a number", rec.name),
                )
            })?;
        // Coverage, counts or signal per base: NaN, infinities and negatives would reach the
        // features (a NaN accessibility poisons every model that reads it).
        if !(value.is_finite() && value >= 0.0) {
            return Err(InputError::line(
                path,
                rec.line,
                format!("value {value} is not a coverage (a finite number ≥ 0)"),
            )
            .into());
        }
        let chrom = rename.apply(&rec.chrom).into_owned();
        match furthest.get_mut(&chrom) {
            Some(end) if rec.end <= end.0 => {}
            Some(end) => *end = (rec.end, rec.line),
            // The name is cloned once per chromosome, not per row.
            None => {
                furthest.insert(chrom.clone(), (rec.end, rec.line));
            }
        }
        by_chrom.entry(chrom).or_default().push(CoverageInterval {
            start: rec.start,
            end: rec.end,
            value,
        });
    }
    for v in by_chrom.values_mut() {
        v.sort_by_key(|i| i.start);
    }
    Ok(BedGraphTable { by_chrom, furthest })
}

/// An interval that ends past its chromosome in the reference: the file was made on another
/// assembly (or the row is damaged), so its counts would land on the wrong bases.
fn past_the_end(path: &Path, line: u64, chrom: &str, end: u64, length: u64) -> InputError {
    InputError::line(
        path,
        line,
        format!(
            "ends at {end}, past the end of {chrom} (length {length} in the reference): \
             is the file from another assembly?"
        ),
    )
}

/// Every chromosome's furthest end (and its line) within the reference's length.
fn check_ends(path: &Path, furthest: &HashMap<String, (u64, u64)>, set: &RegionSet) -> Result<()> {
    for c in &set.chroms {
        if let Some(&(end, line)) = furthest.get(&c.name) {
            if end > c.length {
                bail!(past_the_end(path, line, &c.name, end, c.length));
            }
        }
    }
    Ok(())
}

/// Coverage intervals of one chromosome from a coverage source (bigWig or bedGraph).
pub struct CoverageReader {
    path: PathBuf,
    rename: ChromRename,
    inner: CoverageInner,
}

enum CoverageInner {
    BigWig(BigWigTrack, HashMap<String, String>),
    BedGraph(BedGraphTable),
}

impl CoverageReader {
    pub fn open(source: &AccessibilitySource, rename: ChromRename) -> Result<Self> {
        let inner = match source.kind {
            SourceKind::BigWig => {
                let track = BigWigTrack::open(&source.path)?;
                let names = track
                    .chroms()
                    .into_iter()
                    .map(|(n, _)| (rename.apply(&n).into_owned(), n))
                    .collect();
                CoverageInner::BigWig(track, names)
            }
            SourceKind::BedGraph | SourceKind::Counts => {
                CoverageInner::BedGraph(read_bedgraph(&source.path, rename)?)
            }
            _ => bail!("internal: {} is not a coverage track", source.kind.name()),
        };
        Ok(Self {
            path: source.path.clone(),
            rename,
            inner,
        })
    }

    /// Chromosome names as the reference spells them (after renaming).
    pub fn names(&self) -> HashSet<String> {
        match &self.inner {
            CoverageInner::BigWig(_, names) => names.keys().cloned().collect(),
            CoverageInner::BedGraph(t) => t.by_chrom.keys().cloned().collect(),
        }
    }

    /// The file's chromosome names against the reference's (a `chr` prefix mismatch is named),
    /// and a bedGraph's interval ends against their chromosome lengths.
    pub fn check_names(&self, set: &RegionSet) -> Result<()> {
        check_names(&self.path, &self.names(), set, self.rename)?;
        if let CoverageInner::BedGraph(table) = &self.inner {
            check_ends(&self.path, &table.furthest, set)?;
        }
        Ok(())
    }

    /// Intervals on reference chromosome `chrom`, sorted.
    pub fn intervals(&mut self, chrom: &str) -> Result<Vec<CoverageInterval>> {
        Ok(match &mut self.inner {
            CoverageInner::BigWig(track, names) => match names.get(chrom) {
                Some(file_name) => track.intervals(file_name)?,
                None => Vec::new(),
            },
            CoverageInner::BedGraph(t) => t.by_chrom.get(chrom).cloned().unwrap_or_default(),
        })
    }
}

/// Raw accessibility of every region of `set` (global region order) from one source.
pub fn count(
    source: &AccessibilitySource,
    set: &RegionSet,
    opts: &CountOptions,
) -> Result<Vec<f64>> {
    let mut out = vec![0.0; set.len()];
    let offsets: Vec<usize> = (0..set.chroms.len()).map(|c| set.offset(c)).collect();
    match source.kind {
        SourceKind::BigWig | SourceKind::BedGraph => {
            let mut reader = CoverageReader::open(source, opts.rename)?;
            reader.check_names(set)?;
            for (ci, c) in set.chroms.iter().enumerate() {
                if c.regions.is_empty() {
                    continue;
                }
                let off = set.offset(ci);
                let iv = reader.intervals(&c.name)?;
                sum_coverage(&iv, &c.regions, &mut out[off..off + c.regions.len()]);
            }
        }
        SourceKind::Counts => {
            let table = read_bedgraph(&source.path, opts.rename)?;
            check_names(
                &source.path,
                &table.by_chrom.keys().cloned().collect(),
                set,
                opts.rename,
            )?;
            check_ends(&source.path, &table.furthest, set)?;
            for (ci, c) in set.chroms.iter().enumerate() {
                let off = set.offset(ci);
                for iv in table
                    .by_chrom
                    .get(&c.name)
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                {
                    if let Some(k) = region_containing(&c.regions, (iv.start + iv.end) / 2) {
                        out[off + k] += iv.value as f64;
                    }
                }
            }
        }
        SourceKind::Fragments => {
            let index: HashMap<&str, usize> = set
                .chroms
                .iter()
                .enumerate()
                .map(|(i, c)| (c.name.as_str(), i))
                .collect();
            let mut seen: HashSet<String> = HashSet::new();
            let mut last_chrom = String::new();
            let mut last: Option<usize> = None;
            fragments::for_each_fragment(&source.path, |f| {
                if f.chrom != last_chrom {
                    last_chrom = f.chrom.to_string();
                    let name = opts.rename.apply(f.chrom).into_owned();
                    last = index.get(name.as_str()).copied();
                    seen.insert(name);
                }
                let Some(ci) = last else { return Ok(()) };
                let c = &set.chroms[ci];
                if f.end > c.length {
                    return Err(past_the_end(&source.path, f.line, &c.name, f.end, c.length));
                }
                let off = offsets[ci];
                match opts.fragment_mode {
                    FragmentMode::Insertions => {
                        for pos in [f.start, f.end - 1] {
                            if let Some(k) = region_containing(&c.regions, pos) {
                                out[off + k] += 1.0;
                            }
                        }
                    }
                    FragmentMode::Fragments => {
                        let first = c.regions.partition_point(|r| r.1 <= f.start);
                        for k in first..c.regions.len() {
                            if c.regions[k].0 >= f.end {
                                break;
                            }
                            out[off + k] += 1.0;
                        }
                    }
                }
                Ok(())
            })?;
            check_names(&source.path, &seen, set, opts.rename)?;
        }
        SourceKind::Bam => {
            let names: HashSet<String> = bam::reference_names(&source.path)?
                .iter()
                .map(|n| opts.rename.apply(n).into_owned())
                .collect();
            check_names(&source.path, &names, set, opts.rename)?;
            let index: HashMap<String, usize> = set
                .chroms
                .iter()
                .enumerate()
                .map(|(i, c)| (c.name.clone(), i))
                .collect();
            bam::for_each_cut_site(&source.path, opts.bam, |chrom, pos| {
                let Some(&ci) = index.get(opts.rename.apply(chrom).as_ref()) else {
                    return;
                };
                let c = &set.chroms[ci];
                if let Some(k) = region_containing(&c.regions, pos) {
                    out[offsets[ci] + k] += 1.0;
                }
            })?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(start: u64, end: u64, value: f32) -> CoverageInterval {
        CoverageInterval { start, end, value }
    }

    #[test]
    fn coverage_sum_is_value_times_overlap() {
        let ivs = [iv(0, 10, 1.0), iv(10, 20, 3.0), iv(30, 40, 2.0)];
        let mut out = [0.0; 3];
        sum_coverage(&ivs, &[(5, 15), (15, 35), (50, 60)], &mut out);
        assert_eq!(out, [5.0 + 15.0, 15.0 + 10.0, 0.0]);
    }

    #[test]
    fn normalisations_match_hand_values() {
        let raw = [1.0, 3.0, 0.0];
        // total 4: CPM = 250000, 750000, 0
        let l = Normalisation::LogCpm.apply(&raw);
        assert!((l[0] as f64 - 250001f64.log2()).abs() < 1e-4);
        assert!((l[1] as f64 - 750001f64.log2()).abs() < 1e-4);
        assert_eq!(l[2], 0.0);
        let g = Normalisation::GetLog10Cpm.apply(&raw);
        assert!((g[0] as f64 - 250001f64.log10() / 750001f64.log10()).abs() < 1e-6);
        assert_eq!(g[1], 1.0);
        assert_eq!(Normalisation::Raw.apply(&raw), vec![1.0, 3.0, 0.0]);
    }

    #[test]
    fn region_lookup() {
        let r = [(10, 20), (30, 40)];
        assert_eq!(region_containing(&r, 10), Some(0));
        assert_eq!(region_containing(&r, 19), Some(0));
        assert_eq!(region_containing(&r, 20), None);
        assert_eq!(region_containing(&r, 35), Some(1));
        assert_eq!(region_containing(&r, 5), None);
    }

    #[test]
    fn peak_calling_thresholds_merges_and_drops_short() {
        // length 1000, total signal 10*100 + 10*20 + 1*100 = 1300: mean 1.3, threshold 2.6 at fold 2
        let ivs = [
            iv(100, 200, 10.0),
            iv(210, 230, 10.0),
            iv(500, 600, 1.0),
            iv(800, 810, 10.0),
        ];
        assert_eq!(call_peaks(&ivs, 1000, 2.0, 20, 50), vec![(100, 230)]);
    }

    #[test]
    fn kind_is_guessed_or_explicit() {
        let a = AccessibilitySource::parse("K562=acc.K562.bw").unwrap();
        assert_eq!(a.kind, SourceKind::BigWig);
        let b = AccessibilitySource::parse("GM=counts:x.tsv").unwrap();
        assert_eq!(
            (b.kind, b.path.to_str().unwrap()),
            (SourceKind::Counts, "x.tsv")
        );
        assert!(AccessibilitySource::parse("K562=x.txt").is_err());
        assert_eq!(
            AccessibilitySource::parse("c=atac_fragments.tsv.gz")
                .unwrap()
                .kind,
            SourceKind::Fragments
        );
    }
}
