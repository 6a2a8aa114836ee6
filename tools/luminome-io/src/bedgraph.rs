//! bedGraph output: `chrom  start  end  value`, 0-based half-open, one interval per line.
//!
//! The writer takes base-level values in genome order and merges runs of adjacent bases with
//! the same value into one line, so the file stays small and is valid input for
//! `bedGraphToBigWig` (sorted, non-overlapping). Written atomically (see [`crate::atomic`]).

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Result};

use crate::atomic::AtomicWriter;

pub struct BedGraphWriter {
    out: AtomicWriter,
    /// The interval being extended: chrom, start, end, value.
    pending: Option<(String, u64, u64, f32)>,
    /// Chromosomes already left behind: coming back to one would break the sort order.
    finished_chroms: std::collections::HashSet<String>,
}

impl BedGraphWriter {
    /// Creates the file; `track_line` (e.g. `track type=bedGraph name="x"`) goes first if given.
    pub fn create(dest: impl AsRef<Path>, track_line: Option<&str>) -> Result<Self> {
        let mut out = AtomicWriter::create(dest)?;
        if let Some(t) = track_line {
            writeln!(out, "{t}")?;
        }
        Ok(Self {
            out,
            pending: None,
            finished_chroms: Default::default(),
        })
    }

    /// Adds `value` over `[start, end)` of `chrom`. Intervals must come sorted within a
    /// chromosome, not overlapping, and each chromosome in one run (any chromosome order).
    pub fn push(&mut self, chrom: &str, start: u64, end: u64, value: f32) -> Result<()> {
        if start >= end {
            bail!("internal: empty bedGraph interval {chrom}:{start}-{end}");
        }
        if let Some((c, _, e, v)) = &mut self.pending {
            if c == chrom {
                if start < *e {
                    bail!("internal: bedGraph intervals out of order or overlapping at {chrom}:{start} (previous ended at {e})");
                }
                if start == *e && *v == value {
                    *e = end;
                    return Ok(());
                }
            }
        }
        self.flush_pending(chrom)?;
        self.pending = Some((chrom.to_string(), start, end, value));
        Ok(())
    }

    fn flush_pending(&mut self, next_chrom: &str) -> Result<()> {
        if let Some((c, s, e, v)) = self.pending.take() {
            writeln!(self.out, "{c}\t{s}\t{e}\t{v}")?;
            if c != next_chrom {
                self.finished_chroms.insert(c);
            }
        }
        if self.finished_chroms.contains(next_chrom) {
            bail!("internal: bedGraph chromosome {next_chrom} came back after another one");
        }
        Ok(())
    }

    /// Writes the last interval and moves the file to its final name.
    pub fn commit(mut self) -> Result<()> {
        if let Some((c, s, e, v)) = self.pending.take() {
            writeln!(self.out, "{c}\t{s}\t{e}\t{v}")?;
        }
        self.out.commit()
    }
}

impl crate::atomic::Commit for BedGraphWriter {
    fn commit_boxed(self: Box<Self>) -> Result<()> {
        (*self).commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_equal_values_merge_and_gaps_or_changes_start_new_lines() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("x.bedgraph");
        let mut w = BedGraphWriter::create(&dest, Some("track type=bedGraph")).unwrap();
        w.push("chr1", 10, 11, 0.5).unwrap();
        w.push("chr1", 11, 12, 0.5).unwrap(); // merges with the previous base
        w.push("chr1", 12, 13, 0.25).unwrap(); // new value
        w.push("chr1", 20, 21, 0.25).unwrap(); // gap: new line even with the same value
        w.push("chr2", 0, 1, 1.0).unwrap();
        w.commit().unwrap();
        let text = std::fs::read_to_string(&dest).unwrap();
        assert_eq!(
            text,
            "track type=bedGraph\nchr1\t10\t12\t0.5\nchr1\t12\t13\t0.25\nchr1\t20\t21\t0.25\nchr2\t0\t1\t1\n"
        );
    }

    #[test]
    fn overlapping_or_unsorted_intervals_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = BedGraphWriter::create(dir.path().join("x.bedgraph"), None).unwrap();
        w.push("chr1", 10, 20, 0.5).unwrap();
        assert!(w.push("chr1", 15, 25, 0.5).is_err());
        let mut w = BedGraphWriter::create(dir.path().join("y.bedgraph"), None).unwrap();
        w.push("chr1", 10, 20, 0.5).unwrap();
        w.push("chr2", 10, 20, 0.5).unwrap();
        assert!(w.push("chr1", 30, 40, 0.5).is_err());
    }
}
