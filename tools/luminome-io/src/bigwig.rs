//! bigWig coverage tracks (bigtools): chromosome list and the intervals of one chromosome.

use std::path::{Path, PathBuf};

use bigtools::utils::reopen::ReopenableFile;
use bigtools::BigWigRead;

use crate::error::InputError;

/// One stretch of constant signal: 0-based half-open `[start, end)` with `value` per base.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoverageInterval {
    pub start: u64,
    pub end: u64,
    pub value: f32,
}

pub struct BigWigTrack {
    path: PathBuf,
    reader: BigWigRead<ReopenableFile>,
}

impl BigWigTrack {
    pub fn open(path: &Path) -> Result<Self, InputError> {
        let reader = crate::panics::guard(path, "opening as bigWig", || {
            BigWigRead::open_file(path)
                .map_err(|e| InputError::file(path, format!("cannot open as bigWig: {e}")))
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            reader,
        })
    }

    /// Chromosome names and lengths from the header.
    pub fn chroms(&self) -> Vec<(String, u64)> {
        self.reader
            .chroms()
            .iter()
            .map(|c| (c.name.clone(), c.length as u64))
            .collect()
    }

    /// Every interval with data on `chrom` (empty if the chromosome is absent), sorted by start.
    /// A value that is not a finite number ≥ 0 is refused (coverage cannot be NaN or negative).
    pub fn intervals(&mut self, chrom: &str) -> Result<Vec<CoverageInterval>, InputError> {
        let path = self.path.clone();
        crate::panics::guard(&path, &format!("reading {chrom}"), || {
            self.read_intervals(chrom)
        })
    }

    fn read_intervals(&mut self, chrom: &str) -> Result<Vec<CoverageInterval>, InputError> {
        let Some(len) = self
            .reader
            .chroms()
            .iter()
            .find(|c| c.name == chrom)
            .map(|c| c.length)
        else {
            return Ok(Vec::new());
        };
        let iter = self
            .reader
            .get_interval(chrom, 0, len)
            .map_err(|e| InputError::file(&self.path, format!("cannot read {chrom}: {e}")))?;
        let mut out = Vec::new();
        for v in iter {
            let v = v.map_err(|e| {
                InputError::file(&self.path, format!("corrupt data on {chrom}: {e}"))
            })?;
            if !(v.value.is_finite() && v.value >= 0.0) || v.end < v.start {
                return Err(InputError::file(
                    &self.path,
                    format!(
                        "{chrom}:{}-{}: value {} is not a coverage (a finite number ≥ 0 on a non-empty interval)",
                        v.start, v.end, v.value
                    ),
                ));
            }
            out.push(CoverageInterval {
                start: v.start as u64,
                end: v.end as u64,
                value: v.value,
            });
        }
        out.sort_by_key(|i| i.start);
        Ok(out)
    }
}
