//! LinearMaxPool: h_max = max over unmasked positions of h_i (per channel); y = W · h_max.

use candle_core::{Result, Tensor};
use candle_nn::VarBuilder;

use crate::nn::{masked_max, Linear};

#[derive(Debug, Clone)]
pub struct LinearMaxPool {
    head: Linear,
}

impl LinearMaxPool {
    pub fn new(d_model: usize, num_outputs: usize, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            head: Linear::new(d_model, num_outputs, vb.pp("head"))?,
        })
    }

    /// `h`: `[B, L, D]`, `mask`: `[B, L]` → logits `[B, C]`.
    pub fn forward(&self, h: &Tensor, mask: &Tensor) -> Result<Tensor> {
        self.head.forward(&masked_max(h, mask)?)
    }
}
