//! Expression tables: one row per gene, tab- or whitespace-separated, with or without a header.
//!
//! The gene column and the value column are chosen by header name or 1-based index; by default
//! the first column is the gene and the last column the value. A first line whose value is
//! neither a number nor a missing value (`NA`, `NaN`, `.`, … as in `table::MISSING_VALUES`) is
//! taken as the header; a missing value is a gene without a measurement (left out, counted in
//! [`ExpressionTable::missing`]). Values must be finite and ≥ 0 (expression is an abundance: a
//! negative value would give NaN in the Poisson loss). Gene names must be unique: a repeated name
//! is an error naming both lines, because silently keeping one of two values would bias the join.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use crate::error::{read_error, InputError, Location};

/// A column chosen by header name or by 1-based position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnRef {
    Index(usize),
    Name(String),
    Last,
}

impl ColumnRef {
    pub fn parse(s: &str) -> Self {
        match s.parse::<usize>() {
            Ok(i) if i >= 1 => ColumnRef::Index(i),
            _ if s == "last" => ColumnRef::Last,
            _ => ColumnRef::Name(s.to_string()),
        }
    }

    fn resolve(&self, header: Option<&[String]>, ncols: usize) -> Option<usize> {
        match self {
            ColumnRef::Index(i) => (*i <= ncols).then(|| i - 1),
            ColumnRef::Last => ncols.checked_sub(1),
            ColumnRef::Name(n) => header?.iter().position(|h| h == n),
        }
    }
}

/// Gene → value, with the line each value came from.
#[derive(Debug, Clone, Default)]
pub struct ExpressionTable {
    pub values: HashMap<String, (f64, u64)>,
    pub value_column: String,
    /// Rows whose value was missing (NA, NaN, …): left out.
    pub missing: u64,
    /// Values by Ensembl-style id without its `.N` version, for ids that had one; ids whose
    /// unversioned form is shared by two rows are left out (ambiguous).
    unversioned: HashMap<String, f64>,
}

/// `ENSG00000100299.17` → `ENSG00000100299`; other names unchanged.
fn strip_version(id: &str) -> &str {
    match id.rsplit_once('.') {
        Some((stem, v))
            if !stem.is_empty() && !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) =>
        {
            stem
        }
        _ => id,
    }
}

impl ExpressionTable {
    pub fn get(&self, gene: &str) -> Option<f64> {
        self.values.get(gene).map(|v| v.0)
    }

    /// A gene's value by symbol, then by id, then by id without its version suffix
    /// (`ENSG00000100299.17` matches a table keyed by `ENSG00000100299`, and the reverse).
    pub fn get_gene(&self, name: &str, id: &str) -> Option<f64> {
        self.get(name)
            .or_else(|| self.get(id))
            .or_else(|| self.unversioned.get(strip_version(id)).copied())
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

fn split(line: &str) -> Vec<String> {
    if line.contains('\t') {
        line.split('\t').map(|s| s.trim().to_string()).collect()
    } else {
        line.split_ascii_whitespace().map(str::to_string).collect()
    }
}

/// What to do with a gene name that appears on several rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Duplicates {
    /// Refuse the table (the default: a silent choice would bias the join).
    Error,
    /// Sum the values (e.g. TPM of several transcripts or loci of one symbol).
    Sum,
    /// Keep the largest value.
    Max,
    /// Keep the first row.
    First,
}

pub fn read_expression(
    path: &Path,
    gene_column: &ColumnRef,
    value_column: &ColumnRef,
) -> Result<ExpressionTable, InputError> {
    read_expression_with(path, gene_column, value_column, Duplicates::Error)
}

pub fn read_expression_with(
    path: &Path,
    gene_column: &ColumnRef,
    value_column: &ColumnRef,
    duplicates: Duplicates,
) -> Result<ExpressionTable, InputError> {
    let (reader, _) = crate::compress::open(path, 1)?;
    let mut header: Option<Vec<String>> = None;
    let mut table = ExpressionTable::default();
    let mut first = true;
    let mut width = crate::table::RowWidth::new(
        "",
        "every row of an expression table needs the same columns",
    );
    for (i, line) in reader.lines().enumerate() {
        let n = i as u64 + 1;
        let line = line.map_err(|e| read_error(path, Location::Line(n), e))?;
        if line.trim().is_empty() || line.starts_with('#') && !first {
            continue;
        }
        let fields = split(line.trim_start_matches('#'));
        // Every row as wide as the first: a row that lost its gene name would otherwise read
        // its value as the name and, by the default last column, as the value too.
        width.check(path, n, fields.len())?;
        let resolve = |h: Option<&[String]>| -> Result<(usize, usize), InputError> {
            let g = gene_column.resolve(h, fields.len()).ok_or_else(|| {
                InputError::line(
                    path,
                    n,
                    format!("gene column {gene_column:?} not found in {fields:?}"),
                )
            })?;
            let v = value_column.resolve(h, fields.len()).ok_or_else(|| {
                let message = match (value_column, h) {
                    (ColumnRef::Name(name), Some(h)) => format!(
                        "no column named {name:?}; the columns are: {}",
                        h.join(", ")
                    ),
                    _ => format!("value column {value_column:?} not found in {fields:?}"),
                };
                InputError::line(path, n, message)
            })?;
            Ok((g, v))
        };
        if first {
            first = false;
            let names_given = matches!(gene_column, ColumnRef::Name(_))
                || matches!(value_column, ColumnRef::Name(_));
            let (_, v) = match resolve(Some(&fields)) {
                Ok(x) => x,
                Err(e) if names_given => return Err(e),
                Err(_) => (0, usize::MAX),
            };
            let value_is_data = fields
                .get(v)
                .is_some_and(|s| s.parse::<f64>().is_ok() || crate::table::is_missing(s));
            if names_given || !value_is_data || line.starts_with('#') {
                table.value_column = fields.get(v).cloned().unwrap_or_default();
                header = Some(fields);
                continue;
            }
        }
        let (g, v) = resolve(header.as_deref())?;
        if fields.len() <= g.max(v) {
            return Err(InputError::line(
                path,
                n,
                format!(
                    "expected at least {} columns (gene and value), found {}",
                    g.max(v) + 1,
                    fields.len()
                ),
            ));
        }
        let gene = fields[g].clone();
        if crate::table::is_missing(&fields[v]) {
            table.missing += 1;
            continue;
        }
        let value: f64 = fields[v].parse().map_err(|_| {
            InputError::line(
                path,
                n,
                format!(
                    "expression value {:?} of gene {gene:?} is not a number",
                    fields[v]
                ),
            )
        })?;
        if !(value.is_finite() && value >= 0.0) {
            return Err(InputError::line(
                path,
                n,
                format!(
                    "expression value {value} of {gene:?} is not a finite number ≥ 0 (give abundances such as TPM or counts, not log values; NA marks a missing one)"
                ),
            ));
        }
        match table.values.get_mut(&gene) {
            None => {
                table.values.insert(gene, (value, n));
            }
            Some((old, prev)) => match duplicates {
                Duplicates::Error => {
                    return Err(InputError::line(
                        path,
                        n,
                        format!(
                            "gene {gene:?} appears twice (also at line {prev}); make gene names unique, pick an id column or pass --expression-duplicates"
                        ),
                    ))
                }
                Duplicates::Sum => *old += value,
                Duplicates::Max => *old = old.max(value),
                Duplicates::First => {}
            },
        }
    }
    if table.values.is_empty() {
        return Err(InputError::file(path, "no expression rows"));
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for k in table.values.keys() {
        *seen.entry(strip_version(k)).or_default() += 1;
    }
    table.unversioned = table
        .values
        .iter()
        .filter(|(k, _)| seen[strip_version(k)] == 1)
        .map(|(k, v)| (strip_version(k).to_string(), v.0))
        .collect();
    if table.value_column.is_empty() {
        table.value_column = match value_column {
            ColumnRef::Index(i) => format!("column {i}"),
            _ => "last column".into(),
        };
    }
    Ok(table)
}

/// How expression values are transformed before they are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpressionTransform {
    /// ln(1 + x)
    Log1p,
    /// log10(1 + x)
    Log10p1,
    None,
}

impl ExpressionTransform {
    pub fn apply(self, x: f64) -> f64 {
        match self {
            ExpressionTransform::Log1p => x.ln_1p(),
            ExpressionTransform::Log10p1 => (1.0 + x).log10(),
            ExpressionTransform::None => x,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ExpressionTransform::Log1p => "log1p",
            ExpressionTransform::Log10p1 => "log10p1",
            ExpressionTransform::None => "none",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e.tsv");
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    #[test]
    fn headerless_two_columns() {
        let (_d, p) = table("GCAT\t42.91\nEIF3L\t246.44\n");
        let t = read_expression(&p, &ColumnRef::Index(1), &ColumnRef::Last).unwrap();
        assert_eq!(t.get("GCAT"), Some(42.91));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn a_row_that_lost_its_gene_name_is_refused_with_its_line() {
        // "18.27" alone used to be read as gene "18.27" with the value 18.27.
        let (_d, p) = table("GCAT\t42.91\n18.27\nEIF3L\t246.44\n");
        let err = read_expression(&p, &ColumnRef::Index(1), &ColumnRef::Last)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2: 1 columns where line 1 has 2"),
            "{err}"
        );
    }

    #[test]
    fn a_headerless_table_whose_first_gene_is_missing_keeps_it_as_data() {
        // A first value of NA used to make the first line a header: GCAT was lost silently.
        let (_d, p) = table("GCAT\tNA\nEIF3L\t246.44\nANKRD54\t.\n");
        let t = read_expression(&p, &ColumnRef::Index(1), &ColumnRef::Last).unwrap();
        assert_eq!((t.len(), t.missing, t.get("EIF3L")), (1, 2, Some(246.44)));
        assert_eq!(t.value_column, "last column", "no header was read");
    }

    #[test]
    fn negative_or_infinite_values_are_refused_with_their_line() {
        for bad in ["-3", "inf", "-0.5"] {
            let (_d, p) = table(&format!("GCAT\t1\nEIF3L\t{bad}\n"));
            let e = read_expression(&p, &ColumnRef::Index(1), &ColumnRef::Last)
                .unwrap_err()
                .to_string();
            assert!(e.contains("e.tsv: line 2") && e.contains("≥ 0"), "{e}");
        }
    }

    #[test]
    fn header_and_named_value_column() {
        let (_d, p) = table("gene\tstrand\tRPKM_sum\nH1F0\t+\t1.5\n");
        let t = read_expression(
            &p,
            &ColumnRef::Name("gene".into()),
            &ColumnRef::Name("RPKM_sum".into()),
        )
        .unwrap();
        assert_eq!(t.get("H1F0"), Some(1.5));
        let t = read_expression(&p, &ColumnRef::Index(1), &ColumnRef::Last).unwrap();
        assert_eq!(
            (t.get("H1F0"), t.value_column.as_str()),
            (Some(1.5), "RPKM_sum")
        );
    }

    #[test]
    fn duplicate_gene_names_both_lines() {
        let (_d, p) = table("A\t1\nB\t2\nA\t3\n");
        let err = read_expression(&p, &ColumnRef::Index(1), &ColumnRef::Last)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 3") && err.contains("also at line 1"),
            "{err}"
        );
    }

    #[test]
    fn duplicate_policies() {
        let (_d, p) = table("A\t1\nA\t3\n");
        let get = |d| {
            read_expression_with(&p, &ColumnRef::Index(1), &ColumnRef::Last, d)
                .unwrap()
                .get("A")
        };
        assert_eq!(get(Duplicates::Sum), Some(4.0));
        assert_eq!(get(Duplicates::Max), Some(3.0));
        assert_eq!(get(Duplicates::First), Some(1.0));
    }

    #[test]
    fn a_column_per_cell_type_and_ids_with_or_without_versions() {
        let (_d, p) = table("gene_id\tK-562\tGM12878\nENSG0001.5\t1.5\t2.5\nENSG0002\t3\t4\n");
        let col = |c: &str| {
            read_expression(&p, &ColumnRef::Index(1), &ColumnRef::Name(c.into())).unwrap()
        };
        let k = col("K-562");
        assert_eq!(k.get_gene("SYMBOL", "ENSG0001"), Some(1.5));
        assert_eq!(k.get_gene("SYMBOL", "ENSG0002.3"), Some(3.0));
        assert_eq!(col("GM12878").get_gene("x", "ENSG0001.5"), Some(2.5));
        let err = read_expression(&p, &ColumnRef::Index(1), &ColumnRef::Name("HeLa".into()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 1")
                && err
                    .contains("no column named \"HeLa\"; the columns are: gene_id, K-562, GM12878"),
            "{err}"
        );
    }

    #[test]
    fn transforms() {
        assert!((ExpressionTransform::Log1p.apply(std::f64::consts::E - 1.0) - 1.0).abs() < 1e-12);
        assert!((ExpressionTransform::Log10p1.apply(99.0) - 2.0).abs() < 1e-12);
        assert_eq!(ExpressionTransform::None.apply(3.5), 3.5);
    }
}
