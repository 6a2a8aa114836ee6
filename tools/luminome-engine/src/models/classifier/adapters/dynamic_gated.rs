//! DynamicGated (docs/engine.md, "Spec formulas → code"; the spec's §2):
//!
//! - g_i^base  = σ(W_g · [h_CLS; h_i])                  (per token, per channel)
//! - α_i       = σ(s · q_CLSᵀ k_i),  q = W_q h_CLS,  k_i = W_k h_i   (per token; s = 1 in the
//!   spec, 1/√D in new models: [`DynamicGated::with_score_scale`])
//! - g_i^final = g_i^base ⊙ α_i
//! - m_i: the attention mask with the CLS position (i = 0) set to 0
//! - z = Σ_i g_i^final ⊙ h_i ⊙ m_i,   y = W · LayerNorm(z)
//!
//! The gates g_i^final are the token importance the spec describes; [`DynamicGated::forward`]
//! returns them beside the logits.

use candle_core::{Result, Tensor, D};
use candle_nn::VarBuilder;

use crate::nn::{deeplift, LayerNorm, Linear};

#[derive(Debug, Clone)]
pub struct DynamicGated {
    gate: Linear,
    query: Linear,
    key: Linear,
    norm: LayerNorm,
    head: Linear,
    /// s in α_i = σ(s · q_CLSᵀ k_i); None: 1, as the spec writes it.
    score_scale: Option<f64>,
}

/// What the gated adapter computes for a batch.
#[derive(Debug, Clone)]
pub struct GatedOutput {
    /// `[B, C]`.
    pub logits: Tensor,
    /// g_i^final ⊙ m_i, `[B, L, D]`: zero at the CLS position and at padding.
    pub gates: Tensor,
}

impl DynamicGated {
    pub fn new(
        d_model: usize,
        num_outputs: usize,
        layer_norm_eps: f64,
        vb: VarBuilder,
    ) -> Result<Self> {
        Ok(Self {
            gate: Linear::new(2 * d_model, d_model, vb.pp("gate"))?,
            query: Linear::new(d_model, d_model, vb.pp("query"))?,
            key: Linear::new(d_model, d_model, vb.pp("key"))?,
            norm: LayerNorm::new(d_model, layer_norm_eps, vb.pp("norm"))?,
            head: Linear::new(d_model, num_outputs, vb.pp("head"))?,
            score_scale: None,
        })
    }

    /// Scales the gate score q_CLSᵀ k_i by `scale` before the sigmoid (None: unscaled). An
    /// unscaled score grows with D and with the weights' norms; once σ saturates at 0 for every
    /// token, z and its gradient vanish and the adapter cannot recover.
    pub fn with_score_scale(self, scale: Option<f64>) -> Self {
        Self {
            score_scale: scale,
            ..self
        }
    }

    /// `h`: `[B, L, D]`, `mask`: `[B, L]` (1 = token, 0 = padding).
    pub fn forward(&self, h: &Tensor, mask: &Tensor) -> Result<GatedOutput> {
        let (b, l, d) = h.dims3()?;
        let h_cls = h.get_on_dim(1, 0)?; // [B, D]
                                         // [h_CLS; h_i] for every i; W_g splits into the CLS half and the token half, so the
                                         // concatenation is never materialised: W_g [a; b] = W_a a + W_b b.
        let w = self.gate.weight(); // [D, 2D]
        let w_cls = w.narrow(1, 0, d)?;
        let w_tok = w.narrow(1, d, d)?;
        let cls_part = crate::nn::matmul::device_matmul(&h_cls, &w_cls.t()?)?; // [B, D]
        let cls_part = match self.gate.bias() {
            Some(bias) => crate::nn::add_bias(&cls_part, bias)?,
            None => cls_part,
        };
        // nn::batched_matmul: the same gemm call as candle's matmul, run on the rayon threads
        // (candle's runs on the calling thread alone, its element-wise pool being off).
        let tok_part =
            crate::nn::batched_matmul(&h.reshape((1, b * l, d))?, &w_tok.t()?.unsqueeze(0)?)?
                .reshape((b, l, d))?;
        let g_base = deeplift::sigmoid(&tok_part.broadcast_add(&cls_part.unsqueeze(1)?)?)?;
        let q = self.query.forward(&h_cls)?; // [B, D]
        let k = self.key.forward(h)?; // [B, L, D]
        let scores = deeplift::matmul(&k, &q.unsqueeze(2)?)?; // [B, L, 1]
        let scores = match self.score_scale {
            Some(s) => scores.affine(s, 0.0)?,
            None => scores,
        };
        let alpha = deeplift::sigmoid(&scores)?;
        let g_final = deeplift::product(&g_base, &alpha)?;
        // m_i with the CLS position zeroed.
        let m = mask.to_dtype(h.dtype())?;
        let not_cls = Tensor::cat(
            &[
                Tensor::zeros((b, 1), h.dtype(), h.device())?,
                Tensor::ones((b, l - 1), h.dtype(), h.device())?,
            ],
            1,
        )?;
        let m = (m * not_cls)?.unsqueeze(D::Minus1)?; // [B, L, 1]
        let gates = g_final.broadcast_mul(&m)?;
        let z = deeplift::product(&gates, h)?.sum(1)?; // [B, D]
        let logits = self.head.forward(&self.norm.forward(&z)?)?;
        Ok(GatedOutput { logits, gates })
    }
}
