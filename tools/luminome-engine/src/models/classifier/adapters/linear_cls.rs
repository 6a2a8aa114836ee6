//! LinearCLS: y = W · h_[CLS] (the first token's hidden state).

use candle_core::{Result, Tensor};
use candle_nn::VarBuilder;

use crate::nn::Linear;

#[derive(Debug, Clone)]
pub struct LinearCls {
    head: Linear,
}

impl LinearCls {
    pub fn new(d_model: usize, num_outputs: usize, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            head: Linear::new(d_model, num_outputs, vb.pp("head"))?,
        })
    }

    /// `h`: `[B, L, D]` → logits `[B, C]`.
    pub fn forward(&self, h: &Tensor) -> Result<Tensor> {
        self.head.forward(&h.get_on_dim(1, 0)?)
    }
}
