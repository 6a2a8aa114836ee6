//! Sequence classifiers: class probabilities (softmax of the logits) and the predicted class per
//! record, metrics from `luminome-metrics` when the dataset has labels.

use std::path::Path;

use anyhow::{Context, Result};
use candle_core::Device;
use luminome_engine::batch_tensors;
use luminome_metrics::{argmax, softmax, ClassificationMetrics};

use crate::input::ClassifierInput;
use crate::predictor::{PredictionRow, Predictor};

pub struct ClassifierPredictor {
    input: ClassifierInput,
    /// Class index of every labelled record predicted so far.
    truth: Vec<usize>,
    /// Their probabilities, row-major `[n, classes]`.
    probs: Vec<f64>,
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
