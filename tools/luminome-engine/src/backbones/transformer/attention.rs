//! Multi-head self-attention (one fused QKV projection, padding masked by an additive bias) and
//! rotary position embeddings.

use candle_core::{DType, Result, Tensor, D};
use candle_nn::VarBuilder;

use super::config::EncoderConfig;
use crate::nn::{maybe_dropout, softmax_last_dim, DropoutRng, Linear};

/// Rotary position tables (cos, sin), each `[max_length, head_dim / 2]`.
#[derive(Debug, Clone)]
pub(crate) struct Rotary {
    cos: Tensor,
    sin: Tensor,
}

impl Rotary {
    pub(crate) fn new(
        cfg: &EncoderConfig,
        dtype: DType,
        device: &candle_core::Device,
    ) -> Result<Self> {
        let half = cfg.head_dim() / 2;
        let mut cos = Vec::with_capacity(cfg.max_length * half);
        let mut sin = Vec::with_capacity(cfg.max_length * half);
        for pos in 0..cfg.max_length {
            for i in 0..half {
                let freq = 1.0 / 10000f64.powf(2.0 * i as f64 / cfg.head_dim() as f64);
                let angle = pos as f64 * freq;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        let shape = (cfg.max_length, half);
        Ok(Self {
            cos: Tensor::from_vec(cos, shape, device)?.to_dtype(dtype)?,
            sin: Tensor::from_vec(sin, shape, device)?.to_dtype(dtype)?,
        })
    }

    /// Rotates `[B, H, L, Dh]` by position ("rotate half" convention: the first and second
    /// halves of each head form the pairs).
    pub(crate) fn apply(&self, x: &Tensor) -> Result<Tensor> {
        let (_, _, l, dh) = x.dims4()?;
        let half = dh / 2;
        let cos = self.cos.narrow(0, 0, l)?;
        let sin = self.sin.narrow(0, 0, l)?;
        let x1 = x.narrow(D::Minus1, 0, half)?;
        let x2 = x.narrow(D::Minus1, half, half)?;
        let r1 = (x1.broadcast_mul(&cos)? - x2.broadcast_mul(&sin)?)?;
        let r2 = (x2.broadcast_mul(&cos)? + x1.broadcast_mul(&sin)?)?;
        Tensor::cat(&[r1, r2], D::Minus1)
    }
}

/// Multi-head self-attention with one fused QKV projection.
#[derive(Debug, Clone)]
pub struct SelfAttention {
    qkv: Linear,
    out: Linear,
    num_heads: usize,
    head_dim: usize,
    dropout: f64,
}

impl SelfAttention {
    pub fn new(cfg: &EncoderConfig, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            qkv: Linear::new(cfg.d_model, 3 * cfg.d_model, vb.pp("qkv"))?,
            out: Linear::new(cfg.d_model, cfg.d_model, vb.pp("out"))?,
            num_heads: cfg.num_heads,
            head_dim: cfg.head_dim(),
            dropout: cfg.dropout,
        })
    }

    /// Scaled queries, keys and values `[B, H, L, Dh]` of `x` `[B, L, D]` (rotary positions
    /// applied to queries and keys).
    fn project(&self, x: &Tensor, rotary: Option<&Rotary>) -> Result<(Tensor, Tensor, Tensor)> {
        let (b, l, _) = x.dims3()?;
        let (h, dh) = (self.num_heads, self.head_dim);
        // [B, L, 3, H, Dh] → [3, B, H, L, Dh]: one copy gives q, k and v in matmul layout.
        let qkv = self
            .qkv
            .forward(x)?
            .reshape((b, l, 3, h, dh))?
            .permute((2, 0, 3, 1, 4))?
            .contiguous()?;
        let scale = 1.0 / (dh as f64).sqrt();
        let mut q = (qkv.get(0)? * scale)?;
        let mut k = qkv.get(1)?;
        let v = qkv.get(2)?;
        if let Some(r) = rotary {
            q = r.apply(&q)?;
            k = r.apply(&k)?;
        }
        Ok((q, k, v))
    }

    /// The attention probabilities `[B, H, L, L]` (query × key, eval mode) of `x` `[B, L, D]`
    /// with `bias` `[B, 1, 1, L]`: what attention-based importance reads.
    pub(crate) fn probabilities(
        &self,
        x: &Tensor,
        bias: &Tensor,
        rotary: Option<&Rotary>,
    ) -> Result<Tensor> {
        let (q, k, _) = self.project(x, rotary)?;
        softmax_last_dim(&q.matmul(&k.t()?)?.broadcast_add(bias)?)
    }

    /// `x`: `[B, L, D]`; `bias`: `[B, 1, 1, L]` additive mask.
    pub(crate) fn forward(
        &self,
        x: &Tensor,
        bias: &Tensor,
        rotary: Option<&Rotary>,
        rng: Option<&DropoutRng>,
    ) -> Result<Tensor> {
        let (b, l, d) = x.dims3()?;
        let (q, k, v) = self.project(x, rotary)?;
        let scores = q.matmul(&k.t()?)?.broadcast_add(bias)?;
        let probs = softmax_last_dim(&scores)?;
        let probs = maybe_dropout(&probs, self.dropout, rng)?;
        let ctx = probs.matmul(&v)?; // [B, H, L, Dh]
        let ctx = ctx.transpose(1, 2)?.reshape((b, l, d))?;
        self.out.forward(&ctx)
    }
}
