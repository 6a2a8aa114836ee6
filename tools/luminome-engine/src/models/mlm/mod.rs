//! The masked-LM family: a transformer encoder with BERT's prediction head, pretrained with 15 %
//! of tokens masked (80 % [MASK], 10 % random, 10 % kept). Its encoder initialises classifiers
//! (`luminome-train classify --init`).
//!
//! - [`config`]: [`MlmConfig`]; [`model`]: [`MlmModel`], [`MlmHead`].
//! - [`task`]: [`MlmTask`] (masking comes from `luminome_io::masking`, the data side).
//! - [`setup`]: `luminome-train mlm` ([`MlmArgs`]).

pub mod config;
pub mod model;
pub mod setup;
pub mod task;

pub use config::MlmConfig;
pub use model::{MlmHead, MlmModel};
pub use setup::MlmArgs;
pub use task::MlmTask;
