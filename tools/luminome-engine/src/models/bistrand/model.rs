//! The bi-strand cross-attention masked LM (the spec, `docs/bistrand.md`):
//!
//!   H_ssm^a = SSM(Conv(Embed(X^a))),  H_ssm^b likewise           (StrandEncoder per strand)
//!   H_cross^a = CrossAttn(Q = H_ssm^a, K = V = H_ssm^b),  H_cross^b = CrossAttn(Q = H_ssm^b, K = V = H_ssm^a)
//!   H_fuse^a = GELU([H_ssm^a; H_cross^a] W^a + b^a),  H_fuse^b likewise
//!   P^a(x_i) = softmax(H_fuse^a_i W_lm^a + b_lm^a) over A, C, G, T,  P^b likewise
//!
//! Parameters: `strand_a.*`, `strand_b.*`, `cross_ab.*` (A attends to B), `cross_ba.*`,
//! `fuse_a.*`, `fuse_b.*`, `head_a.*`, `head_b.*`; with tied strands `strand.*`, `cross.*`,
//! `fuse.*`, `head.*` serve both. Without cross-attention the fusion reads H_ssm alone.

use candle_core::{Result, Tensor, D};
use candle_nn::VarBuilder;

use super::config::BiStrandConfig;
use super::mixer::StrandEncoder;
use crate::models::caduceus::CaduceusModel;
use crate::models::Model;
use crate::nn::{attention_bias, softmax_last_dim, DropoutRng, Linear};

/// Multi-head attention of one strand's positions (queries) over the other strand's (keys and
/// values), the other strand's padding masked.
#[derive(Debug, Clone)]
pub struct CrossAttention {
    q: Linear,
    k: Linear,
    v: Linear,
    out: Linear,
    heads: usize,
}

impl CrossAttention {
    pub fn new(cfg: &BiStrandConfig, vb: VarBuilder) -> Result<Self> {
        let d = cfg.d_model;
        Ok(Self {
            q: Linear::new(d, d, vb.pp("q"))?,
            k: Linear::new(d, d, vb.pp("k"))?,
            v: Linear::new(d, d, vb.pp("v"))?,
            out: Linear::new(d, d, vb.pp("out"))?,
            heads: cfg.cross_heads,
        })
    }

    /// `query`, `context` `[B, L, D]`; `context_mask` `[B, L]` → `[B, L, D]`.
    pub fn forward(
        &self,
        query: &Tensor,
        context: &Tensor,
        context_mask: &Tensor,
    ) -> Result<Tensor> {
        let (b, l, d) = query.dims3()?;
        let (h, dh) = (self.heads, d / self.heads);
        let split = |x: Tensor| -> Result<Tensor> {
            x.reshape((b, l, h, dh))?.transpose(1, 2)?.contiguous()
        };
        let q = (split(self.q.forward(query)?)? * (1.0 / (dh as f64).sqrt()))?;
        let k = split(self.k.forward(context)?)?;
        let v = split(self.v.forward(context)?)?;
        let scores = crate::nn::batched_matmul(&q, &k.t()?)?
            .broadcast_add(&attention_bias(context_mask, query.dtype())?)?;
        let ctx = crate::nn::batched_matmul(&softmax_last_dim(&scores)?, &v)?; // [B, H, L, Dh]
        self.out.forward(&ctx.transpose(1, 2)?.reshape((b, l, d))?)
    }
}

/// A strand's encoder: the spec's own embedding → Conv → SSM stack, or a published Caduceus
/// model (`BiStrandConfig::encoder`).
#[derive(Debug, Clone)]
enum Encoder {
    Own(StrandEncoder),
    Published { model: CaduceusModel, frozen: bool },
}

impl Encoder {
    fn new(cfg: &BiStrandConfig, vb: VarBuilder) -> Result<Self> {
        Ok(match &cfg.encoder {
            None => Self::Own(StrandEncoder::new(cfg, vb)?),
            Some(enc) => {
                let mut model =
                    CaduceusModel::from_params(&enc.caduceus, &vb, "the strand encoder")
                        .map_err(|e| candle_core::Error::Msg(format!("{e:#}")))?;
                model.set_trainable(!enc.frozen);
                Self::Published {
                    model,
                    frozen: enc.frozen,
                }
            }
        })
    }

    /// H_ssm `[B, L, D]` of ids `[B, L]`. `reverse`: the strand runs 3'→5' in the row's
    /// orientation (strand B of a complement pair); a published DNA model reads it 5'→3' (the
    /// row reversed in, its output reversed back), the spec's own encoder is bidirectional and
    /// reads the row as it is.
    fn forward(
        &self,
        ids: &Tensor,
        keep: &Tensor,
        rng: Option<&DropoutRng>,
        reverse: bool,
    ) -> Result<Tensor> {
        match self {
            Self::Own(e) => e.forward(ids, keep, rng),
            Self::Published { model, frozen } => {
                let flip = |x: &Tensor| -> Result<Tensor> {
                    let l = x.dim(1)?;
                    let rev = Tensor::from_iter((0..l as u32).rev(), x.device())?;
                    x.contiguous()?.index_select(&rev, 1)
                };
                let ids = if reverse { flip(ids)? } else { ids.clone() };
                let run =
                    || -> anyhow::Result<Tensor> { model.representation(&model.hidden(&ids)?) };
                let h = run().map_err(|e| candle_core::Error::Msg(format!("{e:#}")))?;
                let h = if reverse { flip(&h)? } else { h };
                Ok(if *frozen { h.detach() } else { h })
            }
        }
    }
}

/// One strand's half of the model past its encoder: cross-attention, fusion, LM head.
#[derive(Debug, Clone)]
struct StrandHead {
    cross: Option<CrossAttention>,
    fuse: Linear,
    head: Linear,
}

impl StrandHead {
    fn new(
        cfg: &BiStrandConfig,
        vb: &VarBuilder,
        cross: &str,
        fuse: &str,
        head: &str,
    ) -> Result<Self> {
        let d = cfg.d_model;
        Ok(Self {
            cross: cfg
                .cross_attention
                .then(|| CrossAttention::new(cfg, vb.pp(cross)))
                .transpose()?,
            fuse: Linear::new(if cfg.cross_attention { 2 * d } else { d }, d, vb.pp(fuse))?,
            head: Linear::new(d, 4, vb.pp(head))?,
        })
    }
}

#[derive(Debug, Clone)]
pub struct BiStrandModel {
    pub config: BiStrandConfig,
    strand_a: Encoder,
    strand_b: Encoder,
    side_a: StrandHead,
    side_b: StrandHead,
}

/// Logits over A, C, G, T at the chosen positions of both strands.
pub struct PairLogits {
    /// `[P, 4]`.
    pub a: Tensor,
    pub b: Tensor,
}

impl BiStrandModel {
    pub fn new(cfg: &BiStrandConfig, vb: VarBuilder) -> Result<Self> {
        let (strand_a, side_a) = if cfg.tie_strands {
            (
                Encoder::new(cfg, vb.pp("strand"))?,
                StrandHead::new(cfg, &vb, "cross", "fuse", "head")?,
            )
        } else {
            (
                Encoder::new(cfg, vb.pp("strand_a"))?,
                StrandHead::new(cfg, &vb, "cross_ab", "fuse_a", "head_a")?,
            )
        };
        let (strand_b, side_b) = if cfg.tie_strands {
            (strand_a.clone(), side_a.clone())
        } else {
            (
                Encoder::new(cfg, vb.pp("strand_b"))?,
                StrandHead::new(cfg, &vb, "cross_ba", "fuse_b", "head_b")?,
            )
        };
        Ok(Self {
            config: cfg.clone(),
            strand_a,
            strand_b,
            side_a,
            side_b,
        })
    }

    /// Logits at `positions` (flat indices b · L + i, u32) of both strands, from ids `[B, L]`
    /// (u32) and the padding mask `[B, L]` (f32, 1 = base). `rng`: dropout (training).
    pub fn logits_at(
        &self,
        ids_a: &Tensor,
        ids_b: &Tensor,
        mask: &Tensor,
        positions: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> Result<PairLogits> {
        let (b, l) = ids_a.dims2()?;
        if l > self.config.max_length {
            candle_core::bail!(
                "rows of {l} positions exceed the model's max length {}",
                self.config.max_length
            );
        }
        let keep = mask.unsqueeze(D::Minus1)?;
        let h_a = self.strand_a.forward(ids_a, &keep, rng, false)?;
        let h_b = self.strand_b.forward(ids_b, &keep, rng, true)?;
        let side = |s: &StrandHead, own: &Tensor, other: &Tensor| -> Result<Tensor> {
            let input = match &s.cross {
                Some(c) => Tensor::cat(&[own, &c.forward(own, other, mask)?], D::Minus1)?,
                None => own.clone(),
            };
            let w = input.dim(D::Minus1)?;
            // Only the predicted positions go through the fusion and the head.
            let rows = input.reshape((b * l, w))?.index_select(positions, 0)?;
            s.head.forward(&crate::nn::gelu(&s.fuse.forward(&rows)?)?)
        };
        Ok(PairLogits {
            a: side(&self.side_a, &h_a, &h_b)?,
            b: side(&self.side_b, &h_b, &h_a)?,
        })
    }
}

impl Model for BiStrandModel {}
