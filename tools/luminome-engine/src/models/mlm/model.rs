//! Encoder + BERT's masked-LM head; the loss is the (optionally weighted) cross-entropy at the
//! chosen positions of a masked batch (`luminome_io::masking`).

use std::sync::Arc;

use candle_core::{Tensor, D};
use candle_nn::VarBuilder;
use luminome_io::masking::MaskedBatch;

use super::config::MlmConfig;
use crate::backbones::{Backbone, BackboneConfig};
use crate::models::Model;
use crate::nn::{DropoutRng, LayerNorm, Linear};

/// BERT's prediction head: dense → GELU → LayerNorm → decoder over the vocabulary.
#[derive(Debug, Clone)]
pub struct MlmHead {
    dense: Linear,
    norm: LayerNorm,
    decoder: Linear,
}

impl MlmHead {
    /// Luminome's names: `dense`, `norm`, `decoder.{weight,bias}`.
    pub fn new(
        d_model: usize,
        vocab: usize,
        eps: f64,
        vb: VarBuilder,
    ) -> candle_core::Result<Self> {
        Ok(Self {
            dense: Linear::new(d_model, d_model, vb.pp("dense"))?,
            norm: LayerNorm::new(d_model, eps, vb.pp("norm"))?,
            decoder: Linear::new(d_model, vocab, vb.pp("decoder"))?,
        })
    }

    /// The ESM head of the published Nucleotide Transformer v2 (`EsmLMHead`), its names:
    /// `dense`, `layer_norm`, `decoder.weight` (no bias) and the separate `bias` added after it —
    /// the same computation.
    pub fn esm(
        d_model: usize,
        vocab: usize,
        eps: f64,
        vb: VarBuilder,
    ) -> candle_core::Result<Self> {
        let decoder = Linear::no_bias(d_model, vocab, vb.pp("decoder"))?;
        let bias = vb.get_with_hints(vocab, "bias", candle_nn::Init::Const(0.0))?;
        Ok(Self {
            dense: Linear::new(d_model, d_model, vb.pp("dense"))?,
            norm: LayerNorm::new(d_model, eps, vb.pp("layer_norm"))?,
            decoder: Linear::from_parts(decoder.weight().clone(), Some(bias)),
        })
    }

    pub fn forward(&self, h: &Tensor) -> candle_core::Result<Tensor> {
        let x = crate::nn::gelu(&self.dense.forward(h)?)?;
        self.decoder.forward(&self.norm.forward(&x)?)
    }
}

/// Encoder + MLM head. Parameters under `encoder.*` and `mlm_head.*` (Luminome's transformer) or
/// `esm.*` and `lm_head.*` (the Nucleotide Transformer v2); a classifier initialised from this
/// checkpoint takes the encoder's part.
#[derive(Debug, Clone)]
pub struct MlmModel {
    pub config: MlmConfig,
    pub encoder: Arc<dyn Backbone>,
    pub head: MlmHead,
}

impl MlmModel {
    pub fn new(cfg: &MlmConfig, vb: VarBuilder) -> candle_core::Result<Self> {
        let encoder = cfg.backbone.build(vb.clone())?;
        let head = match &cfg.backbone {
            BackboneConfig::NtV2(c) => MlmHead::esm(
                c.hidden_size,
                c.vocab_size,
                c.layer_norm_eps,
                vb.pp("lm_head"),
            )?,
            BackboneConfig::Transformer(e) => {
                MlmHead::new(e.d_model, e.vocab_size, e.layer_norm_eps, vb.pp("mlm_head"))?
            }
            other => {
                candle_core::bail!("no masked-LM head for the {} backbone", other.kind().name())
            }
        };
        Ok(Self {
            config: cfg.clone(),
            encoder,
            head,
        })
    }

    /// Logits `[B, L, V]` at every position.
    pub fn forward(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> candle_core::Result<Tensor> {
        self.head.forward(&self.encoder.forward(ids, mask, rng)?)
    }

    /// Weighted mean cross-entropy at the chosen positions of a masked batch: Σ w_i CE_i / Σ w_i.
    /// Returns (loss, number of positions correctly predicted).
    pub fn loss(
        &self,
        batch: &MaskedBatch,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> candle_core::Result<(Tensor, usize)> {
        let dev = mask.device();
        let (b, l) = mask.dims2()?;
        let ids = Tensor::from_slice(&batch.input_ids, (b, l), dev)?;
        let h = self.encoder.forward(&ids, mask, rng)?;
        let d = h.dim(D::Minus1)?;
        // Only the chosen positions go through the head.
        let pos = Tensor::from_slice(&batch.positions, batch.positions.len(), dev)?;
        let hs = h.reshape((b * l, d))?.index_select(&pos, 0)?;
        let logits = self.head.forward(&hs)?;
        let targets = Tensor::from_slice(&batch.targets, batch.targets.len(), dev)?;
        let logp = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
        let nll = logp.gather(&targets.unsqueeze(1)?, 1)?.squeeze(1)?.neg()?;
        let w =
            Tensor::from_slice(&batch.weights, batch.weights.len(), dev)?.to_dtype(nll.dtype())?;
        let total_w: f32 = batch.weights.iter().sum();
        let loss = ((nll * w)?.sum_all()? / total_w as f64)?;
        let pred: Vec<u32> = logits.argmax(D::Minus1)?.to_vec1()?;
        let correct = pred
            .iter()
            .zip(&batch.targets)
            .filter(|(p, t)| p == t)
            .count();
        Ok((loss, correct))
    }
}

impl Model for MlmModel {}
