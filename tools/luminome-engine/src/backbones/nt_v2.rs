//! Nucleotide Transformer v2 (Dalla-Torre et al. 2024; `InstaDeepAI/nucleotide-transformer-v2-*`),
//! the published encoder as its Hugging Face port computes it (`modeling_esm.py`, the authors'
//! remote code: transformers' ESM with a gated feed-forward): pre-LN blocks whose queries and
//! keys carry rotary positions (queries scaled by 1/√Dh first), a SwiGLU feed-forward
//! (`intermediate.dense` to twice the width, SiLU of the first half times the second,
//! `output.dense` back; biases as `add_bias_fnn` says), and a final layer norm
//! (`emb_layer_norm_after`).
//!
//! Parameter names are the checkpoint's, under `esm.` (the published `EsmForMaskedLM`'s
//! prefix): `embeddings.word_embeddings`, `encoder.layer.{i}.attention.self.{query,key,value}`,
//! `encoder.layer.{i}.attention.{output.dense,LayerNorm}`, `encoder.layer.{i}.intermediate.dense`,
//! `encoder.layer.{i}.output.dense`, `encoder.layer.{i}.LayerNorm`,
//! `encoder.emb_layer_norm_after`. The masked-LM head, the contact head, the rotary `inv_freq`
//! buffers (the tables are recomputed as the port does) and `embeddings.position_embeddings`
//! (stored by the port, never added with rotary positions) are not read. The published
//! `config.json` has no `model_type`: the authors' `esm_config.EsmConfig` in `auto_map` names it.
//!
//! Padding: as in the port, the embeddings are multiplied by the mask and padded keys are
//! left out of every softmax; padded positions keep whatever the layers give them (heads read
//! the mask).

use anyhow::{bail, Result};
use candle_core::{Module, Tensor};
use candle_nn::{Embedding, VarBuilder};
use serde::{Deserialize, Serialize};

use super::transformer::attention::Rotary;
use crate::nn::{
    attention_bias, batched_matmul, gated_unit, maybe_dropout, residual_dropout,
    softmax_last_dim_biased, DropoutRng, GateActivation, LayerNorm, Linear,
};

/// The published `config.json` fields the architecture reads (names as published), and the
/// longest input a Luminome model built on it takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NtV2Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub hidden_dropout_prob: f64,
    #[serde(default)]
    pub attention_probs_dropout_prob: f64,
    /// Whether the feed-forward's two projections have biases (false in every v2 release).
    #[serde(default = "default_true")]
    pub add_bias_fnn: bool,
    /// A layer norm on the embeddings (`embeddings.layer_norm`; false in every v2 release).
    #[serde(default)]
    pub emb_layer_norm_before: bool,
    /// The longest input the model was trained on (tokens, `<cls>` included).
    pub max_position_embeddings: usize,
    /// Luminome's: the longest row (tokens, specials included) of the data it was set up for.
    #[serde(default = "default_max_length")]
    pub max_length: usize,
}

fn default_eps() -> f64 {
    1e-12
}
fn default_true() -> bool {
    true
}
fn default_max_length() -> usize {
    1000
}

impl NtV2Config {
    /// From a published `config.json`: an ESM configuration with rotary positions and no token
    /// dropout (the v2 releases; v1's learned positions and the protein ESM-2 models are
    /// refused by name); `max_length` is Luminome's and must fit `max_position_embeddings`.
    pub fn from_published(json: &str, what: &str, max_length: usize) -> Result<Self> {
        let v: serde_json::Value =
            serde_json::from_str(json).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        let text = |key: &str| v.get(key).and_then(|m| m.as_str());
        if !is_esm_config(&v) {
            bail!("{what}: not a Nucleotide Transformer configuration (neither model_type \"esm\" nor the authors' esm_config.EsmConfig in auto_map)");
        }
        if text("position_embedding_type") != Some("rotary") {
            bail!(
                "{what}: position_embedding_type {:?}: only the rotary Nucleotide Transformer v2 releases are supported (v1's learned positions are not)",
                text("position_embedding_type").unwrap_or("absolute")
            );
        }
        let flag = |key: &str| v.get(key).and_then(|m| m.as_bool()).unwrap_or(false);
        if flag("token_dropout") || flag("is_folding_model") {
            bail!("{what}: token_dropout / is_folding_model is set: an ESM protein model, not a Nucleotide Transformer v2");
        }
        let mut c: Self = serde_json::from_value(v).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        c.max_length = max_length;
        c.validate().map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        Ok(c)
    }

    /// An encoder of the given sizes in the v2 releases' form — rotary positions, a SwiGLU
    /// feed-forward without biases, no embedding layer norm, ε 1e-12 — for pretraining here
    /// (`luminome-train mlm --backbone nt-v2`). `max_position_embeddings` is the longest row it
    /// is trained on, `max_length`, as the published field means.
    pub fn from_sizes(
        vocab_size: usize,
        (hidden_size, num_hidden_layers, num_attention_heads, intermediate_size): (
            usize,
            usize,
            usize,
            usize,
        ),
        max_length: usize,
        dropout: f64,
    ) -> Result<Self> {
        let c = Self {
            vocab_size,
            hidden_size,
            num_hidden_layers,
            num_attention_heads,
            intermediate_size,
            layer_norm_eps: default_eps(),
            hidden_dropout_prob: dropout,
            attention_probs_dropout_prob: 0.0,
            add_bias_fnn: false,
            emb_layer_norm_before: false,
            max_position_embeddings: max_length,
            max_length,
        };
        c.validate()?;
        Ok(c)
    }

    pub fn validate(&self) -> Result<()> {
        super::check_published_encoder(
            "Nucleotide Transformer",
            "500 M",
            &[
                self.vocab_size,
                self.hidden_size,
                self.num_hidden_layers,
                self.num_attention_heads,
                self.intermediate_size,
                self.max_position_embeddings,
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
        if !self.hidden_size.is_multiple_of(self.num_attention_heads)
            || !self.head_dim().is_multiple_of(2)
        {
            bail!(
                "hidden_size {} must split into num_attention_heads {} heads of an even width (rotary positions)",
                self.hidden_size,
                self.num_attention_heads
            );
        }
        if self.max_length > self.max_position_embeddings {
            bail!(
                "rows of {} tokens are longer than the {} the model was trained on (max_position_embeddings); cut them with luminome-tokenize --max-length",
                self.max_length,
                self.max_position_embeddings
            );
        }
        Ok(())
    }

    fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }
}

/// Whether a parsed `config.json` is an ESM configuration: `model_type` "esm" (transformers'
/// own ESM, e.g. the v1 releases), or, as the v2 releases publish it (no `model_type`), the
/// authors' remote configuration class `esm_config.EsmConfig` in `auto_map`.
pub fn is_esm_config(v: &serde_json::Value) -> bool {
    let auto = v
        .pointer("/auto_map/AutoConfig")
        .and_then(|m| m.as_str())
        .is_some_and(|c| c.ends_with("esm_config.EsmConfig"));
    match v.get("model_type").and_then(|m| m.as_str()) {
        Some(m) => m == "esm",
        None => auto,
    }
}

/// One pre-LN block: rotary self-attention, then the SwiGLU feed-forward, each around a residual.
#[derive(Debug, Clone)]
struct NtV2Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    ffn_norm: LayerNorm,
    heads: usize,
    head_dim: usize,
    hidden_dropout: f64,
    attention_dropout: f64,
}

impl NtV2Layer {
    fn new(cfg: &NtV2Config, vb: VarBuilder) -> candle_core::Result<Self> {
        let (d, f, eps) = (cfg.hidden_size, cfg.intermediate_size, cfg.layer_norm_eps);
        let attn = vb.pp("attention");
        let ffn = |i: usize, o: usize, vb: VarBuilder| {
            if cfg.add_bias_fnn {
                Linear::new(i, o, vb)
            } else {
                Linear::no_bias(i, o, vb)
            }
        };
        Ok(Self {
            query: Linear::new(d, d, attn.pp("self").pp("query"))?,
            key: Linear::new(d, d, attn.pp("self").pp("key"))?,
            value: Linear::new(d, d, attn.pp("self").pp("value"))?,
            attn_out: Linear::new(d, d, attn.pp("output").pp("dense"))?,
            attn_norm: LayerNorm::new(d, eps, attn.pp("LayerNorm"))?,
            intermediate: ffn(d, 2 * f, vb.pp("intermediate").pp("dense"))?,
            output: ffn(f, d, vb.pp("output").pp("dense"))?,
            ffn_norm: LayerNorm::new(d, eps, vb.pp("LayerNorm"))?,
            heads: cfg.num_attention_heads,
            head_dim: cfg.head_dim(),
            hidden_dropout: cfg.hidden_dropout_prob,
            attention_dropout: cfg.attention_probs_dropout_prob,
        })
    }

    /// `[B, L, D]` → `[B, H, L, Dh]`.
    fn heads_of(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (b, l, _) = x.dims3()?;
        x.reshape((b, l, self.heads, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()
    }

    /// `x` `[B, L, D]`; `pad` `[B, 1, 1, L]` (0 at tokens).
    fn forward(
        &self,
        x: &Tensor,
        rotary: &Rotary,
        pad: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> candle_core::Result<Tensor> {
        let (b, l, d) = x.dims3()?;
        let h = self.attn_norm.forward(x)?;
        let scale = 1.0 / (self.head_dim as f64).sqrt();
        let q = rotary.apply(&(self.heads_of(&self.query.forward(&h)?)? * scale)?)?;
        let k = rotary.apply(&self.heads_of(&self.key.forward(&h)?)?)?;
        let v = self.heads_of(&self.value.forward(&h)?)?;
        let probs = softmax_last_dim_biased(&batched_matmul(&q, &k.t()?)?, pad)?;
        let probs = maybe_dropout(&probs, self.attention_dropout, rng)?;
        let ctx = batched_matmul(&probs, &v)?
            .transpose(1, 2)?
            .reshape((b, l, d))?;
        let x = residual_dropout(x, &self.attn_out.forward(&ctx)?, self.hidden_dropout, rng)?;
        let g = self.intermediate.forward(&self.ffn_norm.forward(&x)?)?;
        let m = gated_unit(&g, GateActivation::Silu)?;
        residual_dropout(&x, &self.output.forward(&m)?, self.hidden_dropout, rng)
    }
}

/// The Nucleotide Transformer v2 encoder (see the module documentation for the names).
#[derive(Debug, Clone)]
pub struct NtV2Encoder {
    cfg: NtV2Config,
    word_embeddings: Embedding,
    emb_norm: Option<LayerNorm>,
    layers: Vec<NtV2Layer>,
    final_norm: LayerNorm,
    rotary: Rotary,
}

impl NtV2Encoder {
    /// Builds the encoder under `vb` (the caller's `esm` prefix).
    pub fn new(cfg: &NtV2Config, vb: VarBuilder) -> candle_core::Result<Self> {
        let (d, eps) = (cfg.hidden_size, cfg.layer_norm_eps);
        let emb = vb.pp("embeddings");
        let word_embeddings = candle_nn::embedding(cfg.vocab_size, d, emb.pp("word_embeddings"))?;
        let emb_norm = cfg
            .emb_layer_norm_before
            .then(|| LayerNorm::new(d, eps, emb.pp("layer_norm")))
            .transpose()?;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| NtV2Layer::new(cfg, vb.pp(format!("encoder.layer.{i}"))))
            .collect::<candle_core::Result<Vec<_>>>()?;
        let final_norm = LayerNorm::new(d, eps, vb.pp("encoder").pp("emb_layer_norm_after"))?;
        let rotary = Rotary::esm(cfg.head_dim(), cfg.max_length, vb.dtype(), vb.device())?;
        Ok(Self {
            cfg: cfg.clone(),
            word_embeddings,
            emb_norm,
            layers,
            final_norm,
            rotary,
        })
    }

    pub fn config(&self) -> &NtV2Config {
        &self.cfg
    }
}

impl super::Backbone for NtV2Encoder {
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
        let x = match &self.emb_norm {
            Some(n) => n.forward(emb)?,
            None => emb.clone(),
        };
        let keep = mask.to_dtype(x.dtype())?.unsqueeze(2)?;
        let mut x = x.broadcast_mul(&keep)?;
        let pad = attention_bias(mask, x.dtype())?;
        for layer in &self.layers {
            x = layer.forward(&x, &self.rotary, &pad, rng)?;
        }
        self.final_norm.forward(&x)
    }
}
