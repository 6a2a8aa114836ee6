//! Masked-region pretraining of the region encoder (the spec's pre-training): a fraction
//! (default 0.5) of each sample's regions replaced by one learnable mask vector m ∈ R^F, the
//! encoder's states decoded back to F features by a linear layer, the loss on the masked regions
//! only (MSE, or BCE against the binarised features). With `--target accessibility` only the
//! masked regions' accessibility (the last feature) is hidden and reconstructed, from their own
//! motif features and their neighbours (docs/expression.md, "Pretraining that learns"). Needs no
//! expression: train it on
//! `luminome-regions --tile-step` windows. Its encoder initialises expression models
//! (`luminome-train expression --init`).
//!
//! - [`config`]: [`RegionPretrainConfig`]; [`model`]: [`RegionPretrainModel`].
//! - [`task`]: [`RegionPretrainTask`]; [`setup`]: `luminome-train region-pretrain`.

pub mod config;
pub mod model;
pub mod setup;
pub mod task;

pub use config::{PretrainLoss, PretrainTarget, RegionPretrainConfig};
pub use model::RegionPretrainModel;
pub use setup::RegionPretrainArgs;
pub use task::RegionPretrainTask;
