//! LinearMeanPool: h̄ = Σ h_i ⊙ m_i / (Σ m_i + ε), ε = 1e-9; y = W · h̄.

use candle_core::{Result, Tensor};
use candle_nn::VarBuilder;

use crate::nn::{masked_mean, Linear};

/// ε of the masked mean, as the spec writes it.
pub const MEAN_POOL_EPS: f64 = 1e-9;

#[derive(Debug, Clone)]
pub struct LinearMeanPool {
    head: Linear,
}

impl LinearMeanPool {
    pub fn new(d_model: usize, num_outputs: usize, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            head: Linear::new(d_model, num_outputs, vb.pp("head"))?,
        })
    }

    /// `h`: `[B, L, D]`, `mask`: `[B, L]` → logits `[B, C]`.
    pub fn forward(&self, h: &Tensor, mask: &Tensor) -> Result<Tensor> {
        self.head.forward(&masked_mean(h, mask, MEAN_POOL_EPS)?)
    }
}
