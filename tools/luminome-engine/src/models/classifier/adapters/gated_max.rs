//! GatedMax (Luminome's, not the adapters spec's): the DynamicGated adapter's logits plus a
//! linear map of the max-pooled hidden states,
//!
//! - y = W · LayerNorm(z) + W_max · max_{m_i = 1} h_i
//!
//! with z, the gates and their parameter names exactly as [`DynamicGated`]'s, and W_max under
//! `max_head` (no bias: the gated head's is the one). It is the classifier default because no
//! single spec adapter clears the k-mer floor on every set tried (docs/results.md, "Plain
//! defaults"): the gated sum carries positional promoter signals, the max carries
//! position-free motif presence (TF binding).

use candle_core::{Result, Tensor};
use candle_nn::VarBuilder;

use super::dynamic_gated::{DynamicGated, GatedOutput};
use crate::nn::{masked_max, Linear};

#[derive(Debug, Clone)]
pub struct GatedMax {
    gated: DynamicGated,
    max_head: Linear,
}

impl GatedMax {
    pub fn new(
        d_model: usize,
        num_outputs: usize,
        layer_norm_eps: f64,
        gate_score_scale: Option<f64>,
        vb: VarBuilder,
    ) -> Result<Self> {
        Ok(Self {
            gated: DynamicGated::new(d_model, num_outputs, layer_norm_eps, vb.clone())?
                .with_score_scale(gate_score_scale),
            max_head: Linear::no_bias(d_model, num_outputs, vb.pp("max_head"))?,
        })
    }

    /// `h`: `[B, L, D]`, `mask`: `[B, L]` → the logits and the gated part's gates.
    pub fn forward(&self, h: &Tensor, mask: &Tensor) -> Result<GatedOutput> {
        let gated = self.gated.forward(h, mask)?;
        let max_part = self.max_head.forward(&masked_max(h, mask)?)?;
        Ok(GatedOutput {
            logits: (gated.logits + max_part)?,
            gates: gated.gates,
        })
    }
}
