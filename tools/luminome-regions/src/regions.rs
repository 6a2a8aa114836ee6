//! The region set: peaks read from BED/narrowPeak files (one set, or the union of several cell
//! types' sets), checked against the reference, filtered by width and merged.
//!
//! Regions are 0-based half-open and kept per chromosome in reference order, sorted by start and
//! non-overlapping after merging, so a region has one global index (`RegionSet::offset(chrom) + i`).

use std::path::{Path, PathBuf};

use anyhow::Result;
use luminome_io::bed;
use luminome_io::InputError;

/// Chromosomes in reference order, each with sorted, non-overlapping `[start, end)` regions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegionSet {
    pub chroms: Vec<ChromRegions>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChromRegions {
    pub name: String,
    pub length: u64,
    pub regions: Vec<(u64, u64)>,
}

impl RegionSet {
    /// Empty lists for every reference sequence.
    pub fn for_reference(sequences: &[(String, u64)]) -> Self {
        Self {
            chroms: sequences
                .iter()
                .map(|(n, l)| ChromRegions {
                    name: n.clone(),
                    length: *l,
                    regions: Vec::new(),
                })
                .collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.chroms.iter().map(|c| c.regions.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn chrom_index(&self, name: &str) -> Option<usize> {
        self.chroms.iter().position(|c| c.name == name)
    }

    /// Global index of the first region of chromosome `c`.
    pub fn offset(&self, c: usize) -> usize {
        self.chroms[..c].iter().map(|c| c.regions.len()).sum()
    }

    /// Sort and merge the regions of each chromosome: overlapping regions, and regions whose gap
    /// is at most `max_gap` bp, become one.
    pub fn merge(&mut self, max_gap: u64) {
        for c in &mut self.chroms {
            c.regions.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::with_capacity(c.regions.len());
            for &(s, e) in &c.regions {
                match merged.last_mut() {
                    Some(last) if s <= last.1.saturating_add(max_gap) => last.1 = last.1.max(e),
                    _ => merged.push((s, e)),
                }
            }
            c.regions = merged;
        }
    }
}

/// What reading the peak files did, for the log.
#[derive(Debug, Clone, Default)]
pub struct PeakReport {
    pub read: u64,
    /// (file, line, chrom, start, end) of every region wider than the limit.
    pub too_wide: Vec<(PathBuf, u64, String, u64, u64)>,
}

/// The other spelling of a chromosome name (`chr22` <-> `22`), for hints.
pub fn toggled_chr(name: &str) -> String {
    match name.strip_prefix("chr") {
        Some(rest) => rest.to_string(),
        None => format!("chr{name}"),
    }
}

/// Add the peaks of `path` to `set`. Every peak must lie on a reference sequence and inside it;
/// peaks wider than `max_width` are reported and left out.
pub fn add_peaks(
    set: &mut RegionSet,
    path: &Path,
    max_width: u64,
    report: &mut PeakReport,
) -> Result<()> {
    for rec in bed::open(path)? {
        let rec = rec?;
        let Some(ci) = set.chrom_index(&rec.chrom) else {
            let other = toggled_chr(&rec.chrom);
            let hint = if set.chrom_index(&other).is_some() {
                format!(" (the reference calls it {other:?}: the files use different chromosome naming; rename one of them)")
            } else {
                String::new()
            };
            return Err(InputError::line(
                path,
                rec.line,
                format!(
                    "peak on {:?}, which is not a sequence of the reference FASTA{hint}",
                    rec.chrom
                ),
            )
            .into());
        };
        let c = &mut set.chroms[ci];
        if rec.end > c.length {
            return Err(InputError::line(
                path,
                rec.line,
                format!(
                    "peak {}:{}-{} ends past the end of {} (length {})",
                    rec.chrom, rec.start, rec.end, c.name, c.length
                ),
            )
            .into());
        }
        report.read += 1;
        if rec.end - rec.start > max_width {
            report.too_wide.push((
                path.to_path_buf(),
                rec.line,
                rec.chrom.clone(),
                rec.start,
                rec.end,
            ));
            continue;
        }
        c.regions.push((rec.start, rec.end));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_joins_overlaps_and_small_gaps() {
        let mut s = RegionSet::for_reference(&[("c".into(), 1000)]);
        s.chroms[0].regions = vec![(50, 60), (0, 10), (5, 20), (22, 30)];
        let mut a = s.clone();
        a.merge(0);
        assert_eq!(a.chroms[0].regions, vec![(0, 20), (22, 30), (50, 60)]);
        s.merge(2);
        assert_eq!(s.chroms[0].regions, vec![(0, 30), (50, 60)]);
    }

    #[test]
    fn offsets_follow_reference_order() {
        let mut s = RegionSet::for_reference(&[("a".into(), 100), ("b".into(), 100)]);
        s.chroms[0].regions = vec![(0, 10), (20, 30)];
        s.chroms[1].regions = vec![(0, 10)];
        assert_eq!((s.offset(0), s.offset(1), s.len()), (0, 2, 3));
    }

    #[test]
    fn wide_peaks_are_reported_and_dropped_unknown_contigs_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.bed");
        std::fs::write(&p, "chr22\t0\t10709810\tartefact\nchr22\t100\t300\tok\n").unwrap();
        let mut s = RegionSet::for_reference(&[("chr22".into(), 50_000_000)]);
        let mut r = PeakReport::default();
        add_peaks(&mut s, &p, 10_000, &mut r).unwrap();
        assert_eq!(s.chroms[0].regions, vec![(100, 300)]);
        assert_eq!(r.too_wide.len(), 1);
        assert_eq!(r.too_wide[0].1, 1);

        std::fs::write(&p, "chr22\t100\t300\n22\t1\t5\n").unwrap();
        let err = add_peaks(&mut s, &p, 10_000, &mut r)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2") && err.contains("\"chr22\""), "{err}");
    }
}
