//! The observed-expression column and the regression metrics (over all samples, then per cell
//! type) that every expression predictor writes: Luminome's expression family and GET.

use std::collections::BTreeMap;

use luminome_metrics::RegressionMetrics;

/// Regression metrics over `scored` (cell type, observed, predicted), then per cell type in
/// `cell_types`' order with the cell type as prefix (shared by every expression predictor).
pub fn metrics_by_cell_type(
    scored: &[(String, f64, f64)],
    cell_types: &[String],
) -> Vec<(String, String)> {
    let metrics = |rows: &[&(String, f64, f64)]| {
        let y: Vec<f64> = rows.iter().map(|r| r.1).collect();
        let p: Vec<f64> = rows.iter().map(|r| r.2).collect();
        RegressionMetrics::compute(&y, &p)
    };
    let all: Vec<&(String, f64, f64)> = scored.iter().collect();
    let mut out = metrics(&all).rows("");
    let mut by_cell: BTreeMap<&str, Vec<&(String, f64, f64)>> = BTreeMap::new();
    for r in scored {
        by_cell.entry(r.0.as_str()).or_default().push(r);
    }
    for cell in cell_types {
        if let Some(rows) = by_cell.get(cell.as_str()) {
            out.extend(metrics(rows).rows(&format!("{cell}.")));
        }
    }
    out
}

/// The `observed` column of an expression row (NA for a missing value) and, when both the
/// prediction `p` and the value are there, the pair kept for the metrics.
pub(crate) fn observed_column(
    values: &mut Vec<String>,
    scored: &mut Vec<(String, f64, f64)>,
    observed: Option<f32>,
    cell_type: &str,
    p: Option<f32>,
) {
    let Some(y) = observed else {
        return;
    };
    values.push(if y.is_nan() {
        "NA".into()
    } else {
        y.to_string()
    });
    if let (Some(p), false) = (p, y.is_nan()) {
        scored.push((cell_type.to_string(), f64::from(y), f64::from(p)));
    }
}
