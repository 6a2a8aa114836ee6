//! The sequence-classifier family: a backbone (the transformer encoder) with one of the four
//! adapters of the adapters spec (LinearCLS, LinearMeanPool, LinearMaxPool, DynamicGated).
//!
//! - [`config`]: [`ClassifierConfig`], [`AdapterKind`]; [`model`]: [`Classifier`];
//!   [`adapters`]: the four adapters.
//! - [`token_classifier`]: the [`TokenClassifier`] trait that the task, input checks and
//!   predictor below work with, so other token-classification families reuse them.
//! - [`task`]: training ([`ClassifierTask`]) and class probabilities; [`setup`]:
//!   `luminome-train classify` and the labelled datasets of any classification run.
//! - [`input`]: a checkpoint and a dataset checked against each other ([`ClassifierInput`]);
//!   [`predictor`]: `luminome-predict` for classifiers.

pub mod adapters;
pub mod config;
pub mod input;
pub mod model;
pub mod predictor;
pub mod published;
pub mod setup;
pub mod task;
pub mod token_classifier;

use std::path::Path;

use anyhow::Result;
use candle_core::Device;

pub use config::{AdapterKind, ClassifierConfig};
pub use input::ClassifierInput;
pub use model::Classifier;
pub use predictor::ClassifierPredictor;
pub use setup::{ClassificationArgs, ClassificationData, ClassifyArgs};
pub use task::{class_indices, dataset_classes, predict_probs, ClassifierTask, LabelledSet};
pub use token_classifier::TokenClassifier;

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
