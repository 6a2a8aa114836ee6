//! Pairs from sequences: each FASTA record cut into windows with its complementary strand as B,
//! or paired records (two files, or NAME/1 NAME/2 records of one file) cut in lockstep.
//!
//! Windows start at 0, stride, 2·stride, … while they fit; a tail the last full window does not
//! cover gets one more window, padded (attention 0), as does a record shorter than a window.
//! Single-record input streams line by line, so memory is bounded by a window, not a chromosome.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use luminome_io::fastx::{self, RecordHeader};
use luminome_io::pair_dataset::PairIndexRow;
use luminome_io::token_dataset::Interval;
use luminome_io::InputError;

use crate::encode::{BaseVocab, PairSink};

/// Window geometry and the N filter.
#[derive(Debug, Clone, Copy)]
pub struct WindowSpec {
    pub window: usize,
    pub stride: usize,
    pub max_n_fraction: f64,
}

/// Start offsets of the windows of a sequence of `len` bases.
pub fn window_starts(len: usize, spec: &WindowSpec) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut s = 0;
    while s + spec.window <= len {
        starts.push(s);
        s += spec.stride;
    }
    let covered = starts.last().map_or(0, |&l| l + spec.window);
    if covered < len && s < len {
        starts.push(s);
    }
    starts
}

/// Counts kept in the dataset metadata.
pub type Counts = BTreeMap<String, u64>;

fn bump(counts: &mut Counts, key: &str) {
    *counts.entry(key.to_string()).or_default() += 1;
}

/// Token ids of `bases` padded to `window`.
fn ids_of(vocab: &BaseVocab, bases: &[u8], window: usize) -> Vec<u32> {
    let mut ids: Vec<u32> = bases.iter().map(|&b| vocab.id(b)).collect();
    ids.resize(window, vocab.pad);
    ids
}

fn too_many_n(vocab: &BaseVocab, ids: &[u32], real: usize, spec: &WindowSpec) -> bool {
    let n = ids[..real].iter().filter(|&&i| i == vocab.n).count();
    n as f64 > spec.max_n_fraction * real as f64
}

/// Writes one window pair; `b` is `None` for the complement of `a`.
fn emit(
    sink: &mut PairSink,
    name: &str,
    start: usize,
    a_bases: &[u8],
    b_bases: Option<&[u8]>,
    spec: &WindowSpec,
    counts: &mut Counts,
) -> Result<()> {
    let a = ids_of(&sink.vocab, a_bases, spec.window);
    if too_many_n(&sink.vocab, &a, a_bases.len(), spec) {
        bump(counts, "windows_over_max_n");
        return Ok(());
    }
    let b = match b_bases {
        Some(b) => ids_of(&sink.vocab, b, spec.window),
        None => a.iter().map(|&i| sink.vocab.complement(i)).collect(),
    };
    if a_bases.len() < spec.window {
        bump(counts, "padded_windows");
    }
    let index = PairIndexRow {
        record: 0,
        name: name.to_string(),
        window: Some(Interval {
            chrom: name.to_string(),
            start: start as u64,
            end: (start + a_bases.len()) as u64,
        }),
        site: None,
        variant: None,
        info: Vec::new(),
    };
    if !sink.push(a, b, None, index)? {
        bump(counts, "windows_without_maskable_position");
    }
    Ok(())
}

/// Every record of a FASTA/FASTQ file, streamed in windows; B is the complement.
pub fn complement_windows(
    path: &Path,
    threads: usize,
    spec: &WindowSpec,
    sink: &mut PairSink,
    counts: &mut Counts,
) -> Result<()> {
    let mut reader = fastx::open(path, threads)?;
    let mut line = Vec::new();
    // Bases from `offset` on; windows start at `next`.
    let mut buf: Vec<u8> = Vec::new();
    while let Some(h) = reader.next_header()? {
        bump(counts, "records");
        buf.clear();
        let (mut offset, mut next, mut len) = (0usize, 0usize, 0usize);
        loop {
            line.clear();
            let more = reader.read_sequence_line(&mut line)?;
            len += line.len();
            buf.extend_from_slice(&line);
            while next + spec.window <= offset + buf.len() {
                let at = next - offset;
                emit(
                    sink,
                    &h.name,
                    next,
                    &buf[at..at + spec.window],
                    None,
                    spec,
                    counts,
                )?;
                next += spec.stride;
                if next - offset > buf.len() / 2 && next > offset {
                    let drop = (next - offset).min(buf.len());
                    buf.drain(..drop);
                    offset += drop;
                }
            }
            if !more {
                break;
            }
        }
        if len == 0 {
            return Err(InputError::record(path, h.number, Some(&h.name), "empty sequence").into());
        }
        // The tail: bases past the last full window (or a record shorter than a window).
        let covered = if next == 0 {
            0
        } else {
            next - spec.stride + spec.window
        };
        if covered < len && next < len {
            let at = next - offset;
            emit(sink, &h.name, next, &buf[at..], None, spec, counts)?;
        }
    }
    Ok(())
}

/// A record read whole.
struct Record {
    header: RecordHeader,
    seq: Vec<u8>,
}

fn read_record(
    reader: &mut fastx::FastxReader<Box<dyn std::io::BufRead + Send>>,
) -> Result<Option<Record>> {
    let Some(header) = reader.next_header()? else {
        return Ok(None);
    };
    let mut seq = Vec::new();
    reader.read_sequence(&mut seq)?;
    Ok(Some(Record { header, seq }))
}

/// The pair name of `NAME/1`, `NAME/a` (strand A) or `NAME/2`, `NAME/b` (strand B).
fn pair_name(name: &str, strand_b: bool) -> Option<&str> {
    let suffixes: &[&str] = if strand_b {
        &["/2", "/b", "/B"]
    } else {
        &["/1", "/a", "/A"]
    };
    suffixes.iter().find_map(|s| name.strip_suffix(s))
}

/// Checks a pair of records and writes their windows in lockstep.
fn emit_pair(
    a: &Record,
    b: &Record,
    (path_a, path_b): (&Path, &Path),
    name: &str,
    spec: &WindowSpec,
    sink: &mut PairSink,
    counts: &mut Counts,
) -> Result<()> {
    if a.seq.len() != b.seq.len() {
        return Err(InputError::record(
            path_b,
            b.header.number,
            Some(&b.header.name),
            format!(
                "{} bases, but its partner {} (record {} of {}) has {}; paired records must have the same length (index i of both strands is one position)",
                b.seq.len(),
                a.header.name,
                a.header.number,
                path_a.display(),
                a.seq.len()
            ),
        )
        .into());
    }
    if a.seq.is_empty() {
        return Err(InputError::record(
            path_a,
            a.header.number,
            Some(&a.header.name),
            "empty sequence",
        )
        .into());
    }
    bump(counts, "records");
    for start in window_starts(a.seq.len(), spec) {
        let end = (start + spec.window).min(a.seq.len());
        emit(
            sink,
            name,
            start,
            &a.seq[start..end],
            Some(&b.seq[start..end]),
            spec,
            counts,
        )?;
    }
    Ok(())
}

/// Two FASTA files whose records pair up in order, with equal names and lengths.
pub fn paired_files(
    path_a: &Path,
    path_b: &Path,
    threads: usize,
    spec: &WindowSpec,
    sink: &mut PairSink,
    counts: &mut Counts,
) -> Result<()> {
    let mut ra = fastx::open(path_a, threads)?;
    let mut rb = fastx::open(path_b, threads)?;
    loop {
        match (read_record(&mut ra)?, read_record(&mut rb)?) {
            (None, None) => return Ok(()),
            (Some(a), None) => {
                return Err(InputError::record(
                    path_a,
                    a.header.number,
                    Some(&a.header.name),
                    format!("has no partner: {} ends first", path_b.display()),
                )
                .into())
            }
            (None, Some(b)) => {
                return Err(InputError::record(
                    path_b,
                    b.header.number,
                    Some(&b.header.name),
                    format!("has no partner: {} ends first", path_a.display()),
                )
                .into())
            }
            (Some(a), Some(b)) => {
                if a.header.name != b.header.name {
                    return Err(InputError::record(
                        path_b,
                        b.header.number,
                        Some(&b.header.name),
                        format!(
                            "is paired with {} (record {} of {}) but the names differ; records must pair up in order",
                            a.header.name,
                            a.header.number,
                            path_a.display()
                        ),
                    )
                    .into());
                }
                let name = a.header.name.clone();
                emit_pair(&a, &b, (path_a, path_b), &name, spec, sink, counts)?;
            }
        }
    }
}

/// One FASTA whose consecutive records are NAME/1 and NAME/2 (or /a and /b).
pub fn paired_records(
    path: &Path,
    threads: usize,
    spec: &WindowSpec,
    sink: &mut PairSink,
    counts: &mut Counts,
) -> Result<()> {
    let mut r = fastx::open(path, threads)?;
    while let Some(a) = read_record(&mut r)? {
        let Some(name) = pair_name(&a.header.name, false).map(str::to_string) else {
            return Err(InputError::record(
                path,
                a.header.number,
                Some(&a.header.name),
                "expected the A record of a pair, named NAME/1 or NAME/a",
            )
            .into());
        };
        let Some(b) = read_record(&mut r)? else {
            return Err(InputError::record(
                path,
                a.header.number,
                Some(&a.header.name),
                "has no partner: the file ends",
            )
            .into());
        };
        if pair_name(&b.header.name, true) != Some(name.as_str()) {
            return Err(InputError::record(
                path,
                b.header.number,
                Some(&b.header.name),
                format!(
                    "expected {name}/2 or {name}/b, the partner of {}",
                    a.header.name
                ),
            )
            .into());
        }
        emit_pair(&a, &b, (path, path), &name, spec, sink, counts)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_the_sequence_with_one_padded_tail() {
        let spec = |window, stride| WindowSpec {
            window,
            stride,
            max_n_fraction: 0.5,
        };
        assert_eq!(window_starts(10, &spec(4, 4)), [0, 4, 8]);
        assert_eq!(window_starts(8, &spec(4, 4)), [0, 4]);
        assert_eq!(window_starts(10, &spec(4, 2)), [0, 2, 4, 6]);
        assert_eq!(window_starts(11, &spec(4, 2)), [0, 2, 4, 6, 8]);
        assert_eq!(window_starts(3, &spec(4, 4)), [0]);
        // Gaps between windows (stride > window): no tail past the end.
        assert_eq!(window_starts(11, &spec(4, 6)), [0, 6]);
        assert_eq!(window_starts(13, &spec(4, 6)), [0, 6, 12]);
    }

    #[test]
    fn pair_names_take_the_usual_suffixes() {
        assert_eq!(pair_name("r7/1", false), Some("r7"));
        assert_eq!(pair_name("r7/b", true), Some("r7"));
        assert_eq!(pair_name("r7", false), None);
    }
}
