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

/// A shard's tally of an expression predictor: per predicted sample, why it has no prediction
/// (0: it has one; otherwise the predictor's own reason code), the prediction and the observed
/// value (NaN when none; f32 values, exact in f64) — all the metrics are computed from.
#[derive(Default)]
pub(crate) struct SampleTally(Option<crate::predict::Tally>);

/// A [`SampleTally`] row: reason, predicted, observed.
const SAMPLE_TALLY_WIDTH: usize = 3;

/// One replayed sample: its number, why it has no prediction (0: it has one), the prediction,
/// the observed value.
pub(crate) type TalliedSample = (usize, u8, Option<f32>, f32);

impl SampleTally {
    pub fn start(&mut self) {
        self.0 = Some(crate::predict::Tally {
            width: SAMPLE_TALLY_WIDTH,
            ..Default::default()
        });
    }

    /// Sample number `record` (as the predictor numbers them), when a tally is kept.
    pub fn push(&mut self, record: usize, reason: u8, p: Option<f32>, observed: Option<f32>) {
        if let Some(t) = &mut self.0 {
            t.records.push(record as u64);
            t.values.extend([
                f64::from(reason),
                f64::from(p.unwrap_or(f32::NAN)),
                f64::from(observed.unwrap_or(f32::NAN)),
            ]);
        }
    }

    pub fn get(&self) -> crate::predict::Tally {
        self.0.clone().unwrap_or_default()
    }

    /// A part's rows as (sample number, reason, prediction, observed), checked to be this
    /// tally's shape and every sample number below `n`.
    pub fn rows(tally: &crate::predict::Tally, n: usize) -> anyhow::Result<Vec<TalliedSample>> {
        let w = SAMPLE_TALLY_WIDTH;
        if tally.width != w || tally.values.len() != w * tally.records.len() {
            anyhow::bail!(
                "a shard's tally holds {} values per sample, not an expression predictor's {w}",
                tally.width
            );
        }
        tally
            .records
            .iter()
            .zip(tally.values.chunks_exact(w))
            .map(|(&i, v)| {
                let i = usize::try_from(i).ok().filter(|&i| i < n);
                let i =
                    i.ok_or_else(|| anyhow::anyhow!("a shard's tally names a sample beyond {n}"))?;
                let reason = v[0] as u8;
                Ok((i, reason, (reason == 0).then_some(v[1] as f32), v[2] as f32))
            })
            .collect()
    }
}
