//! The per-strand feature extractor: a short convolution and a selective state-space layer
//! (Mamba-style), run in both directions as in Caduceus' BiMamba.
//!
//! One layer, on hidden states u `[B, L, D]` with E = expand · D channels inside:
//!
//!   x, z  = in_proj(LayerNorm(u))                       (shared by both directions)
//!   for each direction (the reverse one runs from the last position to the first):
//!     x'   = SiLU(causal depthwise conv_K(x))            (its own conv)
//!     Δ, B, C = split(x_proj(x')),  Δ = softplus(dt_proj(Δ))   (input-dependent, its own)
//!     y    = selective_scan(x', Δ, A = −exp(A_log), B, C, D)   (its own A_log, D)
//!   u + out_proj((y_fwd + y_rev) ⊙ SiLU(z))                (shared out_proj, residual)
//!
//! The convolution is causal in each direction, so the sum of the two directions sees both sides
//! of every position. Padded positions are zeroed before the convolution and the scan, so
//! padding never enters a state.

use candle_core::{Module, Result, Tensor, D};
use candle_nn::VarBuilder;

use super::config::BiStrandConfig;
use crate::nn::depthwise_conv::depthwise_conv;
use crate::nn::scan::selective_scan;
use crate::nn::{maybe_dropout, softplus, DropoutRng, LayerNorm, Linear};

/// One direction's selective state-space parameters.
#[derive(Debug, Clone)]
pub struct SsmDirection {
    conv_weight: Tensor,
    conv_bias: Tensor,
    x_proj: Linear,
    dt_proj: Linear,
    a_log: Tensor,
    d: Tensor,
    dt_rank: usize,
    d_state: usize,
}

impl SsmDirection {
    pub fn new(cfg: &BiStrandConfig, vb: VarBuilder) -> Result<Self> {
        let e = cfg.inner_dim();
        Ok(Self {
            conv_weight: vb.get((e, cfg.d_conv), "conv.weight")?,
            conv_bias: vb.get(e, "conv.bias")?,
            x_proj: Linear::new(e, cfg.dt_rank + 2 * cfg.d_state, vb.pp("x_proj"))?,
            dt_proj: Linear::new(cfg.dt_rank, e, vb.pp("dt_proj"))?,
            a_log: vb.get((e, cfg.d_state), "a_log")?,
            d: vb.get(e, "d")?,
            dt_rank: cfg.dt_rank,
            d_state: cfg.d_state,
        })
    }

    /// `x` `[B, L, E]` (zero at padding), `keep` `[B, L, 1]` → `[B, L, E]`; `reverse`: the
    /// backward direction (causal towards position 0).
    fn forward(&self, x: &Tensor, keep: &Tensor, reverse: bool) -> Result<Tensor> {
        let conv = depthwise_conv(x, &self.conv_weight, &self.conv_bias, reverse)?;
        let xs = conv.silu()?.broadcast_mul(keep)?;
        let proj = self.x_proj.forward(&xs)?;
        let (r, n) = (self.dt_rank, self.d_state);
        let delta = softplus(&self.dt_proj.forward(&proj.narrow(D::Minus1, 0, r)?)?)?;
        let bm = proj.narrow(D::Minus1, r, n)?;
        let cm = proj.narrow(D::Minus1, r + n, n)?;
        let a = self.a_log.exp()?.neg()?;
        selective_scan(&xs, &delta, &a, &bm, &cm, &self.d, reverse)
    }
}

/// Bidirectional mixer with shared in/out projections (parameters `in_proj`, `fwd.*`, `rev.*`,
/// `out_proj`).
#[derive(Debug, Clone)]
pub struct BiMambaMixer {
    in_proj: Linear,
    fwd: SsmDirection,
    rev: SsmDirection,
    out_proj: Linear,
    inner: usize,
}

impl BiMambaMixer {
    pub fn new(cfg: &BiStrandConfig, vb: VarBuilder) -> Result<Self> {
        let e = cfg.inner_dim();
        Ok(Self {
            in_proj: Linear::new(cfg.d_model, 2 * e, vb.pp("in_proj"))?,
            fwd: SsmDirection::new(cfg, vb.pp("fwd"))?,
            rev: SsmDirection::new(cfg, vb.pp("rev"))?,
            out_proj: Linear::new(e, cfg.d_model, vb.pp("out_proj"))?,
            inner: e,
        })
    }

    /// `u` `[B, L, D]`, `keep` `[B, L, 1]` (1 = base, 0 = padding).
    pub fn forward(&self, u: &Tensor, keep: &Tensor) -> Result<Tensor> {
        let xz = self.in_proj.forward(u)?;
        let x = xz.narrow(D::Minus1, 0, self.inner)?.broadcast_mul(keep)?;
        let z = xz.narrow(D::Minus1, self.inner, self.inner)?;
        let y_fwd = self.fwd.forward(&x, keep, false)?;
        let y_rev = self.rev.forward(&x, keep, true)?;
        self.out_proj.forward(&((y_fwd + y_rev)? * z.silu()?)?)
    }
}

/// Pre-norm residual layer: u + Drop(mixer(LayerNorm(u))).
#[derive(Debug, Clone)]
pub struct MambaLayer {
    norm: LayerNorm,
    mixer: BiMambaMixer,
    dropout: f64,
}

impl MambaLayer {
    pub fn new(cfg: &BiStrandConfig, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            norm: LayerNorm::new(cfg.d_model, cfg.layer_norm_eps, vb.pp("norm"))?,
            mixer: BiMambaMixer::new(cfg, vb.pp("mixer"))?,
            dropout: cfg.dropout,
        })
    }

    pub fn forward(&self, u: &Tensor, keep: &Tensor, rng: Option<&DropoutRng>) -> Result<Tensor> {
        let m = self.mixer.forward(&self.norm.forward(u)?, keep)?;
        u + maybe_dropout(&m, self.dropout, rng)?
    }
}

/// One strand: embedding, layers, final norm → H_ssm `[B, L, D]`.
#[derive(Debug, Clone)]
pub struct StrandEncoder {
    embed: candle_nn::Embedding,
    layers: Vec<MambaLayer>,
    final_norm: LayerNorm,
    dropout: f64,
}

impl StrandEncoder {
    pub fn new(cfg: &BiStrandConfig, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            embed: candle_nn::embedding(cfg.vocab_size, cfg.d_model, vb.pp("embed"))?,
            layers: (0..cfg.num_layers)
                .map(|i| MambaLayer::new(cfg, vb.pp(format!("layers.{i}"))))
                .collect::<Result<_>>()?,
            final_norm: LayerNorm::new(cfg.d_model, cfg.layer_norm_eps, vb.pp("final_norm"))?,
            dropout: cfg.dropout,
        })
    }

    /// ids `[B, L]` (u32), `keep` `[B, L, 1]`.
    pub fn forward(&self, ids: &Tensor, keep: &Tensor, rng: Option<&DropoutRng>) -> Result<Tensor> {
        let mut h = maybe_dropout(&self.embed.forward(ids)?, self.dropout, rng)?;
        for layer in &self.layers {
            h = layer.forward(&h, keep, rng)?;
        }
        self.final_norm.forward(&h)
    }
}
