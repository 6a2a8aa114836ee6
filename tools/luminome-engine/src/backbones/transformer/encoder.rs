//! The transformer encoder: token (+ learned position) embedding, pre-LN blocks of multi-head
//! self-attention (learned or rotary positions) and a GELU feed-forward, final layer norm.
//! Padding is masked out of every attention score.

use candle_core::{Module, Result, Tensor};
use candle_nn::{Embedding, VarBuilder};

use super::attention::{AttentionMask, Rotary, SelfAttention};
use super::config::{AttentionKind, EncoderConfig, PositionEncoding};
use crate::nn::{maybe_dropout, residual_dropout, DropoutRng, LayerNorm, Linear};

/// Position-wise feed-forward: Linear → GELU → dropout → Linear.
#[derive(Debug, Clone)]
pub struct FeedForward {
    up: Linear,
    down: Linear,
    dropout: f64,
}

impl FeedForward {
    pub fn new(cfg: &EncoderConfig, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            up: Linear::new(cfg.d_model, cfg.ffn_dim, vb.pp("up"))?,
            down: Linear::new(cfg.ffn_dim, cfg.d_model, vb.pp("down"))?,
            dropout: cfg.dropout,
        })
    }

    fn forward(&self, x: &Tensor, rng: Option<&DropoutRng>) -> Result<Tensor> {
        let h = crate::nn::deeplift::gelu(&self.up.forward(x)?)?;
        let h = maybe_dropout(&h, self.dropout, rng)?;
        self.down.forward(&h)
    }
}

/// One pre-LN block: x + Drop(Attn(LN(x))), then + Drop(FFN(LN(·))).
#[derive(Debug, Clone)]
pub struct EncoderLayer {
    ln1: LayerNorm,
    attn: SelfAttention,
    ln2: LayerNorm,
    ffn: FeedForward,
    dropout: f64,
}

impl EncoderLayer {
    pub fn new(cfg: &EncoderConfig, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            ln1: LayerNorm::new(cfg.d_model, cfg.layer_norm_eps, vb.pp("ln1"))?,
            attn: SelfAttention::new(cfg, vb.pp("attn"))?,
            ln2: LayerNorm::new(cfg.d_model, cfg.layer_norm_eps, vb.pp("ln2"))?,
            ffn: FeedForward::new(cfg, vb.pp("ffn"))?,
            dropout: cfg.dropout,
        })
    }

    /// This block's attention probabilities `[B, H, L, L]` on its input `x` (eval mode).
    fn attention(&self, x: &Tensor, bias: &Tensor, rotary: Option<&Rotary>) -> Result<Tensor> {
        self.attn.probabilities(&self.ln1.forward(x)?, bias, rotary)
    }

    fn forward(
        &self,
        x: &Tensor,
        mask: &AttentionMask,
        rotary: Option<&Rotary>,
        rng: Option<&DropoutRng>,
    ) -> Result<Tensor> {
        let a = self
            .attn
            .forward(&self.ln1.forward(x)?, mask, rotary, rng)?;
        let x = residual_dropout(x, &a, self.dropout, rng)?;
        let f = self.ffn.forward(&self.ln2.forward(&x)?, rng)?;
        residual_dropout(&x, &f, self.dropout, rng)
    }
}

/// The blocks and the final layer norm, on inputs that are already embeddings: what token
/// encoders ([`Encoder`]) and region encoders share. Parameter names (under the caller's prefix):
/// `layers.{i}.{ln1,attn.qkv,attn.out,ln2,ffn.up,ffn.down}.*`, `final_norm.*`.
#[derive(Debug, Clone)]
pub struct EncoderStack {
    layers: Vec<EncoderLayer>,
    final_norm: LayerNorm,
    rotary: Option<Rotary>,
    attention: AttentionKind,
}

impl EncoderStack {
    /// `rotary`: rotary positions in every attention layer (token encoders with
    /// `position: rotary`).
    pub fn new(cfg: &EncoderConfig, rotary: bool, vb: VarBuilder) -> Result<Self> {
        let rotary = if rotary {
            Some(Rotary::new(cfg, vb.dtype(), vb.device())?)
        } else {
            None
        };
        let layers = (0..cfg.num_layers)
            .map(|i| EncoderLayer::new(cfg, vb.pp(format!("layers.{i}"))))
            .collect::<Result<Vec<_>>>()?;
        let final_norm = LayerNorm::new(cfg.d_model, cfg.layer_norm_eps, vb.pp("final_norm"))?;
        Ok(Self {
            layers,
            final_norm,
            rotary,
            attention: cfg.attention,
        })
    }

    /// Hidden states `[B, L, D]` of inputs `[B, L, D]` (embeddings, positions and input dropout
    /// already applied) with mask `[B, L]` (1 = real, 0 = padding; any dtype).
    pub fn forward(&self, x: &Tensor, mask: &Tensor, rng: Option<&DropoutRng>) -> Result<Tensor> {
        let mask = AttentionMask::new(mask, x.dtype(), self.attention)?;
        let mut x = x.clone();
        for layer in &self.layers {
            x = layer.forward(&x, &mask, self.rotary.as_ref(), rng)?;
        }
        self.final_norm.forward(&x)
    }

    /// The last block's attention probabilities `[B, H, L, L]` (query × key) on inputs `x`
    /// `[B, L, D]` with mask `[B, L]`, in eval mode.
    pub fn last_attention(&self, x: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let mask = AttentionMask::new(mask, x.dtype(), self.attention)?;
        let (last, before) = self
            .layers
            .split_last()
            .ok_or_else(|| candle_core::Error::Msg("an encoder without blocks".into()))?;
        let mut x = x.clone();
        for layer in before {
            x = layer.forward(&x, &mask, self.rotary.as_ref(), None)?;
        }
        last.attention(&x, &mask.bias, self.rotary.as_ref())
    }
}

/// The encoder. Parameter names: `tok_emb.weight`, `pos_emb.weight` (learned positions only),
/// `layers.{i}.{ln1,attn.qkv,attn.out,ln2,ffn.up,ffn.down}.*`, `final_norm.*`.
#[derive(Debug, Clone)]
pub struct Encoder {
    cfg: EncoderConfig,
    tok_emb: Embedding,
    pos_emb: Option<Tensor>,
    stack: EncoderStack,
}

impl Encoder {
    pub fn new(cfg: &EncoderConfig, vb: VarBuilder) -> Result<Self> {
        let tok_emb = candle_nn::embedding(cfg.vocab_size, cfg.d_model, vb.pp("tok_emb"))?;
        let pos_emb = match cfg.position {
            PositionEncoding::Learned => Some(vb.pp("pos_emb").get_with_hints(
                (cfg.max_length, cfg.d_model),
                "weight",
                candle_nn::Init::Randn {
                    mean: 0.0,
                    stdev: 0.02,
                },
            )?),
            PositionEncoding::Rotary => None,
        };
        let stack = EncoderStack::new(cfg, cfg.position == PositionEncoding::Rotary, vb)?;
        Ok(Self {
            cfg: cfg.clone(),
            tok_emb,
            pos_emb,
            stack,
        })
    }

    pub fn config(&self) -> &EncoderConfig {
        &self.cfg
    }

    /// Token embeddings `[B, L, D]` of ids `[B, L]` (no positions): the "input" of
    /// gradient × input and integrated gradients.
    pub fn embed(&self, ids: &Tensor) -> Result<Tensor> {
        self.tok_emb.forward(ids)
    }

    /// Runs the encoder on token embeddings `[B, L, D]` with mask `[B, L]` (1 = token,
    /// 0 = padding; any dtype). Returns hidden states `[B, L, D]`. `rng`: dropout when training.
    pub fn forward_from_embeddings(
        &self,
        emb: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> Result<Tensor> {
        let (_, l, _) = emb.dims3()?;
        if l > self.cfg.max_length {
            candle_core::bail!(
                "sequence length {l} exceeds the model's max length {}",
                self.cfg.max_length
            );
        }
        let x = match &self.pos_emb {
            Some(p) => emb.broadcast_add(&p.narrow(0, 0, l)?)?,
            None => emb.clone(),
        };
        let x = maybe_dropout(&x, self.cfg.dropout, rng)?;
        self.stack.forward(&x, mask, rng)
    }

    /// Token ids `[B, L]` (u32) → hidden states `[B, L, D]`.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor, rng: Option<&DropoutRng>) -> Result<Tensor> {
        self.forward_from_embeddings(&self.embed(ids)?, mask, rng)
    }
}
