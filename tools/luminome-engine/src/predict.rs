//! What a family implements to run under `luminome-predict`: a [`Predictor`] bound to a dataset,
//! opened through [`PredictFamily`]. `luminome-predict` lists the families it runs, one
//! [`PredictorEntry`] each; the run loop, outputs and metrics handling are its own.

use std::path::Path;

use anyhow::Result;
use candle_core::Device;

use crate::models::FamilyConfig;

/// A model bound to the dataset it predicts on.
pub trait Predictor {
    /// Records in the dataset.
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether true values are known (a truth column is written and metrics computed).
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

/// A family that `luminome-predict` can run.
pub trait PredictFamily: FamilyConfig {
    /// Opens a checkpoint of this family on a dataset, with every check done before output.
    fn open_predictor(
        checkpoint: &Path,
        dataset: &Path,
        device: Device,
    ) -> Result<Box<dyn Predictor>>;
}

/// One family in `luminome-predict`'s list.
pub struct PredictorEntry {
    pub kind: &'static str,
    pub family: &'static str,
    pub open: fn(&Path, &Path, Device) -> Result<Box<dyn Predictor>>,
}

impl PredictorEntry {
    pub fn of<C: PredictFamily>() -> Self {
        Self {
            kind: C::KIND,
            family: C::FAMILY,
            open: C::open_predictor,
        }
    }
}
