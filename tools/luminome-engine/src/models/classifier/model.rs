//! Sequence classifier: a backbone + one of the four adapters.

use std::sync::Arc;

use candle_core::{Result, Tensor};
use candle_nn::VarBuilder;

use super::adapters::{Adapter, AdapterOutput};
use super::config::ClassifierConfig;
use crate::backbones::Backbone;
use crate::models::token::TokenClassifier;
use crate::models::Model;
use crate::nn::DropoutRng;

/// Parameters live under the backbone's prefix (`encoder.*`) and `adapter.*`.
#[derive(Debug, Clone)]
pub struct Classifier {
    pub config: ClassifierConfig,
    pub backbone: Arc<dyn Backbone>,
    pub adapter: Adapter,
    /// Training with a frozen backbone: its output is detached (and run without dropout), so
    /// only the adapter learns. Not part of the config: a training setting.
    pub frozen_backbone: bool,
}

impl Classifier {
    pub fn new(cfg: &ClassifierConfig, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            config: cfg.clone(),
            backbone: cfg.backbone.build(vb.clone())?,
            adapter: Adapter::new(
                cfg.adapter,
                cfg.backbone.hidden_size(),
                cfg.num_classes,
                cfg.backbone.layer_norm_eps(),
                cfg.gate_score_scale,
                vb.pp("adapter"),
            )?,
            frozen_backbone: false,
        })
    }

    /// Input embeddings of ids `[B, L]` (u32), see [`Backbone::embed`].
    pub fn embed(&self, ids: &Tensor) -> Result<Tensor> {
        self.backbone.embed(ids)
    }

    /// Logits `[B, C]` (and gates for the gated adapter) from input embeddings `[B, L, D]`.
    /// With `rc_average` and outside training (`rng` None), the mean of the logits of the input
    /// and of its reverse complement, and the mean of their gates (the reverse strand's moved
    /// back to forward positions).
    pub fn forward_from_embeddings(
        &self,
        emb: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> Result<AdapterOutput> {
        let forward = self.one_strand(emb, mask, rng)?;
        let (Some(rc), None) = (&self.config.rc_average, rng) else {
            return Ok(forward);
        };
        let reverse = self.one_strand(&rc.one_hot(emb, mask)?, mask, None)?;
        let gates = match (forward.gates, reverse.gates) {
            (Some(f), Some(r)) => Some(((f + rc.back_to_forward(&r, mask)?)? * 0.5)?),
            _ => None,
        };
        Ok(AdapterOutput {
            logits: ((forward.logits + reverse.logits)? * 0.5)?,
            gates,
        })
    }

    /// The backbone and adapter on one strand (the backbone detached and without dropout when
    /// it is frozen).
    fn one_strand(
        &self,
        emb: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> Result<AdapterOutput> {
        let h = if self.frozen_backbone {
            self.backbone
                .forward_from_embeddings(emb, mask, None)?
                .detach()
        } else {
            self.backbone.forward_from_embeddings(emb, mask, rng)?
        };
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
}

impl Model for Classifier {}

impl TokenClassifier for Classifier {
    fn label_values(&self) -> &[i64] {
        &self.config.label_values
    }

    fn max_length(&self) -> usize {
        self.config.backbone.max_length()
    }

    fn logits(&self, ids: &Tensor, mask: &Tensor, rng: Option<&DropoutRng>) -> Result<Tensor> {
        Ok(self.forward(ids, mask, rng)?.logits)
    }
}
