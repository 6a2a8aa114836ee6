//! Sequence classifier: encoder + one of the four adapters.

use candle_core::{Result, Tensor};
use candle_nn::VarBuilder;

use crate::adapters::{Adapter, AdapterOutput};
use crate::config::ClassifierConfig;
use crate::encoder::Encoder;
use crate::ops::DropoutRng;

/// Parameters live under `encoder.*` and `adapter.*`.
#[derive(Debug, Clone)]
pub struct Classifier {
    pub config: ClassifierConfig,
    pub encoder: Encoder,
    pub adapter: Adapter,
}

impl Classifier {
    pub fn new(cfg: &ClassifierConfig, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            config: cfg.clone(),
            encoder: Encoder::new(&cfg.encoder, vb.pp("encoder"))?,
            adapter: Adapter::new(
                cfg.adapter,
                cfg.encoder.d_model,
                cfg.num_classes,
                cfg.encoder.layer_norm_eps,
                vb.pp("adapter"),
            )?,
        })
    }

    /// Token embeddings of ids `[B, L]` (u32), see [`Encoder::embed`].
    pub fn embed(&self, ids: &Tensor) -> Result<Tensor> {
        self.encoder.embed(ids)
    }

    /// Logits `[B, C]` (and gates for the gated adapter) from token embeddings `[B, L, D]`.
    pub fn forward_from_embeddings(
        &self,
        emb: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> Result<AdapterOutput> {
        let h = self.encoder.forward_from_embeddings(emb, mask, rng)?;
        self.adapter.forward(&h, mask)
    }

    /// Logits `[B, C]` (and gates for the gated adapter) from ids `[B, L]` and mask `[B, L]`.
    pub fn forward(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> Result<AdapterOutput> {
        self.forward_from_embeddings(&self.embed(ids)?, mask, rng)
    }

    /// Like [`Classifier::forward`], with the encoder output detached so that no gradient
    /// reaches the encoder (fine-tuning with a frozen encoder).
    pub fn forward_frozen_encoder(&self, ids: &Tensor, mask: &Tensor) -> Result<AdapterOutput> {
        let h = self.encoder.forward(ids, mask, None)?.detach();
        self.adapter.forward(&h, mask)
    }
}

/// Mean cross-entropy of logits `[B, C]` against class indices `[B]` (u32).
pub fn cross_entropy(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    candle_nn::loss::cross_entropy(logits, targets)
}
