//! GET's region models as their authors wrote them (GET-Foundation/get_model,
//! `get_model/model/model.py` `GETRegionFinetune` / `GETRegionPretrain`, `transformer.py`
//! `GETTransformer`, `modules.py` `RegionEmbed` / `ExpressionHead`), parameter names unchanged,
//! for inference (dropout and drop-path are identities in eval mode).
//!
//! - `region_embed.embed`: a Linear num_motif → embed_dim on every region's features.
//! - `cls_token` `[1, 1, E]` is put in front of the regions; the encoder's output for it is
//!   dropped before the head.
//! - `encoder`: GETTransformer with its defaults, which the region configs never change:
//!   pre-LN blocks (LayerNorm eps 1e-6 everywhere: GETTransformer passes its `norm_layer`
//!   `partial(nn.LayerNorm, eps=1e-6)` to the blocks), x + attn(norm1(x)), then
//!   x + fc2(GELU(fc1(norm2(x)))) with the exact (erf) GELU and mlp_ratio 4; no gamma scaling
//!   (init_values 0); `use_mean_pooling` false, so the final `encoder.norm` applies to every
//!   token. Attention: `qkv` has no bias of its own; the bias is `cat(q_bias, 0, v_bias)` (keys
//!   unbiased, the BEiT layout); heads split as reshape(B, T, 3, H, Dh); q scaled by Dh^-½. The
//!   authors' region models pass no mask: each sample is its own regions. Luminome's training
//!   batches padded samples, so [`GetRegionFinetune::hidden_masked`] takes a key-padding mask,
//!   which leaves every real token's output as without the padding.
//! - Finetune: `head_exp.head` Linear E → output_dim, then Softplus (β 1).
//! - Pretrain: regions where `mask` is set are replaced by `mask_token` before the cls token is
//!   added (x·(1−w) + mask_token·w), `head_mask` Linear E → num_motif reconstructs them.

use anyhow::{bail, Result};
use candle_core::{DType, Tensor, D};

use super::config::{GetRegionConfig, GetRegionKind};
use crate::models::caduceus::model::Params;
use crate::nn::{attention_bias, gelu, softmax_last_dim, softplus, LayerNorm, Linear};

/// GETTransformer's LayerNorm epsilon (`partial(nn.LayerNorm, eps=1e-6)`).
const LN_EPS: f64 = 1e-6;

fn linear(p: &dyn Params, name: &str, out: usize, inp: usize) -> Result<Linear> {
    let w = p.get(&format!("{name}.weight"), &[out, inp])?;
    let b = p.get(&format!("{name}.bias"), &[out])?;
    Ok(Linear::from_parts(w, Some(b)))
}

fn layer_norm(p: &dyn Params, name: &str, dim: usize) -> Result<LayerNorm> {
    Ok(LayerNorm {
        weight: p.get(&format!("{name}.weight"), &[dim])?,
        bias: p.get(&format!("{name}.bias"), &[dim])?,
        eps: LN_EPS,
    })
}

/// One `encoder.blocks.{i}` (transformer.py `Block` with `Attention` and `Mlp`).
#[derive(Debug, Clone)]
struct Block {
    norm1: LayerNorm,
    qkv: Linear,
    q_bias: Tensor,
    v_bias: Tensor,
    proj: Linear,
    norm2: LayerNorm,
    fc1: Linear,
    fc2: Linear,
    heads: usize,
}

impl Block {
    fn new(cfg: &GetRegionConfig, p: &dyn Params, prefix: &str) -> Result<Self> {
        let e = cfg.embed_dim;
        let a = format!("{prefix}.attn");
        Ok(Self {
            norm1: layer_norm(p, &format!("{prefix}.norm1"), e)?,
            qkv: Linear::from_parts(p.get(&format!("{a}.qkv.weight"), &[3 * e, e])?, None),
            q_bias: p.get(&format!("{a}.q_bias"), &[e])?,
            v_bias: p.get(&format!("{a}.v_bias"), &[e])?,
            proj: linear(p, &format!("{a}.proj"), e, e)?,
            norm2: layer_norm(p, &format!("{prefix}.norm2"), e)?,
            fc1: linear(p, &format!("{prefix}.mlp.fc1"), cfg.mlp_dim(), e)?,
            fc2: linear(p, &format!("{prefix}.mlp.fc2"), e, cfg.mlp_dim())?,
            heads: cfg.num_heads,
        })
    }

    /// `key_bias`: `[B, 1, 1, T]` added to the attention scores (padded keys very negative).
    fn attention(&self, x: &Tensor, key_bias: Option<&Tensor>) -> Result<Tensor> {
        let (b, t, e) = x.dims3()?;
        let (h, dh) = (self.heads, e / self.heads);
        // Built each call, not at load: trained q/v biases (a VarBuilder's) must stay live.
        let bias = Tensor::cat(&[&self.q_bias, &self.v_bias.zeros_like()?, &self.v_bias], 0)?;
        let qkv = self.qkv.forward(x)?.broadcast_add(&bias)?;
        let qkv = qkv.reshape((b, t, 3, h, dh))?.permute((2, 0, 3, 1, 4))?;
        let q = (qkv.get(0)?.contiguous()? * (dh as f64).powf(-0.5))?;
        let k = qkv.get(1)?.contiguous()?;
        let v = qkv.get(2)?.contiguous()?;
        let scores = q.matmul(&k.t()?.contiguous()?)?;
        let scores = match key_bias {
            Some(b) => scores.broadcast_add(b)?,
            None => scores,
        };
        let attn = softmax_last_dim(&scores)?;
        let out = attn.matmul(&v)?.transpose(1, 2)?.reshape((b, t, e))?;
        Ok(self.proj.forward(&out)?)
    }

    fn forward(&self, x: &Tensor, key_bias: Option<&Tensor>) -> Result<Tensor> {
        let x = (x + self.attention(&self.norm1.forward(x)?, key_bias)?)?;
        let m = self.fc1.forward(&self.norm2.forward(&x)?)?;
        Ok((&x + self.fc2.forward(&gelu(&m)?)?)?)
    }
}

/// `encoder` (GETTransformer): the blocks, then `encoder.norm`.
#[derive(Debug, Clone)]
pub struct GetEncoder {
    blocks: Vec<Block>,
    norm: LayerNorm,
}

impl GetEncoder {
    pub fn new(cfg: &GetRegionConfig, p: &dyn Params) -> Result<Self> {
        let blocks = (0..cfg.num_layers)
            .map(|i| Block::new(cfg, p, &format!("encoder.blocks.{i}")))
            .collect::<Result<_>>()?;
        Ok(Self {
            blocks,
            norm: layer_norm(p, "encoder.norm", cfg.embed_dim)?,
        })
    }

    /// `[B, T, E]` → `[B, T, E]`; `key_bias` `[B, 1, 1, T]` added to every attention score.
    pub fn forward(&self, x: &Tensor, key_bias: Option<&Tensor>) -> Result<Tensor> {
        let mut x = x.clone();
        for b in &self.blocks {
            x = b.forward(&x, key_bias)?;
        }
        Ok(self.norm.forward(&x)?)
    }
}

/// What the finetune and pretrain models share: embedding, cls token, encoder.
#[derive(Debug, Clone)]
struct Trunk {
    embed: Linear,
    cls_token: Tensor,
    encoder: GetEncoder,
    num_motif: usize,
}

impl Trunk {
    fn new(cfg: &GetRegionConfig, p: &dyn Params) -> Result<Self> {
        Ok(Self {
            embed: linear(p, "region_embed.embed", cfg.embed_dim, cfg.num_motif)?,
            cls_token: p.get("cls_token", &[1, 1, cfg.embed_dim])?,
            encoder: GetEncoder::new(cfg, p)?,
            num_motif: cfg.num_motif,
        })
    }

    /// `[B, N, num_motif]` → region embeddings `[B, N, E]`, the shape checked.
    fn embed(&self, features: &Tensor) -> Result<Tensor> {
        let dims = features.dims();
        if dims.len() != 3 || dims[2] != self.num_motif || dims[1] == 0 {
            bail!(
                "GET region features must be [batch, regions, {}] (motif clusters + accessibility), got {dims:?}",
                self.num_motif
            );
        }
        Ok(self.embed.forward(&features.to_dtype(DType::F32)?)?)
    }

    /// The encoder over cls + regions, the cls position dropped: `[B, N, E]`. `mask` `[B, N]`
    /// (1 = a region): padded slots are hidden from every query.
    fn encode(&self, x: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let (b, n, e) = x.dims3()?;
        let cls = self.cls_token.expand((b, 1, e))?;
        let bias = match mask {
            Some(m) => {
                let m = m.to_dtype(DType::F32)?;
                let with_cls = Tensor::cat(&[&m.narrow(1, 0, 1)?.ones_like()?, &m], 1)?;
                Some(attention_bias(&with_cls, DType::F32)?)
            }
            None => None,
        };
        let h = self
            .encoder
            .forward(&Tensor::cat(&[&cls, x], 1)?, bias.as_ref())?;
        Ok(h.narrow(1, 1, n)?)
    }
}

/// `GETRegionFinetune`: region features → expression per region and strand.
#[derive(Debug, Clone)]
pub struct GetRegionFinetune {
    trunk: Trunk,
    head: Linear,
}

impl GetRegionFinetune {
    pub fn new(cfg: &GetRegionConfig, p: &dyn Params) -> Result<Self> {
        let out = cfg.clone().resolved(GetRegionKind::Finetune);
        Ok(Self {
            trunk: Trunk::new(cfg, p)?,
            head: linear(p, "head_exp.head", out.output_dim, cfg.embed_dim)?,
        })
    }

    /// The encoder's output per region (after `encoder.norm`, without the cls token):
    /// `[B, N, num_motif]` → `[B, N, embed_dim]`.
    pub fn hidden(&self, features: &Tensor) -> Result<Tensor> {
        self.trunk.encode(&self.trunk.embed(features)?, None)
    }

    /// [`Self::hidden`] over padded samples: `mask` `[B, N]` (1 = a region) keeps the padded
    /// slots out of attention, so a real region's state is what the sample alone would give.
    pub fn hidden_masked(&self, features: &Tensor, mask: &Tensor) -> Result<Tensor> {
        self.trunk.encode(&self.trunk.embed(features)?, Some(mask))
    }

    /// `head_exp.head` before its Softplus: `[.., embed_dim]` → `[.., output_dim]`.
    pub fn head_raw(&self, hidden: &Tensor) -> Result<Tensor> {
        Ok(self.head.forward(hidden)?)
    }

    /// The embedding width.
    pub fn embed_dim(&self) -> usize {
        self.trunk.cls_token.dims()[2]
    }

    /// Softplus(head_exp(hidden)): `[B, N, num_motif]` → `[B, N, output_dim]` (column 0 the +
    /// strand, 1 the − strand; see [`super::tss`]).
    pub fn forward(&self, features: &Tensor) -> Result<Tensor> {
        Ok(softplus(&self.head.forward(&self.hidden(features)?)?)?)
    }
}

/// `GETRegionPretrain`: masked regions' features reconstructed from their context.
#[derive(Debug, Clone)]
pub struct GetRegionPretrain {
    trunk: Trunk,
    mask_token: Tensor,
    head: Linear,
}

impl GetRegionPretrain {
    pub fn new(cfg: &GetRegionConfig, p: &dyn Params) -> Result<Self> {
        let out = cfg.clone().resolved(GetRegionKind::Pretrain);
        Ok(Self {
            trunk: Trunk::new(cfg, p)?,
            mask_token: p.get("mask_token", &[1, 1, cfg.embed_dim])?,
            head: linear(p, "head_mask", out.output_dim, cfg.embed_dim)?,
        })
    }

    /// Encoder output per region with the regions where `mask` `[B, N]` is non-zero replaced
    /// by the mask token: `[B, N, embed_dim]`.
    pub fn hidden(&self, features: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let x = self.trunk.embed(features)?;
        let (b, n, _) = x.dims3()?;
        if mask.dims() != [b, n] {
            bail!(
                "the GET pretrain mask must be [{b}, {n}] like the features, got {:?}",
                mask.dims()
            );
        }
        let w = mask.ne(0u8)?.to_dtype(DType::F32)?.unsqueeze(D::Minus1)?;
        let keep = w.affine(-1.0, 1.0)?;
        let x = (x.broadcast_mul(&keep)? + self.mask_token.broadcast_mul(&w)?)?;
        self.trunk.encode(&x, None)
    }

    /// head_mask at every region: `[B, N, output_dim]`.
    pub fn forward(&self, features: &Tensor, mask: &Tensor) -> Result<Tensor> {
        Ok(self.head.forward(&self.hidden(features, mask)?)?)
    }

    /// What the authors' forward returns: head_mask at the masked regions only, in (batch,
    /// region) order: `[K, output_dim]`.
    pub fn forward_masked(&self, features: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let all = self.forward(features, mask)?;
        let (b, n, o) = all.dims3()?;
        let flags = mask.ne(0u8)?.flatten_all()?.to_vec1::<u8>()?;
        let rows: Vec<u32> = (0..(b * n) as u32)
            .filter(|&i| flags[i as usize] != 0)
            .collect();
        let idx = Tensor::new(rows.as_slice(), all.device())?;
        Ok(all.reshape((b * n, o))?.index_select(&idx, 0)?)
    }
}
