//! The sequence-classifier family: a backbone (the transformer encoder) with one of the four
//! adapters of the adapters spec (LinearCLS, LinearMeanPool, LinearMaxPool, DynamicGated) or
//! gated-max (DynamicGated plus a max-pooled head; the default).
//!
//! - [`config`]: [`ClassifierConfig`], [`AdapterKind`]; [`model`]: [`Classifier`];
//!   [`adapters`]: the five adapters; [`published`]: DNABERT-2 and NT-v2 checkpoints as backbones.
//! - [`setup`]: `luminome-train classify`.
//!
//! Training, the input checks and the predictor are those of every token classifier
//! (`models/token/`).

pub mod adapters;
pub mod config;
pub mod model;
pub mod published;
pub mod setup;

use std::path::Path;

use anyhow::Result;
use candle_core::Device;

pub use config::{AdapterKind, ClassifierConfig};
pub use model::Classifier;
pub use setup::ClassifyArgs;

use crate::models::token::ClassifierPredictor;
use crate::predict::{PredictFamily, Predictor};

impl PredictFamily for ClassifierConfig {
    const ENSEMBLES: bool = true;

    fn open_predictor(
        checkpoint: &Path,
        dataset: &Path,
        device: Device,
    ) -> Result<Box<dyn Predictor>> {
        Ok(Box::new(ClassifierPredictor::<Self>::open(
            checkpoint, dataset, device,
        )?))
    }
}
