//! Sequence classifiers: class probabilities (softmax of the logits) and the predicted class per
//! record, metrics from `luminome-metrics` when the dataset has labels.

use std::path::Path;

use anyhow::{Context, Result};
use candle_core::Device;
use luminome_engine::batch_tensors;
use luminome_metrics::{argmax, ClassificationMetrics};

use crate::input::ClassifierInput;
use crate::predictor::{PredictionRow, Predictor};

pub struct ClassifierPredictor {
    input: ClassifierInput,
    /// Class index of every labelled record predicted so far.
    truth: Vec<usize>,
    /// Their probabilities, row-major `[n, classes]`.
    probs: Vec<f64>,
}

/// Softmax of one row of logits, computed in f64 with the maximum subtracted.
pub fn softmax(logits: &[f32]) -> Vec<f64> {
    let max = logits
        .iter()
        .fold(f64::NEG_INFINITY, |m, &x| m.max(f64::from(x)));
    let exp: Vec<f64> = logits.iter().map(|&x| (f64::from(x) - max).exp()).collect();
    let sum: f64 = exp.iter().sum();
    exp.into_iter().map(|e| e / sum).collect()
}

impl ClassifierPredictor {
    pub fn open(checkpoint: &Path, dataset: &Path, device: Device) -> Result<Self> {
        Ok(Self {
            input: ClassifierInput::open(checkpoint, dataset, device)?,
            truth: Vec::new(),
            probs: Vec::new(),
        })
    }

    /// Logits `[records, classes]` of a batch of records.
    pub fn logits(input: &ClassifierInput, records: &[usize]) -> Result<Vec<Vec<f32>>> {
        let batch = input.batch(records)?;
        let t = batch_tensors(&batch, &input.device)?;
        let out = input.classifier()?.forward(&t.ids, &t.mask, None)?;
        out.logits
            .to_dtype(candle_core::DType::F32)?
            .to_vec2::<f32>()
            .context("cannot read the logits")
    }
}

impl Predictor for ClassifierPredictor {
    fn len(&self) -> usize {
        self.input.dataset.len()
    }

    fn has_truth(&self) -> bool {
        self.input.dataset.has_labels()
    }

    fn columns(&self) -> Vec<String> {
        let mut c = Vec::new();
        if self.has_truth() {
            c.push("label".to_string());
        }
        c.extend(
            self.input
                .config
                .label_values
                .iter()
                .map(|v| format!("prob_{v}")),
        );
        c.push("predicted".into());
        c
    }

    fn predict(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>> {
        let logits = Self::logits(&self.input, records)?;
        let labels = if self.has_truth() {
            self.input.dataset.batch(records)?.labels
        } else {
            None
        };
        let label_values = &self.input.config.label_values;
        let mut rows = Vec::with_capacity(records.len());
        for (i, &r) in records.iter().enumerate() {
            let p = softmax(&logits[i]);
            let mut values = Vec::with_capacity(p.len() + 2);
            if let Some(l) = &labels {
                values.push(l[i].to_string());
                // Checked when the dataset was opened: every label is a class.
                let class = label_values
                    .iter()
                    .position(|&v| v == l[i])
                    .with_context(|| format!("label {} is not a class of the model", l[i]))?;
                self.truth.push(class);
                self.probs.extend(&p);
            }
            values.extend(p.iter().map(|x| format!("{x:.6}")));
            values.push(label_values[argmax(&p)].to_string());
            rows.push(PredictionRow {
                record: self.input.index[r].record,
                name: self.input.index[r].name.clone(),
                values,
            });
        }
        Ok(rows)
    }

    fn metrics(&self) -> Result<Option<Vec<(String, String)>>> {
        if !self.has_truth() || self.truth.is_empty() {
            return Ok(None);
        }
        let m =
            ClassificationMetrics::compute(&self.truth, &self.probs, self.input.config.num_classes)
                .map_err(|e| anyhow::anyhow!("cannot compute metrics: {e}"))?;
        Ok(Some(m.rows()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_sums_to_one_and_survives_large_logits() {
        // exp(1000) overflows; the shifted form gives 1 / (1 + e) and e / (1 + e).
        let p = softmax(&[1000.0, 1001.0]);
        let e = std::f64::consts::E;
        assert!(
            (p[0] - 1.0 / (1.0 + e)).abs() < 1e-12 && (p[1] - e / (1.0 + e)).abs() < 1e-12,
            "{p:?}"
        );
        let p = softmax(&[0.1, -2.0, 3.5]);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
