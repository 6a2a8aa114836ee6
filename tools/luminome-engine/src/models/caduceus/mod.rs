//! Caduceus and PlantCaduceus, the published bidirectional, RC-equivariant Mamba DNA language
//! models (docs/pretrained-models.md), loaded from their authors' Hugging Face layout unchanged
//! (`config.json` + `model.safetensors` + the tokenizer's files) and run on any device, no
//! mamba-ssm or CUDA needed.
//!
//! - [`config`]: `CaduceusConfig` as published; [`weights`]: the safetensors file, every tensor
//!   accounted for; [`model`]: the architecture; [`predictor`]: zero-shot variant effects and
//!   embeddings under `luminome-predict`.
//!
//! Not trained here: these are published checkpoints, opened by folder or `hf:ORG/NAME`, not
//! Luminome checkpoints of the registry (models/mod.rs).

pub mod config;
pub mod model;
pub mod predictor;
pub mod weights;

use anyhow::{Context, Result};
use candle_core::Device;
use luminome_io::hf_checkpoint::HfCheckpoint;
use luminome_io::token_dataset::TokenizerInfo;

pub use config::CaduceusConfig;
pub use model::{CaduceusModel, CaduceusOutput};
pub use predictor::CaduceusPredictor;
use weights::Weights;

/// Whether `arg` names a published checkpoint (a folder, or `hf:`) rather than a Luminome
/// checkpoint file.
pub fn is_published_checkpoint(arg: &std::path::Path) -> bool {
    arg.to_str().is_some_and(|s| s.starts_with("hf:")) || arg.is_dir()
}

/// A published Caduceus checkpoint, loaded.
pub struct Caduceus {
    pub checkpoint: HfCheckpoint,
    pub model: CaduceusModel,
    /// The model's own tokenizer (what `luminome-mask-pairs --like` writes datasets in).
    pub tokenizer: TokenizerInfo,
}

impl Caduceus {
    /// Opens `arg` (a folder or `hf:ORG/NAME[@REVISION]`) on `device`.
    pub fn open(arg: &str, device: &Device) -> Result<Self> {
        let checkpoint = luminome_cli::hub::open_checkpoint(arg)?;
        let config =
            CaduceusConfig::from_json(&checkpoint.config_text()?, &format!("{arg}: config.json"))?;
        let tokenizer = checkpoint.tokenizer()?;
        if tokenizer.vocab_size() > config.padded_vocab() {
            anyhow::bail!(
                "{arg}: the tokenizer has {} tokens, the model {}",
                tokenizer.vocab_size(),
                config.padded_vocab()
            );
        }
        let weights = Weights::open(&checkpoint.weights_path(), device)?;
        let model = CaduceusModel::load(&config, &weights)
            .with_context(|| format!("{arg}: loading the Caduceus model"))?;
        Ok(Self {
            checkpoint,
            model,
            tokenizer,
        })
    }
}

#[cfg(test)]
mod tests;
