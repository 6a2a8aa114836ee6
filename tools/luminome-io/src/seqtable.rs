//! Sequence tables: CSV or TSV with a header, one sequence per row and an optional integer
//! label (the GUE layout `sequence,label`). Column names are settable.

use std::path::{Path, PathBuf};

use crate::error::{InputError, Location};

#[derive(Debug, Clone)]
pub struct SeqTableOptions {
    pub sequence_column: String,
    /// `None`: no labels are read.
    pub label_column: Option<String>,
    /// Optional column giving each row's name; rows are named `row<N>` otherwise.
    pub name_column: Option<String>,
    /// `None`: guess from the extension (`.tsv`/`.txt` → tab, otherwise comma).
    pub delimiter: Option<u8>,
}

impl Default for SeqTableOptions {
    fn default() -> Self {
        Self {
            sequence_column: "sequence".into(),
            label_column: Some("label".into()),
            name_column: None,
            delimiter: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeqRow {
    /// 1-based data row number (the header is not counted).
    pub row: u64,
    /// 1-based line number in the file.
    pub line: u64,
    pub name: String,
    pub sequence: Vec<u8>,
    pub label: Option<i64>,
}

pub struct SeqTableReader {
    reader: csv::Reader<Box<dyn std::io::BufRead + Send>>,
    path: PathBuf,
    seq_idx: usize,
    label_idx: Option<usize>,
    name_idx: Option<usize>,
    row: u64,
    record: csv::ByteRecord,
}

/// The delimiter a table's name implies: `.tsv`/`.txt`/`.tab` (optionally compressed) → tab,
/// anything else → comma.
pub fn delimiter_for(path: &Path) -> u8 {
    let name = crate::compress::format_name(path);
    if name.ends_with(".tsv") || name.ends_with(".txt") || name.ends_with(".tab") {
        b'\t'
    } else {
        b','
    }
}

/// A CSV reader's error as an [`InputError`] naming the line (`fallback_line` when the reader
/// does not know it).
pub fn csv_error(path: &Path, e: csv::Error, fallback_line: u64) -> InputError {
    let line = e.position().map(|p| p.line()).unwrap_or(fallback_line);
    let msg = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("expected {expected_len} columns as in the header, found {len}"),
        csv::ErrorKind::Io(io) => {
            return crate::error::read_error(
                path,
                Location::Line(line),
                std::io::Error::new(io.kind(), io.to_string()),
            )
        }
        _ => e.to_string(),
    };
    InputError::line(path, line, msg)
}

impl SeqTableReader {
    pub fn open(path: &Path, opts: &SeqTableOptions) -> Result<Self, InputError> {
        let (inner, _) = crate::compress::open(path, 1)?;
        let delimiter = opts.delimiter.unwrap_or_else(|| delimiter_for(path));
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(true)
            .flexible(false)
            .from_reader(inner);
        let headers = reader
            .byte_headers()
            .map_err(|e| InputError::line(path, 1, format!("cannot read the header: {e}")))?
            .clone();
        if headers.is_empty() || (headers.len() == 1 && headers[0].is_empty()) {
            return Err(InputError::file(path, "file is empty (no header line)"));
        }
        let names: Vec<String> = headers
            .iter()
            .map(|h| String::from_utf8_lossy(h).trim().to_string())
            .collect();
        let find = |col: &str| names.iter().position(|n| n == col);
        let missing = |col: &str| {
            InputError::line(
                path,
                1,
                format!(
                    "no column named {col:?} in the header (columns: {}); set the column name with the matching option",
                    names.join(", ")
                ),
            )
        };
        let seq_idx = find(&opts.sequence_column).ok_or_else(|| missing(&opts.sequence_column))?;
        let label_idx = match &opts.label_column {
            Some(c) => Some(find(c).ok_or_else(|| missing(c))?),
            None => None,
        };
        let name_idx = match &opts.name_column {
            Some(c) => Some(find(c).ok_or_else(|| missing(c))?),
            None => None,
        };
        Ok(Self {
            reader,
            path: path.to_path_buf(),
            seq_idx,
            label_idx,
            name_idx,
            row: 0,
            record: csv::ByteRecord::new(),
        })
    }

    pub fn read_row(&mut self) -> Result<Option<SeqRow>, InputError> {
        let ok = self
            .reader
            .read_byte_record(&mut self.record)
            .map_err(|e| csv_error(&self.path, e, self.row + 2))?;
        if !ok {
            return Ok(None);
        }
        self.row += 1;
        // The header is line 1; sequence tables have no multi-line quoted fields.
        let line = self.row + 1;
        let mut sequence = self.record[self.seq_idx].to_vec();
        while sequence.last() == Some(&b'\r') || sequence.last() == Some(&b' ') {
            sequence.pop();
        }
        if sequence.is_empty() {
            return Err(InputError::line(&self.path, line, "empty sequence"));
        }
        let label = match self.label_idx {
            None => None,
            Some(i) => {
                let text = String::from_utf8_lossy(&self.record[i]);
                let text = text.trim();
                Some(text.parse::<i64>().map_err(|_| {
                    InputError::line(
                        &self.path,
                        line,
                        format!("label {text:?} is not an integer"),
                    )
                })?)
            }
        };
        let name = match self.name_idx {
            Some(i) => String::from_utf8_lossy(&self.record[i]).trim().to_string(),
            None => format!("row{}", self.row),
        };
        Ok(Some(SeqRow {
            row: self.row,
            line,
            name,
            sequence,
            label,
        }))
    }
}

impl Iterator for SeqTableReader {
    type Item = Result<SeqRow, InputError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.read_row().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::File::create(&p)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        (dir, p)
    }

    #[test]
    fn reads_gue_layout() {
        let (_d, p) = write("t.csv", "sequence,label\r\nACGT,1\r\nGGCC,0\r\n");
        let rows: Vec<_> = SeqTableReader::open(&p, &SeqTableOptions::default())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].sequence, b"ACGT");
        assert_eq!(rows[0].label, Some(1));
        assert_eq!(rows[1].line, 3);
        assert_eq!(rows[1].name, "row2");
    }

    #[test]
    fn missing_column_is_named() {
        let (_d, p) = write("t.csv", "seq,label\nACGT,1\n");
        let err = SeqTableReader::open(&p, &SeqTableOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("line 1") && err.contains("\"sequence\"") && err.contains("seq, label"),
            "{err}"
        );
    }

    #[test]
    fn non_integer_label_names_the_line() {
        let (_d, p) = write("t.tsv", "sequence\tlabel\nACGT\t1\nAC\tpromoter\n");
        let err = SeqTableReader::open(&p, &SeqTableOptions::default())
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 3") && err.contains("not an integer"),
            "{err}"
        );
    }
}
