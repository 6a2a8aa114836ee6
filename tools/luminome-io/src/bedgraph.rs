//! bedGraph output: `chrom  start  end  value`, 0-based half-open, one interval per line.
//!
//! The writer takes base-level values in genome order and merges runs of adjacent bases with
//! the same value into one line, so the file stays small and is valid input for
//! `bedGraphToBigWig` (sorted, non-overlapping). Written atomically (see [`crate::atomic`]).
//!
//! [`BedGraphWriter::create_track`] writes a bigWig instead when the destination ends in `.bw`
//! or `.bigwig` (bigtools' writer; the chromosome sizes come from a `.fai` or `chrom.sizes`
//! file), so genome browsers load one indexed file.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::atomic::AtomicWriter;
use crate::bigwig::ChromSizes;

pub struct BedGraphWriter {
    out: Sink,
    /// The interval being extended: chrom, start, end, value.
    pending: Option<(String, u64, u64, f32)>,
    /// Chromosomes already left behind: coming back to one would break the sort order.
    finished_chroms: std::collections::HashSet<String>,
}

/// Where the merged intervals go.
enum Sink {
    Text(AtomicWriter),
    /// Collected, then written as a bigWig on commit.
    BigWig {
        dest: PathBuf,
        sizes: ChromSizes,
        intervals: Vec<(String, u64, u64, f32)>,
    },
}

/// Whether a track destination is a bigWig (by its name).
pub fn is_bigwig(dest: &Path) -> bool {
    let name = dest.to_string_lossy().to_ascii_lowercase();
    name.ends_with(".bw") || name.ends_with(".bigwig")
}

impl BedGraphWriter {
    /// Creates the file; `track_line` (e.g. `track type=bedGraph name="x"`) goes first if given.
    pub fn create(dest: impl AsRef<Path>, track_line: Option<&str>) -> Result<Self> {
        let mut out = AtomicWriter::create(dest)?;
        if let Some(t) = track_line {
            writeln!(out, "{t}")?;
        }
        Ok(Self {
            out: Sink::Text(out),
            pending: None,
            finished_chroms: Default::default(),
        })
    }

    /// A bedGraph, or a bigWig when `dest` ends in `.bw`/`.bigwig` (then the chromosome sizes
    /// are required).
    pub fn create_track(
        dest: impl AsRef<Path>,
        track_line: Option<&str>,
        chrom_sizes: Option<ChromSizes>,
    ) -> Result<Self> {
        let dest = dest.as_ref();
        if !is_bigwig(dest) {
            return Self::create(dest, track_line);
        }
        let Some(sizes) = chrom_sizes else {
            bail!(
                "{}: a bigWig needs the chromosome sizes: give --chrom-sizes (the reference's .fai or a chrom.sizes file)",
                dest.display()
            );
        };
        crate::atomic::check_output_dir(dest)?;
        Ok(Self {
            out: Sink::BigWig {
                dest: dest.to_path_buf(),
                sizes,
                intervals: Vec::new(),
            },
            pending: None,
            finished_chroms: Default::default(),
        })
    }

    fn emit(&mut self, c: String, s: u64, e: u64, v: f32) -> Result<()> {
        match &mut self.out {
            Sink::Text(out) => writeln!(out, "{c}\t{s}\t{e}\t{v}")?,
            Sink::BigWig { intervals, .. } => intervals.push((c, s, e, v)),
        }
        Ok(())
    }

    /// Adds `value` over `[start, end)` of `chrom`. Intervals must come sorted within a
    /// chromosome, not overlapping, and each chromosome in one run (any chromosome order).
    pub fn push(&mut self, chrom: &str, start: u64, end: u64, value: f32) -> Result<()> {
        if start >= end {
            bail!("internal: empty bedGraph interval {chrom}:{start}-{end}");
        }
        if let Sink::BigWig { dest, sizes, .. } = &self.out {
            crate::bigwig::check_interval(dest, sizes, chrom, start, end)?;
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
            if c != next_chrom {
                self.finished_chroms.insert(c.clone());
            }
            self.emit(c, s, e, v)?;
        }
        if self.finished_chroms.contains(next_chrom) {
            bail!("internal: bedGraph chromosome {next_chrom} came back after another one");
        }
        Ok(())
    }

    /// Writes the last interval and moves the file to its final name.
    pub fn commit(mut self) -> Result<()> {
        if let Some((c, s, e, v)) = self.pending.take() {
            self.emit(c, s, e, v)?;
        }
        match self.out {
            Sink::Text(out) => out.commit(),
            Sink::BigWig {
                dest,
                sizes,
                intervals,
            } => crate::bigwig::write_bigwig(&dest, &sizes, intervals)?.commit(),
        }
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
