//! Classifiers of feature tables (`specs/attention-bert-tabular-example.md`, the "Actual
//! Example": a positive/negative call per sample from mixed numeric and categorical
//! measurements, with accuracy, sensitivity and specificity, and each sample's essential
//! features).
//!
//! - [`schema`]: the columns a model reads, fitted on the training rows (standardisation,
//!   category vocabularies with missing and unknown slots); [`EncodedRows`].
//! - [`config`]: [`TabularConfig`] (the schema and the architecture); [`model`]:
//!   [`TabularModel`] (FT-Transformer or MLP).
//! - [`task`]: [`TabularTask`]; [`args`]: the command line; [`split`]: stratified folds and
//!   hold-out; [`setup`]: `luminome-train tabular` (a split or k-fold CV) and its outputs.

pub mod args;
pub mod config;
pub mod explain;
pub mod model;
mod outputs;
pub mod predictor;
pub mod schema;
pub mod setup;
pub mod split;
pub mod task;

pub use config::{TabularArch, TabularConfig};
pub use model::{TabularModel, TabularTensors};
pub use predictor::TabularInput;
pub use schema::{EncodedRows, SchemaOptions, TabularSchema};
pub use setup::{first_setup, run, TabularArgs};
pub use task::TabularTask;
