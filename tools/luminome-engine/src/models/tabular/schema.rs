//! What a tabular model reads: which column is the label, which the sample id, and for every
//! feature column whether it is a number (with the training mean and sd that standardise it) or a
//! category (with the training vocabulary). Fitted on the training rows only and stored in the
//! model's config, so prediction encodes a new table exactly as training did.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{bail, Result};
use luminome_io::table::FeatureTable;
use serde::{Deserialize, Serialize};

/// Category slot of a missing value; [`UNKNOWN`] is a value not seen in training; categories seen
/// in training take slots 2, 3, ...
pub const MISSING: u32 = 0;
pub const UNKNOWN: u32 = 1;
pub const FIRST_CATEGORY: u32 = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ColumnKind {
    /// A number, standardised as (x − mean) / sd with the training rows' mean and (population)
    /// sd; sd 1 when the column is constant in training.
    Numeric { mean: f64, sd: f64 },
    /// A category: the values seen in training, sorted.
    Categorical { categories: Vec<String> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableColumn {
    pub name: String,
    #[serde(flatten)]
    pub kind: ColumnKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TabularSchema {
    pub label_column: String,
    /// The column naming each sample (rows are called `row<N>` without one).
    pub id_column: Option<String>,
    /// Label values, in class order (binary: the second is the positive class).
    pub classes: Vec<String>,
    /// Feature columns: numeric ones first, then categorical ones, each in table order (the
    /// model's token order).
    pub columns: Vec<TableColumn>,
}

/// How columns are chosen and typed.
#[derive(Debug, Clone, Default)]
pub struct SchemaOptions {
    pub label: String,
    pub id: Option<String>,
    /// Columns read as categories even when every value is a number.
    pub categorical: Vec<String>,
    /// Columns that must be numbers (a value that is not is an error).
    pub numeric: Vec<String>,
    /// Columns left out.
    pub ignore: Vec<String>,
    /// Declared class order; `None`: the distinct labels, sorted.
    pub classes: Option<Vec<String>>,
}

/// A number cell: a finite f64 (`inf` and over-range values refused).
fn parse_number(cell: &str) -> Option<f64> {
    cell.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A numeric feature's value, or why the model cannot take it: not a finite number, or beyond
/// single precision, the range the model computes in (1e308 is a finite f64, but it would
/// overflow the column's variance and turn every other cell of the column into ±inf).
fn feature_value(cell: &str) -> std::result::Result<f64, &'static str> {
    match parse_number(cell) {
        None => Err("is not a finite number"),
        Some(x) if x.abs() > f32::MAX as f64 => {
            Err("is beyond single precision (±3.4e38), the range the model computes in")
        }
        Some(x) => Ok(x),
    }
}

/// The classes of a table's label column: `declared` (every label must be one of them) or the
/// distinct labels, sorted. At least two.
pub fn table_classes(
    table: &FeatureTable,
    label: &str,
    declared: Option<&[String]>,
) -> Result<Vec<String>> {
    let col = table.require(label, "label")?;
    let mut seen = BTreeSet::new();
    for (row, cell) in table.column(col).iter().enumerate() {
        let Some(v) = cell else {
            return Err(table
                .error_at(row, format!("the label ({label}) is missing"))
                .into());
        };
        if let Some(d) = declared {
            if !d.contains(v) {
                return Err(table
                    .error_at(
                        row,
                        format!(
                            "label {v:?} is not one of the classes {} (--classes){}",
                            d.join(", "),
                            if d.len() == 2 {
                                "; a binary task takes two label values"
                            } else {
                                ""
                            }
                        ),
                    )
                    .into());
            }
        }
        seen.insert(v.clone());
    }
    let classes: Vec<String> = match declared {
        Some(d) => {
            let mut unique = BTreeSet::new();
            if let Some(dup) = d.iter().find(|c| !unique.insert(c.as_str())) {
                bail!("--classes names {dup:?} twice");
            }
            d.to_vec()
        }
        None => seen.into_iter().collect(),
    };
    if classes.len() < 2 {
        bail!(
            "{}: the label column {label} has one value ({}); a classifier needs at least two classes",
            table.path().display(),
            classes.join(", ")
        );
    }
    Ok(classes)
}

/// Checks that the id column (when there is one) names every row once.
pub fn check_unique_ids(table: &FeatureTable, id: &str) -> Result<()> {
    let col = table.require(id, "id")?;
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (row, cell) in table.column(col).iter().enumerate() {
        let Some(v) = cell else {
            return Err(table
                .error_at(row, format!("the sample id ({id}) is missing"))
                .into());
        };
        if let Some(&r) = first.get(v.as_str()) {
            return Err(table
                .error_at(
                    row,
                    format!(
                        "sample id {v:?} is used twice (first on line {})",
                        table.line(r)
                    ),
                )
                .into());
        }
        first.insert(v, row);
    }
    Ok(())
}

impl TabularSchema {
    /// Fits the schema on rows `train` of `table` (categories, means and sds from those rows
    /// only); `classes` from [`table_classes`]. Returns it with notes for the log.
    pub fn fit(
        table: &FeatureTable,
        train: &[usize],
        opts: &SchemaOptions,
        classes: Vec<String>,
    ) -> Result<(Self, Vec<String>)> {
        let path = table.path().display();
        for (flag, names) in [
            ("--categorical", &opts.categorical),
            ("--numeric", &opts.numeric),
            ("--ignore", &opts.ignore),
        ] {
            for n in names {
                table.require(n, flag)?;
                if *n == opts.label || opts.id.as_ref() == Some(n) {
                    bail!("{flag} {n}: that is the label or id column");
                }
            }
        }
        if let Some(n) = opts.categorical.iter().find(|n| opts.numeric.contains(n)) {
            bail!("column {n} is given to both --categorical and --numeric");
        }
        table.require(&opts.label, "label")?;
        if let Some(id) = &opts.id {
            if *id == opts.label {
                bail!("--id and --label name the same column ({id})");
            }
        }
        let mut numeric = Vec::new();
        let mut categorical = Vec::new();
        let mut notes = Vec::new();
        for (col, name) in table.columns().iter().enumerate() {
            if *name == opts.label || opts.id.as_ref() == Some(name) || opts.ignore.contains(name) {
                continue;
            }
            let cells = table.column(col);
            let present: Vec<(usize, &str)> = train
                .iter()
                .filter_map(|&r| cells[r].as_deref().map(|v| (r, v)))
                .collect();
            if present.is_empty() {
                bail!(
                    "{path}: column {name} has no value in any of the {} training rows (all missing); leave it out with --ignore {name}",
                    train.len()
                );
            }
            let declared_numeric = opts.numeric.contains(name);
            let as_category = opts.categorical.contains(name)
                || (!declared_numeric && present.iter().any(|(_, v)| parse_number(v).is_none()));
            if as_category {
                let categories: BTreeSet<&str> = present.iter().map(|(_, v)| *v).collect();
                if categories.len() == present.len() && present.len() > 20 {
                    notes.push(format!(
                        "column {name} has a different value in every training row (an identifier? name it with --id or leave it out with --ignore)"
                    ));
                }
                categorical.push(TableColumn {
                    name: name.clone(),
                    kind: ColumnKind::Categorical {
                        categories: categories.into_iter().map(String::from).collect(),
                    },
                });
                continue;
            }
            let mut values = Vec::with_capacity(present.len());
            for (r, v) in &present {
                match feature_value(v) {
                    Ok(x) => values.push(x),
                    Err(why) => {
                        return Err(table
                            .error_at(*r, format!("column {name}: {v:?} {why} (--numeric {name})"))
                            .into())
                    }
                }
            }
            let n = values.len() as f64;
            let mean = values.iter().sum::<f64>() / n;
            let var = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
            let sd = if var.sqrt() > 0.0 && var.is_finite() {
                var.sqrt()
            } else {
                notes.push(format!("column {name} is constant in the training rows"));
                1.0
            };
            numeric.push(TableColumn {
                name: name.clone(),
                kind: ColumnKind::Numeric { mean, sd },
            });
        }
        if numeric.is_empty() && categorical.is_empty() {
            bail!("{path}: no feature columns besides the label and id");
        }
        numeric.extend(categorical);
        Ok((
            Self {
                label_column: opts.label.clone(),
                id_column: opts.id.clone(),
                classes,
                columns: numeric,
            },
            notes,
        ))
    }

    pub fn numeric_columns(&self) -> impl Iterator<Item = &TableColumn> {
        self.columns
            .iter()
            .filter(|c| matches!(c.kind, ColumnKind::Numeric { .. }))
    }

    pub fn categorical_columns(&self) -> impl Iterator<Item = &TableColumn> {
        self.columns
            .iter()
            .filter(|c| matches!(c.kind, ColumnKind::Categorical { .. }))
    }

    pub fn n_numeric(&self) -> usize {
        self.numeric_columns().count()
    }

    /// Slots of each categorical column's embedding (missing, unknown and its categories).
    pub fn category_slots(&self) -> Vec<usize> {
        self.categorical_columns()
            .map(|c| match &c.kind {
                ColumnKind::Categorical { categories } => {
                    categories.len() + FIRST_CATEGORY as usize
                }
                ColumnKind::Numeric { .. } => 0,
            })
            .collect()
    }

    /// Checks sizes and values (a checkpoint's schema is user input).
    pub fn validate(&self) -> Result<()> {
        if self.classes.len() < 2 || self.classes.len() > 1 << 16 {
            bail!(
                "a tabular model needs 2 to 65536 classes, got {}",
                self.classes.len()
            );
        }
        if self.columns.is_empty() || self.columns.len() > 1 << 16 {
            bail!(
                "a tabular model reads 1 to 65536 columns, got {}",
                self.columns.len()
            );
        }
        let mut seen_categorical = false;
        for c in &self.columns {
            match &c.kind {
                ColumnKind::Numeric { mean, sd } => {
                    if seen_categorical || !mean.is_finite() || !sd.is_finite() || *sd <= 0.0 {
                        bail!(
                            "column {}: bad standardisation (mean {mean}, sd {sd}) or order",
                            c.name
                        );
                    }
                }
                ColumnKind::Categorical { categories } => {
                    seen_categorical = true;
                    if categories.len() > 1 << 24 {
                        bail!("column {}: {} categories", c.name, categories.len());
                    }
                }
            }
        }
        Ok(())
    }

    /// Encodes rows `rows` of `table` (columns found by name; numbers standardised, categories
    /// mapped to slots). Labels are read when the table has the label column.
    pub fn encode(&self, table: &FeatureTable, rows: &[usize]) -> Result<EncodedRows> {
        let n_num = self.n_numeric();
        let n_cat = self.columns.len() - n_num;
        let mut numeric = vec![0f32; rows.len() * n_num];
        let mut missing = vec![0f32; rows.len() * n_num];
        let mut categories = vec![MISSING; rows.len() * n_cat];
        let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
        let mut j_num = 0;
        let mut j_cat = 0;
        for c in &self.columns {
            let col = table.column_index(&c.name).ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: no column {:?}; the model was trained with columns {}",
                    table.path().display(),
                    c.name,
                    self.columns
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
            let cells = table.column(col);
            match &c.kind {
                ColumnKind::Numeric { mean, sd } => {
                    for (i, &r) in rows.iter().enumerate() {
                        let k = i * n_num + j_num;
                        let Some(v) = &cells[r] else {
                            missing[k] = 1.0;
                            continue;
                        };
                        let z = feature_value(v).and_then(|x| {
                            let z = ((x - mean) / sd) as f32;
                            match z.is_finite() {
                                true => Ok(z),
                                false => Err("is so far from the training rows' mean, in their standard deviations, that it is beyond single precision"),
                            }
                        });
                        match z {
                            Ok(z) => numeric[k] = z,
                            Err(why) => {
                                return Err(table
                                    .error_at(
                                        r,
                                        format!(
                                        "column {}: {v:?} {why}, and the model reads {} as numbers",
                                        c.name, c.name
                                    ),
                                    )
                                    .into())
                            }
                        }
                    }
                    j_num += 1;
                }
                ColumnKind::Categorical { categories: vocab } => {
                    for (i, &r) in rows.iter().enumerate() {
                        let slot = match &cells[r] {
                            None => MISSING,
                            Some(v) => match vocab.binary_search(v) {
                                Ok(p) => p as u32 + FIRST_CATEGORY,
                                Err(_) => {
                                    *unknown.entry(c.name.clone()).or_default() += 1;
                                    UNKNOWN
                                }
                            },
                        };
                        categories[i * n_cat + j_cat] = slot;
                    }
                    j_cat += 1;
                }
            }
        }
        let ids = match &self.id_column {
            Some(id) => {
                let col = table.require(id, "id")?;
                rows.iter()
                    .map(|&r| table.column(col)[r].clone().unwrap_or_default())
                    .collect()
            }
            None => rows.iter().map(|r| format!("row{}", r + 1)).collect(),
        };
        let classes = match table.column_index(&self.label_column) {
            None => None,
            Some(col) => {
                let mut out = Vec::with_capacity(rows.len());
                for &r in rows {
                    let cell = table.column(col)[r].as_deref();
                    match cell.and_then(|v| self.classes.iter().position(|c| c == v)) {
                        Some(k) => out.push(k as u32),
                        None => {
                            return Err(table
                                .error_at(
                                    r,
                                    format!(
                                        "label {} is not one of the model's classes ({})",
                                        cell.map(|v| format!("{v:?}"))
                                            .unwrap_or_else(|| "(missing)".into()),
                                        self.classes.join(", ")
                                    ),
                                )
                                .into())
                        }
                    }
                }
                Some(out)
            }
        };
        Ok(EncodedRows {
            n: rows.len(),
            n_numeric: n_num,
            n_categorical: n_cat,
            ids,
            numeric,
            missing,
            categories,
            classes,
            unknown,
        })
    }
}

/// Rows of a table as the model reads them.
#[derive(Debug, Clone)]
pub struct EncodedRows {
    pub n: usize,
    pub n_numeric: usize,
    pub n_categorical: usize,
    /// Sample names (the id column, or `row<N>` with N the 1-based data row).
    pub ids: Vec<String>,
    /// Standardised numbers `[n, numeric columns]`, 0 where missing.
    pub numeric: Vec<f32>,
    /// 1 where the number is missing `[n, numeric columns]`.
    pub missing: Vec<f32>,
    /// Category slots `[n, categorical columns]` ([`MISSING`], [`UNKNOWN`], or seen ones).
    pub categories: Vec<u32>,
    /// Class indices, when the table has the label column.
    pub classes: Option<Vec<u32>>,
    /// Values of each categorical column not seen in training (counted, read as unknown).
    pub unknown: BTreeMap<String, usize>,
}

impl EncodedRows {
    /// Rows `idx` (positions in this set) as a new set.
    pub fn select(&self, idx: &[usize]) -> Self {
        let (n_num, n_cat) = (self.n_numeric, self.n_categorical);
        let take = |v: &[f32], w: usize| -> Vec<f32> {
            idx.iter()
                .flat_map(|&i| v[i * w..(i + 1) * w].iter().copied())
                .collect()
        };
        Self {
            n: idx.len(),
            n_numeric: n_num,
            n_categorical: n_cat,
            ids: idx.iter().map(|&i| self.ids[i].clone()).collect(),
            numeric: take(&self.numeric, n_num),
            missing: take(&self.missing, n_num),
            categories: idx
                .iter()
                .flat_map(|&i| self.categories[i * n_cat..(i + 1) * n_cat].iter().copied())
                .collect(),
            classes: self
                .classes
                .as_ref()
                .map(|c| idx.iter().map(|&i| c[i]).collect()),
            unknown: self.unknown.clone(),
        }
    }

    /// A note for the log on categories not seen in training, if there were any.
    pub fn unknown_note(&self) -> Option<String> {
        (!self.unknown.is_empty()).then(|| {
            format!(
                "values not seen in training, read as unknown: {}",
                self.unknown
                    .iter()
                    .map(|(c, n)| format!("{c} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }
}
