//! The rows, columns and metrics of class probabilities, shared by every classifier family's
//! predictor and by [`super::EnsemblePredictor`], which averages several.

use anyhow::{bail, Context, Result};
use luminome_metrics::{argmax, ClassificationMetrics};

use super::{ClassBatch, PredictionRow, Tallied, Tally};

/// The label values of a classifier's classes and everything it has predicted: the output
/// columns, the rows and the metrics of one classifier or of an ensemble.
pub struct ClassOutputs {
    /// The label value of each class.
    pub label_values: Vec<i64>,
    has_truth: bool,
    /// Class index of every labelled record predicted so far.
    truth: Vec<usize>,
    /// Their probabilities, row-major `[n, classes]`.
    probs: Vec<f64>,
    /// The labelled records predicted since [`Tallied::start_tally`] (a shard's part: their
    /// labels and probabilities are `truth` and `probs` from `tally_from` on).
    tally_records: Option<Vec<u64>>,
    tally_from: usize,
}

impl ClassOutputs {
    pub fn new(label_values: Vec<i64>, has_truth: bool) -> Self {
        Self {
            label_values,
            has_truth,
            truth: Vec::new(),
            probs: Vec::new(),
            tally_records: None,
            tally_from: 0,
        }
    }

    /// `[label]  prob_<value>...  predicted`.
    pub fn columns(&self) -> Vec<String> {
        let mut c = Vec::new();
        if self.has_truth {
            c.push("label".to_string());
        }
        c.extend(self.label_values.iter().map(|v| format!("prob_{v}")));
        c.push("predicted".into());
        c
    }

    /// Records `batch`'s truth and probabilities for the metrics (when it has labels).
    pub fn record(&mut self, batch: &ClassBatch) -> Result<()> {
        let Some(labels) = &batch.labels else {
            return Ok(());
        };
        if let Some(records) = &mut self.tally_records {
            records.extend(batch.records.iter().map(|(r, _)| *r));
        }
        for (l, p) in labels.iter().zip(&batch.probs) {
            // Checked when the dataset was opened: every label is a class.
            let class = self
                .label_values
                .iter()
                .position(|v| v == l)
                .with_context(|| format!("label {l} is not a class of the model"))?;
            self.truth.push(class);
            self.probs.extend(p);
        }
        Ok(())
    }

    /// As [`Tallied`] when there are labels (the metrics need them; without, only the TSV).
    pub fn tallied(&mut self) -> Option<&mut dyn Tallied> {
        if self.has_truth {
            Some(self)
        } else {
            None
        }
    }

    /// Records `batch` ([`ClassOutputs::record`]) and formats its rows.
    pub fn rows(&mut self, batch: ClassBatch) -> Result<Vec<PredictionRow>> {
        self.record(&batch)?;
        let label_values = &self.label_values;
        let mut rows = Vec::with_capacity(batch.probs.len());
        for (i, ((record, name), p)) in batch.records.into_iter().zip(batch.probs).enumerate() {
            let mut values = Vec::with_capacity(p.len() + 2);
            if let Some(l) = &batch.labels {
                values.push(l[i].to_string());
            }
            values.extend(p.iter().map(|x| format!("{x:.6}")));
            values.push(label_values[argmax(&p)].to_string());
            rows.push(PredictionRow {
                record,
                name,
                values,
            });
        }
        Ok(rows)
    }

    /// The metrics over every labelled record seen; `None` without labels.
    pub fn metrics(&self) -> Result<Option<ClassificationMetrics>> {
        if !self.has_truth || self.truth.is_empty() {
            return Ok(None);
        }
        ClassificationMetrics::compute(&self.truth, &self.probs, self.label_values.len())
            .map(Some)
            .map_err(|e| anyhow::anyhow!("cannot compute metrics: {e}"))
    }
}

/// What the metrics are computed from: each labelled record's label value, then its
/// probabilities.
impl Tallied for ClassOutputs {
    fn start_tally(&mut self) {
        self.tally_records = Some(Vec::new());
        self.tally_from = self.truth.len();
    }

    fn tally(&self) -> Tally {
        let classes = self.label_values.len();
        let mut values = Vec::new();
        for (i, &class) in self.truth.iter().enumerate().skip(self.tally_from) {
            values.push(self.label_values[class] as f64);
            values.extend(&self.probs[i * classes..(i + 1) * classes]);
        }
        Tally {
            width: 1 + classes,
            records: self.tally_records.clone().unwrap_or_default(),
            values,
        }
    }

    fn replay(&mut self, tally: &Tally) -> Result<()> {
        let width = 1 + self.label_values.len();
        if tally.width != width || tally.values.len() != width * tally.records.len() {
            bail!(
                "a shard's tally holds {} values per record, not a label and {} probabilities",
                tally.width,
                self.label_values.len()
            );
        }
        let rows = tally.values.chunks_exact(width);
        let batch = ClassBatch {
            records: tally.records.iter().map(|&r| (r, String::new())).collect(),
            labels: Some(rows.clone().map(|v| v[0] as i64).collect()),
            probs: rows.map(|v| v[1..].to_vec()).collect(),
        };
        self.record(&batch)
    }
}
