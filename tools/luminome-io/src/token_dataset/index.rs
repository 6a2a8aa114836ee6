//! The record index (`<stem>.index.tsv` beside a token dataset, one line per row) and the file
//! names of a dataset, its index and its shards.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// One line of the record index TSV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexRow {
    /// 0-based record (row) number across the whole dataset.
    pub record: u64,
    pub shard: usize,
    /// Source record name (FASTA id, table row name, BED name).
    pub name: String,
    /// `chr:start-end(strand)` of the bases this row covers, 0-based half-open; `.` when unknown.
    pub coords: String,
    /// Length in bases of the source sequence the row was cut from.
    pub seq_length: u64,
    /// Offset in bases of this row's window within the source sequence (forward strand).
    pub window_offset: u64,
    /// Bases in this row's window.
    pub window_length: u64,
    /// `+` for the sequence as given, `-` for its reverse complement.
    pub strand: char,
}

pub const INDEX_HEADER: &str =
    "record\tshard\tname\tcoords\tseq_length\twindow_offset\twindow_length\tstrand";

/// The index path for a dataset path: `x.safetensors` → `x.index.tsv`.
pub fn index_path_for(dataset: &Path) -> PathBuf {
    let stem = dataset_stem(dataset);
    stem.with_file_name(format!(
        "{}.index.tsv",
        stem.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ))
}

/// A side file of a dataset: `x.safetensors` with `suffix` `samples.tsv` → `x.samples.tsv`
/// (luminome-regions writes `.samples.tsv` and `.regions.tsv` beside a region dataset).
pub fn side_path_for(dataset: &Path, suffix: &str) -> PathBuf {
    let stem = dataset_stem(dataset);
    stem.with_file_name(format!(
        "{}.{suffix}",
        stem.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ))
}

fn dataset_stem(dataset: &Path) -> PathBuf {
    let s = dataset.to_string_lossy();
    PathBuf::from(s.strip_suffix(".safetensors").unwrap_or(&s).to_string())
}

/// Shard `i` of a sharded dataset: `x.safetensors` → `x.00003.safetensors`.
pub fn shard_path(dataset: &Path, i: usize) -> PathBuf {
    let stem = dataset_stem(dataset);
    PathBuf::from(format!("{}.{i:05}.safetensors", stem.display()))
}

/// `seq_length` of a row cut from a record that is still being streamed: the writer holds such
/// rows' index lines (a few bytes each) until [`TokenDatasetWriter::end_record`] gives the length.
pub const UNKNOWN_LENGTH: u64 = u64::MAX;

/// Reads a record index TSV.
pub fn read_index(path: &Path) -> Result<Vec<IndexRow>> {
    let (reader, _) = crate::compress::open(path, 1)?;
    let mut rows = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line =
            line.with_context(|| format!("{}: line {}: cannot read", path.display(), i + 1))?;
        if i == 0 {
            if line.trim_end() != INDEX_HEADER {
                bail!(
                    "{}: line 1: not a Luminome record index header",
                    path.display()
                );
            }
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || anyhow::anyhow!("{}: line {}: malformed index row", path.display(), i + 1);
        if f.len() != 8 {
            return Err(bad());
        }
        rows.push(IndexRow {
            record: f[0].parse().map_err(|_| bad())?,
            shard: f[1].parse().map_err(|_| bad())?,
            name: f[2].to_string(),
            coords: f[3].to_string(),
            seq_length: f[4].parse().map_err(|_| bad())?,
            window_offset: f[5].parse().map_err(|_| bad())?,
            window_length: f[6].parse().map_err(|_| bad())?,
            strand: f[7].chars().next().ok_or_else(bad)?,
        });
    }
    Ok(rows)
}
