//! What every model family implements to run under `luminome-predict`, and the dispatch on a
//! checkpoint's model kind. A new family (expression, masked LM) adds a [`Predictor`] and one
//! arm in [`open_predictor`]; the run loop, output and metrics handling stay as they are.

use std::path::Path;

use anyhow::{bail, Result};
use candle_core::Device;
use luminome_engine::checkpoint::read_checkpoint_meta;
use luminome_engine::ModelConfig;

use crate::classify::ClassifierPredictor;
use crate::input::model_family;

/// A model bound to the dataset it predicts on.
pub trait Predictor {
    /// Records in the dataset.
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether true values are known (a label column is written and metrics computed).
    fn has_truth(&self) -> bool;

    /// Output columns after `record` and `name`.
    fn columns(&self) -> Vec<String>;

    /// Predicts `records` (dataset row numbers, ascending): for each, its record number, its
    /// name and one value per [`Predictor::columns`] entry.
    fn predict(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>>;

    /// Metrics over everything predicted so far, as `(metric, value)` rows; `None` without truth.
    fn metrics(&self) -> Result<Option<Vec<(String, String)>>>;
}

/// One output line.
pub struct PredictionRow {
    pub record: u64,
    pub name: String,
    pub values: Vec<String>,
}

/// Reads the checkpoint's model kind and opens the matching predictor on `dataset`.
pub fn open_predictor(
    checkpoint: &Path,
    dataset: &Path,
    device: Device,
) -> Result<Box<dyn Predictor>> {
    let meta = read_checkpoint_meta(checkpoint)?;
    match &meta.model {
        ModelConfig::Classifier(_) => Ok(Box::new(ClassifierPredictor::open(checkpoint, dataset, device)?)),
        other => bail!(
            "{}: this checkpoint holds a {} (kind {}); luminome-predict runs sequence classifiers (kind classifier)",
            checkpoint.display(),
            model_family(other),
            other.kind()
        ),
    }
}
