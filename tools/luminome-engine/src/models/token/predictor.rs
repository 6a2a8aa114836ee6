//! Token classifiers under `luminome-predict`: class probabilities (softmax of the logits) and
//! the predicted class per record, metrics from `luminome-metrics` when the dataset has labels.
//! The same rows, columns and metrics serve an ensemble of classifiers ([`crate::predict::EnsemblePredictor`]),
//! which averages the members' [`ClassBatch`]es; the rows and metrics are [`ClassOutputs`].

use std::path::Path;

use anyhow::Result;
use candle_core::Device;
use luminome_metrics::softmax;

use super::classifier::TokenClassifier;
use super::input::ClassifierInput;
use crate::models::FamilyConfig;
use crate::predict::{
    ClassBatch, ClassOutputs, ClassProbabilities, PredictionRow, Predictor, Tallied,
};

pub struct ClassifierPredictor<C: FamilyConfig>
where
    C::Model: TokenClassifier,
{
    input: ClassifierInput<C>,
    outputs: ClassOutputs,
}

impl<C: FamilyConfig> ClassifierPredictor<C>
where
    C::Model: TokenClassifier,
{
    pub fn open(checkpoint: &Path, dataset: &Path, device: Device) -> Result<Self> {
        let input = ClassifierInput::<C>::open(checkpoint, dataset, device)?;
        let label_values = input.model()?.label_values().to_vec();
        let has_truth = input.dataset.has_labels();
        Ok(Self {
            input,
            outputs: ClassOutputs::new(label_values, has_truth),
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
        self.outputs.columns()
    }

    fn predict(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>> {
        let batch = self.class_probabilities(records)?;
        self.outputs.rows(batch)
    }

    fn metrics(&self) -> Result<Option<Vec<(String, String)>>> {
        Ok(self.outputs.metrics()?.map(|m| m.rows()))
    }

    fn tallied(&mut self) -> Option<&mut dyn Tallied> {
        self.outputs.tallied()
    }

    fn classes(&mut self) -> Option<&mut dyn ClassProbabilities> {
        Some(self)
    }
}

impl<C: FamilyConfig> ClassProbabilities for ClassifierPredictor<C>
where
    C::Model: TokenClassifier,
{
    fn class_labels(&self) -> &[i64] {
        &self.outputs.label_values
    }

    fn class_probabilities(&mut self, records: &[usize]) -> Result<ClassBatch> {
        let logits = self.input.logits(records)?;
        let labels = if self.has_truth() {
            self.input.dataset.batch(records)?.labels
        } else {
            None
        };
        Ok(ClassBatch {
            records: records
                .iter()
                .map(|&r| (self.input.index[r].record, self.input.index[r].name.clone()))
                .collect(),
            labels,
            probs: logits.iter().map(|l| softmax(l)).collect(),
        })
    }
}
