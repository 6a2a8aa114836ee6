//! DNABERT-2 (Zhou et al. 2024; `zhihan1996/DNABERT-2-117M`), the published encoder as its
//! authors' `bert_layers.py` computes it: a MosaicBERT — BERT without position embeddings,
//! post-LN blocks whose attention scores carry an ALiBi bias (−slope_h · |i − j|), and a
//! GEGLU feed-forward (`gated_layers` without bias: GELU of the first half times the second).
//!
//! Parameter names are the checkpoint's, under `bert.` (the published `BertModel`'s prefix), so
//! `luminome-train classify --init DIR|hf:ORG/NAME` loads the weights as published and a
//! fine-tuned Luminome checkpoint keeps them: `embeddings.{word_embeddings,
//! token_type_embeddings, LayerNorm}`, `encoder.layer.{i}.attention.self.Wqkv`,
//! `encoder.layer.{i}.attention.output.{dense,LayerNorm}`,
//! `encoder.layer.{i}.mlp.{gated_layers,wo,layernorm}`. The pooler and the masked-LM head are
//! not used: the classification adapters read the hidden states.
//!
//! Padding: the authors' code drops padded positions before the layers (unpadding) and puts
//! zeros back at the end; here the padded keys are masked out of every softmax (the same
//! numbers for the real positions) and the output is zero at padding, as theirs.

use anyhow::{bail, Result};
use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Embedding, VarBuilder};
use serde::{Deserialize, Serialize};

use crate::nn::{
    attention_bias, batched_matmul, gated_unit, maybe_dropout, residual_dropout,
    softmax_last_dim_biased, DropoutRng, GateActivation, LayerNorm, Linear,
};

/// The published `config.json` fields the architecture reads (names as published), and the
/// longest input a Luminome model built on it takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dnabert2Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub hidden_dropout_prob: f64,
    #[serde(default)]
    pub attention_probs_dropout_prob: f64,
    /// Luminome's: the longest row (tokens, [CLS]/[SEP] included) of the data it was set up
    /// for. ALiBi has no length limit; this only bounds the inputs, as for every backbone.
    #[serde(default = "default_max_length")]
    pub max_length: usize,
}

fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}
fn default_max_length() -> usize {
    512
}

impl Dnabert2Config {
    /// From a published `config.json`: the architecture must be DNABERT-2's, recognised by
    /// `alibi_starting_size` (the MosaicBERT marker; the published file names no `model_type`,
    /// its first upload said "bert"); `max_length` is Luminome's.
    pub fn from_published(json: &str, what: &str, max_length: usize) -> Result<Self> {
        let v: serde_json::Value =
            serde_json::from_str(json).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        let model_type = v.get("model_type").and_then(|m| m.as_str());
        if v.get("alibi_starting_size").is_none() || model_type.is_some_and(|m| m != "bert") {
            bail!(
                "{what}: not a DNABERT-2 configuration (no alibi_starting_size{}); --init takes a DNABERT-2 checkpoint or a Luminome masked-LM checkpoint",
                model_type.map(|m| format!(", model_type {m:?}")).unwrap_or_default()
            );
        }
        let mut c: Self = serde_json::from_value(v).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        c.max_length = max_length;
        c.validate().map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        Ok(c)
    }

    pub fn validate(&self) -> Result<()> {
        super::check_published_encoder(
            "DNABERT-2",
            "117 M",
            &[
                self.vocab_size,
                self.hidden_size,
                self.num_hidden_layers,
                self.num_attention_heads,
                self.intermediate_size,
                self.type_vocab_size,
                self.max_length,
            ],
            (
                self.vocab_size,
                self.hidden_size,
                self.num_hidden_layers,
                self.intermediate_size,
            ),
            [self.hidden_dropout_prob, self.attention_probs_dropout_prob],
        )?;
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            bail!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size,
                self.num_attention_heads
            );
        }
        Ok(())
    }

    fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }
}

/// ALiBi's slope of each head, as the authors compute them: the geometric sequence
/// 2^(−8/n)·k for a power of two n; otherwise those of the closest power of two below, then
/// every other slope of twice that many heads.
pub fn alibi_slopes(heads: usize) -> Vec<f64> {
    fn power_of_two(n: usize) -> Vec<f64> {
        let start = 2f64.powf(-(2f64.powf(-((n as f64).log2() - 3.0))));
        // `ratio**i` as the authors' Python computes it: libm's pow. Not `powi`, whose repeated
        // products LLVM folds differently where it inlines the call: a release build's
        // 12-head slopes then differed from its 16-head ones in the last bit.
        (0..n).map(|i| start * start.powf(i as f64)).collect()
    }
    if heads.is_power_of_two() {
        return power_of_two(heads);
    }
    let closest = 1usize << heads.ilog2();
    let mut slopes = power_of_two(closest);
    slopes.extend(
        alibi_slopes(2 * closest)
            .into_iter()
            .step_by(2)
            .take(heads - closest),
    );
    slopes
}

/// The ALiBi bias `[1, H, L, L]`: −slope_h · |i − j|, in f32 as the authors' tensor (slope
/// rounded to f32, then times the integer distance).
fn alibi_bias(
    heads: usize,
    len: usize,
    dtype: DType,
    device: &Device,
) -> candle_core::Result<Tensor> {
    let mut v = Vec::with_capacity(heads * len * len);
    for slope in alibi_slopes(heads) {
        let s = slope as f32;
        for i in 0..len {
            for j in 0..len {
                v.push(s * -(i.abs_diff(j) as f32));
            }
        }
    }
    Tensor::from_vec(v, (1, heads, len, len), device)?.to_dtype(dtype)
}

/// One MosaicBERT block: post-LN attention with the ALiBi bias, then the GEGLU feed-forward.
#[derive(Debug, Clone)]
struct Dnabert2Layer {
    wqkv: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    gated_layers: Linear,
    wo: Linear,
    mlp_norm: LayerNorm,
    heads: usize,
    head_dim: usize,
    hidden_dropout: f64,
    attention_dropout: f64,
}

impl Dnabert2Layer {
    fn new(cfg: &Dnabert2Config, vb: VarBuilder) -> candle_core::Result<Self> {
        let (d, f, eps) = (cfg.hidden_size, cfg.intermediate_size, cfg.layer_norm_eps);
        let attn = vb.pp("attention");
        let mlp = vb.pp("mlp");
        Ok(Self {
            wqkv: Linear::new(d, 3 * d, attn.pp("self").pp("Wqkv"))?,
            attn_out: Linear::new(d, d, attn.pp("output").pp("dense"))?,
            attn_norm: LayerNorm::new(d, eps, attn.pp("output").pp("LayerNorm"))?,
            gated_layers: Linear::no_bias(d, 2 * f, mlp.pp("gated_layers"))?,
            wo: Linear::new(f, d, mlp.pp("wo"))?,
            mlp_norm: LayerNorm::new(d, eps, mlp.pp("layernorm"))?,
            heads: cfg.num_attention_heads,
            head_dim: cfg.head_dim(),
            hidden_dropout: cfg.hidden_dropout_prob,
            attention_dropout: cfg.attention_probs_dropout_prob,
        })
    }

    /// `x` `[B, L, D]`; `alibi` `[1, H, L, L]`; `pad` `[B, 1, 1, L]` (0 at tokens).
    fn forward(
        &self,
        x: &Tensor,
        alibi: &Tensor,
        pad: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> candle_core::Result<Tensor> {
        let (b, l, d) = x.dims3()?;
        let (h, dh) = (self.heads, self.head_dim);
        let qkv = self
            .wqkv
            .forward(x)?
            .reshape((b, l, 3, h, dh))?
            .permute((2, 0, 3, 1, 4))?
            .contiguous()?;
        let (q, k, v) = (qkv.get(0)?, qkv.get(1)?, qkv.get(2)?);
        let scores = (batched_matmul(&q, &k.t()?)? / (dh as f64).sqrt())?.broadcast_add(alibi)?;
        let probs = softmax_last_dim_biased(&scores, pad)?;
        let probs = maybe_dropout(&probs, self.attention_dropout, rng)?;
        let ctx = batched_matmul(&probs, &v)?
            .transpose(1, 2)?
            .reshape((b, l, d))?;
        let a = self.attn_out.forward(&ctx)?;
        let x = self
            .attn_norm
            .forward(&residual_dropout(x, &a, self.hidden_dropout, rng)?)?;
        let g = self.gated_layers.forward(&x)?;
        let m = gated_unit(&g, GateActivation::GeluErf)?;
        let m = maybe_dropout(&m, self.hidden_dropout, rng)?;
        let m = self.wo.forward(&m)?;
        self.mlp_norm.forward(&(m + x)?)
    }
}

/// The DNABERT-2 encoder (see the module documentation for the names).
#[derive(Debug, Clone)]
pub struct Dnabert2Encoder {
    cfg: Dnabert2Config,
    word_embeddings: Embedding,
    /// Row 0 of `token_type_embeddings`: every token is of type 0 (single sequences).
    token_type: Tensor,
    emb_norm: LayerNorm,
    layers: Vec<Dnabert2Layer>,
}

impl Dnabert2Encoder {
    /// Builds the encoder under `vb` (the caller's `bert` prefix).
    pub fn new(cfg: &Dnabert2Config, vb: VarBuilder) -> candle_core::Result<Self> {
        let (d, eps) = (cfg.hidden_size, cfg.layer_norm_eps);
        let emb = vb.pp("embeddings");
        let word_embeddings = candle_nn::embedding(cfg.vocab_size, d, emb.pp("word_embeddings"))?;
        let token_type =
            candle_nn::embedding(cfg.type_vocab_size, d, emb.pp("token_type_embeddings"))?
                .embeddings()
                .get(0)?;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| Dnabert2Layer::new(cfg, vb.pp(format!("encoder.layer.{i}"))))
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(Self {
            cfg: cfg.clone(),
            word_embeddings,
            token_type,
            emb_norm: LayerNorm::new(d, eps, emb.pp("LayerNorm"))?,
            layers,
        })
    }

    pub fn config(&self) -> &Dnabert2Config {
        &self.cfg
    }
}

impl super::Backbone for Dnabert2Encoder {
    fn hidden_size(&self) -> usize {
        self.cfg.hidden_size
    }

    fn embed(&self, ids: &Tensor) -> candle_core::Result<Tensor> {
        self.word_embeddings.forward(ids)
    }

    fn forward_from_embeddings(
        &self,
        emb: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> candle_core::Result<Tensor> {
        let (_, l, _) = emb.dims3()?;
        if l > self.cfg.max_length {
            candle_core::bail!(
                "sequence length {l} exceeds the model's max length {}",
                self.cfg.max_length
            );
        }
        let x = emb.broadcast_add(&self.token_type)?;
        let mut x = maybe_dropout(
            &self.emb_norm.forward(&x)?,
            self.cfg.hidden_dropout_prob,
            rng,
        )?;
        let alibi = alibi_bias(self.cfg.num_attention_heads, l, x.dtype(), x.device())?;
        let pad = attention_bias(mask, x.dtype())?;
        for layer in &self.layers {
            x = layer.forward(&x, &alibi, &pad, rng)?;
        }
        // Zero at padding, as the authors' re-padding leaves it.
        x.broadcast_mul(&mask.to_dtype(x.dtype())?.unsqueeze(2)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alibi_slopes_are_the_published_sequences() {
        // 8 heads: 2^-1 … 2^-8 (the ALiBi paper's example).
        let s = alibi_slopes(8);
        for (i, v) in s.iter().enumerate() {
            assert!((v - 2f64.powi(-(i as i32 + 1))).abs() < 1e-15);
        }
        // 12 heads (DNABERT-2-117M): the 8 above, then 16-head slopes 1, 3, 5, 7 (2^-0.5·…).
        let s12 = alibi_slopes(12);
        let s16 = alibi_slopes(16);
        assert_eq!(&s12[..8], &s[..]);
        assert_eq!(&s12[8..], &[s16[0], s16[2], s16[4], s16[6]]);
        // The bits the authors' `_get_alibi_head_slopes(12)` gives in Python (`ratio**i`).
        let python = [
            std::f64::consts::FRAC_1_SQRT_2,
            0.35355339059327384,
            0.17677669529663692,
            0.08838834764831849,
        ];
        assert_eq!(&s12[8..], &python);
        assert!((s16[0] - 2f64.powf(-0.5)).abs() < 1e-15);
    }
}
