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
    /// Where on the genome (or in the named record) the row's bases lie; `None` when unknown
    /// (table rows).
    pub interval: Option<Interval>,
    /// Length in bases of the source sequence the row was cut from.
    pub seq_length: u64,
    /// Offset in bases of this row's window within the source sequence (forward strand).
    pub window_offset: u64,
    /// Bases in this row's window.
    pub window_length: u64,
    /// `+` for the sequence as given, `-` for its reverse complement.
    pub strand: char,
}

/// A row's bases: `chrom` (a chromosome, or a FASTA record's name) from `start` to `end`,
/// 0-based half-open as in BED.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    pub chrom: String,
    pub start: u64,
    pub end: u64,
}

impl Interval {
    /// `chrom:start-end` 1-based inclusive, as samtools, IGV and the UCSC browser read a region.
    pub fn region(&self) -> String {
        let mut text = Vec::new();
        append_region(&mut text, &self.chrom, self.start, self.end);
        String::from_utf8(text).expect("the fields are text")
    }

    /// `chrom start end` columns: `Some(None)` for `. . .` (no coordinates), `None` when
    /// malformed.
    pub fn from_columns(f: &[&str]) -> Option<Option<Interval>> {
        if f == [".", ".", "."] {
            return Some(None);
        }
        Some(Some(Interval {
            chrom: f[0].to_string(),
            start: f[1].parse().ok()?,
            end: f[2].parse().ok()?,
        }))
    }

    /// Format version 1's `chr:start-end(strand)` (0-based half-open); `None` for `.`.
    /// Chromosome names may contain ':'.
    pub fn parse_v1(coords: &str) -> Option<Interval> {
        let (rest, _strand) = coords.strip_suffix(')')?.rsplit_once('(')?;
        let (chrom, range) = rest.rsplit_once(':')?;
        let (start, end) = range.split_once('-')?;
        Some(Interval {
            chrom: chrom.to_string(),
            start: start.parse().ok()?,
            end: end.parse().ok()?,
        })
    }
}

/// Appends [`Interval::region`]'s text for `chrom` from 0-based `start` to `end`: the one
/// writer of the region column.
fn append_region(text: &mut Vec<u8>, chrom: &str, start: u64, end: u64) {
    let mut digits = itoa::Buffer::new();
    text.extend_from_slice(chrom.as_bytes());
    text.push(b':');
    text.extend_from_slice(digits.format(start + 1).as_bytes());
    text.push(b'-');
    text.extend_from_slice(digits.format(end).as_bytes());
}

/// The index header since token dataset format version 2: BED-style `chrom start end` (0-based
/// half-open, `.` when unknown) and `region` (1-based inclusive, pasteable into samtools/IGV).
pub const INDEX_HEADER: &str = "record\tshard\tname\tchrom\tstart\tend\tregion\tseq_length\twindow_offset\twindow_length\tstrand";

/// Format version 1's header: one `coords` column, `chr:start-end(strand)` 0-based half-open.
pub const INDEX_HEADER_V1: &str =
    "record\tshard\tname\tcoords\tseq_length\twindow_offset\twindow_length\tstrand";

impl IndexRow {
    /// The row's index line (format version 2), without the newline.
    pub fn to_line(&self) -> String {
        let mut line = Vec::new();
        self.append_line(&mut line);
        line.pop(); // the newline
        String::from_utf8(line).expect("the fields are text")
    }

    /// Appends [`IndexRow::to_line`]'s line and a newline to `line`.
    pub fn append_line(&self, line: &mut Vec<u8>) {
        LineFields {
            record: self.record,
            shard: self.shard,
            name: &self.name,
            interval: self
                .interval
                .as_ref()
                .map(|i| (i.chrom.as_str(), i.start, i.end)),
            seq_length: self.seq_length,
            window_offset: self.window_offset,
            window_length: self.window_length,
            strand: self.strand,
        }
        .append_to(line);
    }

    /// Parses an index line of format version 2 (as [`IndexRow::to_line`] writes it).
    pub fn from_line(line: &str) -> Option<IndexRow> {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 11 {
            return None;
        }
        Self::from_fields(&f, Interval::from_columns(&f[3..6])?, &f[7..])
    }

    /// Parses an index line of format version 1 (one `coords` column).
    fn from_line_v1(line: &str) -> Option<IndexRow> {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 8 {
            return None;
        }
        Self::from_fields(&f, Interval::parse_v1(f[3]), &f[4..])
    }

    fn from_fields(f: &[&str], interval: Option<Interval>, rest: &[&str]) -> Option<IndexRow> {
        Some(IndexRow {
            record: f[0].parse().ok()?,
            shard: f[1].parse().ok()?,
            name: f[2].to_string(),
            interval,
            seq_length: rest[0].parse().ok()?,
            window_offset: rest[1].parse().ok()?,
            window_length: rest[2].parse().ok()?,
            strand: rest[3].chars().next()?,
        })
    }
}

/// An index line's fields, written out by hand: a streamed chromosome has a line per window, and
/// `write!`'s formatting of its eight numbers was most of the index's cost.
struct LineFields<'a> {
    record: u64,
    shard: usize,
    name: &'a str,
    /// `chrom`, 0-based `start`, `end`.
    interval: Option<(&'a str, u64, u64)>,
    seq_length: u64,
    window_offset: u64,
    window_length: u64,
    strand: char,
}

impl LineFields<'_> {
    fn append_to(&self, line: &mut Vec<u8>) {
        let mut digits = itoa::Buffer::new();
        let mut number = |line: &mut Vec<u8>, v: u64| {
            line.extend_from_slice(digits.format(v).as_bytes());
            line.push(b'\t');
        };
        number(line, self.record);
        number(line, self.shard as u64);
        line.extend_from_slice(self.name.as_bytes());
        line.push(b'\t');
        match self.interval {
            Some((chrom, start, end)) => {
                line.extend_from_slice(chrom.as_bytes());
                line.push(b'\t');
                number(line, start);
                number(line, end);
                append_region(line, chrom, start, end);
                line.push(b'\t');
            }
            None => line.extend_from_slice(b".\t.\t.\t.\t"),
        }
        number(line, self.seq_length);
        number(line, self.window_offset);
        number(line, self.window_length);
        let mut strand = [0u8; 4];
        line.extend_from_slice(self.strand.encode_utf8(&mut strand).as_bytes());
        line.push(b'\n');
    }
}

/// The index rows of a streamed record, held until the record ends and its length is known:
/// the record's name once and five numbers a row. (Held whole, as [`IndexRow`]s with their
/// strings, and formatted with `write!`, they were a sixth of the tokenizer's CPU time on a
/// chromosome.)
#[derive(Debug, Default)]
pub struct PendingRows {
    name: String,
    rows: Vec<PendingRow>,
}

#[derive(Debug)]
struct PendingRow {
    record: u64,
    shard: usize,
    window_offset: u64,
    window_length: u64,
    strand: char,
}

impl PendingRows {
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Holds a row of the record being streamed; a row of another record before this one ended
    /// is an internal error.
    pub fn push(&mut self, row: &IndexRow) -> Result<()> {
        if self.rows.is_empty() {
            self.name.clear();
            self.name.push_str(&row.name);
        } else if self.name != row.name {
            bail!("internal: rows of two streamed records interleaved");
        }
        self.rows.push(PendingRow {
            record: row.record,
            shard: row.shard,
            window_offset: row.window_offset,
            window_length: row.window_length,
            strand: row.strand,
        });
        Ok(())
    }

    /// Ends the record with `seq_length` bases: each held row's line, its interval the row's
    /// window within the record (named by the record), goes to `emit` in order; none are held
    /// after.
    pub fn end_record(
        &mut self,
        seq_length: u64,
        mut emit: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut line = Vec::with_capacity(128);
        for row in self.rows.drain(..) {
            line.clear();
            LineFields {
                record: row.record,
                shard: row.shard,
                name: &self.name,
                interval: Some((
                    &self.name,
                    row.window_offset,
                    row.window_offset + row.window_length,
                )),
                seq_length,
                window_offset: row.window_offset,
                window_length: row.window_length,
                strand: row.strand,
            }
            .append_to(&mut line);
            emit(&line)?;
        }
        Ok(())
    }
}

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

/// Reads a record index TSV: format version 2, or version 1 (a `coords` column).
pub fn read_index(path: &Path) -> Result<Vec<IndexRow>> {
    let (reader, _) = crate::compress::open(path, 1)?;
    let mut rows = Vec::new();
    let mut v1 = false;
    for (i, line) in reader.lines().enumerate() {
        let line =
            line.with_context(|| format!("{}: line {}: cannot read", path.display(), i + 1))?;
        if i == 0 {
            v1 = line.trim_end() == INDEX_HEADER_V1;
            if !v1 && line.trim_end() != INDEX_HEADER {
                bail!(
                    "{}: line 1: not a Luminome record index header",
                    path.display()
                );
            }
            continue;
        }
        let bad = || anyhow::anyhow!("{}: line {}: malformed index row", path.display(), i + 1);
        let row = if v1 {
            IndexRow::from_line_v1(&line)
        } else {
            IndexRow::from_line(&line)
        };
        rows.push(row.ok_or_else(bad)?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_1_and_2_indexes_read_the_same_rows() {
        let dir = tempfile::tempdir().unwrap();
        let v1 = dir.path().join("v1.index.tsv");
        std::fs::write(
            &v1,
            format!("{INDEX_HEADER_V1}\n0\t0\tp1\tchr1:99-200(-)\t101\t0\t101\t-\n1\t0\trow2\t.\t70\t0\t70\t+\n"),
        )
        .unwrap();
        let rows = read_index(&v1).unwrap();
        let v2 = dir.path().join("v2.index.tsv");
        let text: Vec<String> = rows.iter().map(IndexRow::to_line).collect();
        std::fs::write(&v2, format!("{INDEX_HEADER}\n{}\n", text.join("\n"))).unwrap();
        assert_eq!(read_index(&v2).unwrap(), rows);
        assert_eq!(
            text[0],
            "0\t0\tp1\tchr1\t99\t200\tchr1:100-200\t101\t0\t101\t-"
        );
        assert_eq!(text[1], "1\t0\trow2\t.\t.\t.\t.\t70\t0\t70\t+");
    }

    /// A streamed record's held rows come out, once the record ends, as the rows of its windows
    /// named by the record: its length, and each window as the interval (region 1-based).
    #[test]
    fn held_rows_of_a_streamed_record_end_as_its_windows() {
        let row = |record: u64, offset: u64, length: u64, strand: char| IndexRow {
            record,
            shard: 2,
            name: "chr22".into(),
            interval: None,
            seq_length: UNKNOWN_LENGTH,
            window_offset: offset,
            window_length: length,
            strand,
        };
        let mut pending = PendingRows::default();
        pending.push(&row(7, 0, 512, '+')).unwrap();
        pending.push(&row(8, 512, 100, '-')).unwrap();
        let other = IndexRow {
            name: "chr21".into(),
            ..row(9, 0, 1, '+')
        };
        assert!(pending.push(&other).is_err());
        let mut lines = Vec::new();
        pending
            .end_record(612, |l| {
                lines.push(String::from_utf8(l.to_vec()).unwrap());
                Ok(())
            })
            .unwrap();
        assert!(pending.is_empty());
        assert_eq!(
            lines,
            [
                "7\t2\tchr22\tchr22\t0\t512\tchr22:1-512\t612\t0\t512\t+\n",
                "8\t2\tchr22\tchr22\t512\t612\tchr22:513-612\t612\t512\t100\t-\n",
            ]
        );
        let line = lines[1].trim_end();
        assert_eq!(
            IndexRow::from_line(line).unwrap().to_line(),
            line,
            "read back and written again"
        );
    }
}
