//! Token classifiers under `luminome-predict`: class probabilities (softmax of the logits) and
//! the predicted class per record, metrics from `luminome-metrics` when the dataset has labels.

use std::path::Path;

use anyhow::{Context, Result};
use candle_core::Device;
use luminome_metrics::{argmax, softmax, ClassificationMetrics};

use super::input::ClassifierInput;
use super::token_classifier::TokenClassifier;
use crate::models::FamilyConfig;
use crate::predict::{PredictionRow, Predictor};

pub struct ClassifierPredictor<C: FamilyConfig>
where
    C::Model: TokenClassifier,
{
    input: ClassifierInput<C>,
    /// The label value of each class.
    label_values: Vec<i64>,
    /// Class index of every labelled record predicted so far.
    truth: Vec<usize>,
    /// Their probabilities, row-major `[n, classes]`.
    probs: Vec<f64>,
}

impl<C: FamilyConfig> ClassifierPredictor<C>
where
    C::Model: TokenClassifier,
{
    pub fn open(checkpoint: &Path, dataset: &Path, device: Device) -> Result<Self> {
        let input = ClassifierInput::<C>::open(checkpoint, dataset, device)?;
        let label_values = input.model()?.label_values().to_vec();
        Ok(Self {
            input,
            label_values,
            truth: Vec::new(),
            probs: Vec::new(),
        })
    }
}

impl<C: FamilyConfig> Predictor for ClassifierPredictor<C>
where
    C::Model: TokenClassifier,
{
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
        c.extend(self.label_values.iter().map(|v| format!("prob_{v}")));
        c.push("predicted".into());
        c
    }

    fn predict(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>> {
        let logits = self.input.logits(records)?;
        let labels = if self.has_truth() {
            self.input.dataset.batch(records)?.labels
        } else {
            None
        };
        let label_values = &self.label_values;
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
            ClassificationMetrics::compute(&self.truth, &self.probs, self.label_values.len())
                .map_err(|e| anyhow::anyhow!("cannot compute metrics: {e}"))?;
        Ok(Some(m.rows()))
    }
}
