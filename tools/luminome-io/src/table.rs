//! Feature tables: CSV or TSV with a header, one sample per row, columns of numbers or
//! categories (the tabular classifier's input). Cells are kept as text; which columns are
//! numbers is decided by the model's schema, not here.
//!
//! Missing values: an empty cell or one of [`MISSING_VALUES`] (R's `NA`, pandas' `NaN`, the
//! `.` of VCF/BED).

use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::seqtable::{csv_error, delimiter_for};

/// Cell texts read as a missing value (after trimming spaces), besides the empty cell.
pub const MISSING_VALUES: &[&str] = &["NA", "N/A", "NaN", "nan", "null", "NULL", "."];

/// Whether a (trimmed) cell is a missing value.
pub fn is_missing(cell: &str) -> bool {
    cell.is_empty() || MISSING_VALUES.contains(&cell)
}

/// One column count per file, for the line-based readers (BED, gene BED, expression tables;
/// the csv readers get it from `flexible(false)`): a row that lost a field would otherwise
/// shift its later columns and be read as another row.
pub(crate) struct RowWidth {
    /// The first row's columns and line.
    first: Option<(usize, u64)>,
    /// How the first row is named in the error ("" for its line alone).
    first_name: &'static str,
    /// The rule the error ends with.
    rule: &'static str,
}

impl RowWidth {
    pub(crate) fn new(first_name: &'static str, rule: &'static str) -> Self {
        Self {
            first: None,
            first_name,
            rule,
        }
    }

    /// Records the first row's width; refuses a later row of another width, naming both lines.
    pub(crate) fn check(
        &mut self,
        path: &Path,
        line: u64,
        columns: usize,
    ) -> Result<(), InputError> {
        let Some((width, first)) = self.first else {
            self.first = Some((columns, line));
            return Ok(());
        };
        if width == columns {
            return Ok(());
        }
        let where_ = match self.first_name {
            "" => format!("line {first}"),
            name => format!("{name} (line {first})"),
        };
        Err(InputError::line(
            path,
            line,
            format!(
                "{columns} columns where {where_} has {width}: {}",
                self.rule
            ),
        ))
    }
}

/// A whole feature table in memory, column by column.
#[derive(Debug, Clone)]
pub struct FeatureTable {
    path: PathBuf,
    columns: Vec<String>,
    /// `cells[column][row]`, `None` where missing.
    cells: Vec<Vec<Option<String>>>,
    /// 1-based file line of each row (the header is line 1).
    lines: Vec<u64>,
}

impl FeatureTable {
    /// Reads `path` (plain or compressed); `delimiter` `None` guesses from the name (`.tsv`,
    /// `.txt`, `.tab` → tab, otherwise comma).
    pub fn read(path: &Path, delimiter: Option<u8>) -> Result<Self, InputError> {
        let (inner, _) = crate::compress::open(path, 1)?;
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(delimiter.unwrap_or_else(|| delimiter_for(path)))
            .has_headers(true)
            .flexible(false)
            .from_reader(inner);
        let headers = reader.headers().map_err(|e| csv_error(path, e, 1))?.clone();
        if headers.is_empty() || (headers.len() == 1 && headers[0].trim().is_empty()) {
            return Err(InputError::file(path, "file is empty (no header line)"));
        }
        let columns: Vec<String> = headers.iter().map(|h| h.trim().to_string()).collect();
        for (i, c) in columns.iter().enumerate() {
            if c.is_empty() {
                return Err(InputError::line(
                    path,
                    1,
                    format!("column {} has no name in the header", i + 1),
                ));
            }
            if let Some(j) = columns[..i].iter().position(|d| d == c) {
                return Err(InputError::line(
                    path,
                    1,
                    format!("columns {} and {} are both named {c:?}", j + 1, i + 1),
                ));
            }
        }
        let mut cells: Vec<Vec<Option<String>>> = vec![Vec::new(); columns.len()];
        let mut lines = Vec::new();
        let mut record = csv::StringRecord::new();
        loop {
            let fallback = lines.len() as u64 + 2;
            let more = reader
                .read_record(&mut record)
                .map_err(|e| csv_error(path, e, fallback))?;
            if !more {
                break;
            }
            lines.push(record.position().map(|p| p.line()).unwrap_or(fallback));
            for (col, cell) in cells.iter_mut().zip(record.iter()) {
                let cell = cell.trim();
                col.push((!is_missing(cell)).then(|| cell.to_string()));
            }
        }
        if lines.is_empty() {
            return Err(InputError::file(path, "the table has a header but no rows"));
        }
        Ok(Self {
            path: path.to_path_buf(),
            columns,
            cells,
            lines,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Column names, in file order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Rows (samples).
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The index of column `name`, or an error naming the file, `what` the column is for and
    /// the columns there are.
    pub fn require(&self, name: &str, what: &str) -> Result<usize, InputError> {
        self.column_index(name).ok_or_else(|| {
            InputError::line(
                &self.path,
                1,
                format!(
                    "no {what} column named {name:?} in the header (columns: {})",
                    self.columns.join(", ")
                ),
            )
        })
    }

    /// Column `col`'s cells, one per row (`None` where missing).
    pub fn column(&self, col: usize) -> &[Option<String>] {
        &self.cells[col]
    }

    /// The 1-based file line of row `row` (0-based).
    pub fn line(&self, row: usize) -> u64 {
        self.lines[row]
    }

    /// An error at row `row` (0-based) of this table.
    pub fn error_at(&self, row: usize, message: impl Into<String>) -> InputError {
        InputError::line(&self.path, self.line(row), message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str, name: &str) -> Result<FeatureTable, InputError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        FeatureTable::read(&p, None)
    }

    #[test]
    fn reads_cells_missing_values_and_lines() {
        let t = table("id\tx\tg\ns1\t1.5\ta\ns2\tNA\t\ns3\t.\tb\n", "t.tsv").unwrap();
        assert_eq!(t.columns(), ["id", "x", "g"]);
        assert_eq!(t.len(), 3);
        assert_eq!(t.column(1), [Some("1.5".to_string()), None, None]);
        assert_eq!(
            t.column(2),
            [Some("a".to_string()), None, Some("b".to_string())]
        );
        assert_eq!(t.line(2), 4);
    }

    #[test]
    fn refuses_duplicate_and_unnamed_columns_and_ragged_rows() {
        let e = table("a,b,a\n1,2,3\n", "t.csv").unwrap_err().to_string();
        assert!(
            e.contains("line 1") && e.contains("both named \"a\""),
            "{e}"
        );
        let e = table("a,,c\n1,2,3\n", "t.csv").unwrap_err().to_string();
        assert!(e.contains("column 2 has no name"), "{e}");
        let e = table("a,b\n1,2\n3\n", "t.csv").unwrap_err().to_string();
        assert!(
            e.contains("line 3") && e.contains("expected 2 columns"),
            "{e}"
        );
        let e = table("a,b\n", "t.csv").unwrap_err().to_string();
        assert!(e.contains("no rows"), "{e}");
    }
}
