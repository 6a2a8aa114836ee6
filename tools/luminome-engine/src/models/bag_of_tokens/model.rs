//! logits = (Σ_i m_i W[x_i]) / Σ_i m_i + b: the mean over real tokens (mask m) of a learned row
//! of class weights per token, plus a bias — logistic regression on token frequencies.

use candle_core::{Module, Result, Tensor};
use candle_nn::{Embedding, VarBuilder};

use super::config::BagOfTokensConfig;
use crate::models::token::TokenClassifier;
use crate::models::Model;
use crate::nn::{add_bias, masked_mean, DropoutRng};

/// Parameters: `token_weights.weight` `[vocab, classes]`, `bias` `[classes]`.
#[derive(Debug, Clone)]
pub struct BagOfTokens {
    pub config: BagOfTokensConfig,
    token_weights: Embedding,
    bias: Tensor,
}

impl BagOfTokens {
    pub fn new(cfg: &BagOfTokensConfig, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            config: cfg.clone(),
            token_weights: candle_nn::embedding(
                cfg.vocab_size,
                cfg.num_classes,
                vb.pp("token_weights"),
            )?,
            bias: vb.get_with_hints(cfg.num_classes, "bias", candle_nn::Init::Const(0.0))?,
        })
    }

    /// Logits `[B, C]` of ids `[B, L]` with mask `[B, L]`.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let per_token = self.token_weights.forward(ids)?; // [B, L, C]
        add_bias(&masked_mean(&per_token, mask, 1e-9)?, &self.bias)
    }
}

impl Model for BagOfTokens {}

impl TokenClassifier for BagOfTokens {
    fn label_values(&self) -> &[i64] {
        &self.config.label_values
    }

    fn max_length(&self) -> usize {
        self.config.max_length
    }

    fn logits(&self, ids: &Tensor, mask: &Tensor, _rng: Option<&DropoutRng>) -> Result<Tensor> {
        self.forward(ids, mask)
    }
}
