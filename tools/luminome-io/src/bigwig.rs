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
        self.intervals_checked(chrom, true)
    }

    /// The same for any signal (negative values allowed; NaN and infinities still refused).
    pub fn signal(&mut self, chrom: &str) -> Result<Vec<CoverageInterval>, InputError> {
        self.intervals_checked(chrom, false)
    }

    fn intervals_checked(
        &mut self,
        chrom: &str,
        coverage: bool,
    ) -> Result<Vec<CoverageInterval>, InputError> {
        let path = self.path.clone();
        crate::panics::guard(&path, &format!("reading {chrom}"), || {
            self.read_intervals(chrom, coverage)
        })
    }

    fn read_intervals(
        &mut self,
        chrom: &str,
        coverage: bool,
    ) -> Result<Vec<CoverageInterval>, InputError> {
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
            if !(v.value.is_finite() && (v.value >= 0.0 || !coverage)) || v.end < v.start {
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

/// Chromosome names and lengths for a bigWig header: the first two columns of a `.fai` or a
/// UCSC `chrom.sizes` file.
#[derive(Debug, Clone, Default)]
pub struct ChromSizes {
    pub sizes: Vec<(String, u64)>,
    pub source: PathBuf,
}

impl ChromSizes {
    pub fn read(path: &Path) -> Result<Self, InputError> {
        use std::io::BufRead;
        let (reader, _) = crate::compress::open(path, 1)?;
        let mut sizes = Vec::new();
        for (i, line) in reader.lines().enumerate() {
            let n = i as u64 + 1;
            let line = line
                .map_err(|e| crate::error::read_error(path, crate::error::Location::Line(n), e))?;
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let mut f = line.split('\t');
            let (Some(name), Some(len)) = (f.next(), f.next()) else {
                return Err(InputError::line(
                    path,
                    n,
                    "expected name<TAB>length (a .fai or chrom.sizes file)",
                ));
            };
            let len: u64 = len.trim().parse().ok().filter(|&l| l > 0 && l <= u32::MAX as u64).ok_or_else(|| {
                InputError::line(path, n, format!("length {len:?} is not a chromosome length (1 to 2^32-1, what a bigWig holds)"))
            })?;
            sizes.push((name.to_string(), len));
        }
        if sizes.is_empty() {
            return Err(InputError::file(path, "no chromosome sizes"));
        }
        Ok(Self {
            sizes,
            source: path.to_path_buf(),
        })
    }

    /// The sizes of a reference's sequences (`source` names it in messages).
    pub fn from_sequences(sequences: &[(String, u64)], source: &Path) -> Self {
        Self {
            sizes: sequences.to_vec(),
            source: source.to_path_buf(),
        }
    }

    pub fn length(&self, chrom: &str) -> Option<u64> {
        self.sizes.iter().find(|(c, _)| c == chrom).map(|(_, l)| *l)
    }
}

/// Refuses an interval the chromosome sizes do not hold (a bigWig cannot store it). Writers
/// call it as intervals arrive, so a run fails before any of its outputs is committed.
pub fn check_interval(
    dest: &Path,
    sizes: &ChromSizes,
    c: &str,
    s: u64,
    e: u64,
) -> anyhow::Result<()> {
    match sizes.length(c) {
        None => anyhow::bail!(
            "{}: the track has intervals on {c:?}, which {} does not list; give the sizes of the reference the data came from (--chrom-sizes)",
            dest.display(),
            sizes.source.display()
        ),
        Some(len) if e > len || s >= e => anyhow::bail!(
            "{}: interval {c}:{s}-{e} lies outside {c} (length {len} in {})",
            dest.display(),
            sizes.source.display()
        ),
        _ => Ok(()),
    }
}

/// Writes `intervals` (chrom, start, end, value; sorted and non-overlapping within each
/// chromosome, each chromosome in one run) as a bigWig at `dest`, atomically. Every chromosome
/// must be in `sizes` and every interval inside it.
pub fn write_bigwig(
    dest: &Path,
    sizes: &ChromSizes,
    intervals: Vec<(String, u64, u64, f32)>,
) -> anyhow::Result<crate::atomic::AtomicFile> {
    use anyhow::Context;
    for (c, s, e, _) in &intervals {
        check_interval(dest, sizes, c, *s, *e)?;
    }
    let mut out = crate::atomic::AtomicFile::create(dest)?;
    let file = out
        .file()
        .try_clone()
        .with_context(|| format!("cannot write {}", dest.display()))?;
    let chrom_map: std::collections::HashMap<String, u32> = sizes
        .sizes
        .iter()
        .map(|(c, l)| (c.clone(), *l as u32))
        .collect();
    let values = intervals.into_iter().map(|(c, s, e, v)| {
        (
            c,
            bigtools::Value {
                start: s as u32,
                end: e as u32,
                value: v,
            },
        )
    });
    let data = bigtools::beddata::BedParserStreamingIterator::wrap_infallible_iter(values, true);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .context("cannot start the bigWig writer")?;
    bigtools::BigWigWrite::new(file, chrom_map)
        .write(data, runtime)
        .map_err(|e| anyhow::anyhow!("cannot write the bigWig {}: {e}", dest.display()))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_bigwig_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let fai = dir.path().join("r.fa.fai");
        std::fs::write(&fai, "c1\t1000\t5\t60\t61\nc2\t500\t1030\t60\t61\n").unwrap();
        let sizes = ChromSizes::read(&fai).unwrap();
        let dest = dir.path().join("t.bw");
        let iv = vec![
            ("c1".to_string(), 10, 20, 1.5f32),
            ("c1".to_string(), 20, 30, 2.0),
            ("c2".to_string(), 0, 5, -1.0),
        ];
        write_bigwig(&dest, &sizes, iv).unwrap().commit().unwrap();
        let mut t = BigWigTrack::open(&dest).unwrap();
        assert_eq!(t.chroms().len(), 2);
        let got: Vec<(u64, u64, f32)> = t
            .signal("c1")
            .unwrap()
            .iter()
            .map(|v| (v.start, v.end, v.value))
            .collect();
        assert_eq!(got, vec![(10, 20, 1.5), (20, 30, 2.0)]);
        assert_eq!(t.signal("c2").unwrap()[0].value, -1.0);
        assert!(t.intervals("c2").is_err(), "a negative coverage is refused");
        let e = write_bigwig(
            &dir.path().join("x.bw"),
            &sizes,
            vec![("c3".into(), 0, 1, 1.0)],
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("\"c3\"") && e.contains("r.fa.fai"), "{e}");
        assert!(!dir.path().join("x.bw").exists());
    }
}
