//! The bi-strand cross-attention masked LM (docs/bistrand.md): two strands with the same
//! positions masked, each through its own embedding, short convolution and bidirectional
//! selective state-space layers, cross-attention both ways, fusion, per-strand LM heads over
//! A/C/G/T, loss L_a + L_b. Reads `luminome_io::pair_dataset` datasets (luminome-mask-pairs);
//! scores variants under luminome-predict.
//!
//! - [`config`]: [`BiStrandConfig`] (and the state-space initialisation); [`model`]:
//!   [`BiStrandModel`], cross-attention; [`mixer`]: convolution + BiMamba layers per strand;
//!   the selective scan and short convolution are `nn::scan` and `nn::depthwise_conv`.
//! - [`task`]: training; [`setup`]: `luminome-train bistrand`; [`predictor`]: variant scores and
//!   masked-base evaluation.

pub mod config;
pub mod mixer;
pub mod model;
pub mod predictor;
pub mod setup;
pub mod task;

use std::path::Path;

use anyhow::Result;
use candle_core::Device;

pub use config::BiStrandConfig;
pub use model::BiStrandModel;
pub use predictor::{PairInput, PairPredictor};
pub use setup::BiStrandArgs;
pub use task::BiStrandTask;

use crate::predict::{PredictFamily, Predictor};

impl PredictFamily for BiStrandConfig {
    fn open_predictor(
        checkpoint: &Path,
        dataset: &Path,
        device: Device,
    ) -> Result<Box<dyn Predictor>> {
        Ok(Box::new(PairPredictor::open(checkpoint, dataset, device)?))
    }
}

#[cfg(test)]
mod tests;
