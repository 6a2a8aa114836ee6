//! Backbones: what turns a sequence into per-position hidden states. Heads such as the four
//! classification adapters sit on any [`Backbone`] (they need hidden states `[B, L, D]` and the
//! padding mask `[B, L]`, nothing else), so a new backbone serves every head at once.

pub mod cnn;
pub mod dnabert2;
pub mod nt_v2;
pub mod transformer;

use std::sync::Arc;

use anyhow::Result;
use candle_core::Tensor;
use candle_nn::VarBuilder;
use serde::{Deserialize, Serialize};

use crate::nn::DropoutRng;
pub use cnn::{CnnArgs, CnnConfig, DilatedResidualCnn};
pub use dnabert2::{Dnabert2Config, Dnabert2Encoder};
pub use nt_v2::{NtV2Config, NtV2Encoder};
pub use transformer::{
    AttentionKind, Encoder, EncoderArgs, EncoderConfig, EncoderDefaults, EncoderStack,
    PositionEncoding,
};

/// The largest published encoder built (parameters): 10× the largest release of either family.
const MAX_PUBLISHED_PARAMETERS: u128 = 5_000_000_000;

/// What a published encoder's `config.json` must hold before anything is allocated (the file is
/// user input): every size between 1 and 2^20, at most [`MAX_PUBLISHED_PARAMETERS`] (a BERT-style
/// count — embeddings, four attention projections, a gated feed-forward), dropout probabilities
/// in [0, 1). `shape`: vocabulary, hidden width, layers, feed-forward width.
pub(crate) fn check_published_encoder(
    family: &str,
    largest: &str,
    sizes: &[usize],
    (vocab, hidden, layers, ffn): (usize, usize, usize, usize),
    dropouts: [f64; 2],
) -> Result<()> {
    if sizes.iter().any(|&s| s == 0 || s > 1 << 20) {
        anyhow::bail!("{family} sizes must be between 1 and 2^20: {sizes:?}");
    }
    let (d, f) = (hidden as u128, ffn as u128);
    let params = vocab as u128 * d + layers as u128 * (4 * d * d + 3 * d * f + 8 * d);
    if params > MAX_PUBLISHED_PARAMETERS {
        anyhow::bail!("a {family} of {params} parameters is over the {MAX_PUBLISHED_PARAMETERS} this version builds (the largest published has {largest})");
    }
    for p in dropouts {
        if !(0.0..1.0).contains(&p) {
            anyhow::bail!("dropout probabilities must be in [0, 1), got {p}");
        }
    }
    Ok(())
}

/// Anything that yields per-position hidden states and respects a padding mask.
pub trait Backbone: std::fmt::Debug + Send + Sync {
    /// Width D of the hidden states.
    fn hidden_size(&self) -> usize;

    /// Input embeddings `[B, L, E]` of token ids `[B, L]` (u32): the input that gradient
    /// methods (gradient × input, integrated gradients) attribute to.
    fn embed(&self, ids: &Tensor) -> candle_core::Result<Tensor>;

    /// Hidden states `[B, L, D]` from input embeddings and the mask `[B, L]` (1 = token,
    /// 0 = padding); `rng` applies dropout (training).
    fn forward_from_embeddings(
        &self,
        emb: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> candle_core::Result<Tensor>;

    /// Whether every nonlinear operation of the backbone follows DeepLIFT's rules inside a
    /// [`crate::nn::deeplift::Scope`] (the CNN: ReLU and layer norm), so attributions against
    /// references are complete.
    fn has_deeplift_rules(&self) -> bool {
        false
    }

    /// Hidden states `[B, L, D]` of token ids `[B, L]`.
    fn forward(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> candle_core::Result<Tensor> {
        self.forward_from_embeddings(&self.embed(ids)?, mask, rng)
    }
}

/// Which backbone to build (`--backbone`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackboneKind {
    Transformer,
    Cnn,
    /// The published DNABERT-2 encoder (from `--init DIR|hf:ORG/NAME` only).
    Dnabert2,
    /// The published Nucleotide Transformer v2 encoder (from `--init DIR|hf:ORG/NAME` only).
    NtV2,
}

impl BackboneKind {
    /// The `--backbone` value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Transformer => "transformer",
            Self::Cnn => "cnn",
            Self::Dnabert2 => "dnabert2",
            Self::NtV2 => "nt-v2",
        }
    }
}

impl std::str::FromStr for BackboneKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "transformer" => Ok(Self::Transformer),
            "cnn" => Ok(Self::Cnn),
            "dnabert2" => Ok(Self::Dnabert2),
            "nt-v2" => Ok(Self::NtV2),
            _ => anyhow::bail!(
                "unknown backbone {s:?} (expected transformer, cnn, dnabert2 or nt-v2)"
            ),
        }
    }
}

/// Which backbone a model uses and its sizes. Serialised as one key naming the backbone
/// (`"encoder": {...}` for the transformer, `"cnn": {...}` for the CNN), which is also the prefix
/// of its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum BackboneConfig {
    /// The transformer encoder; parameters under `encoder.*`.
    #[serde(rename = "encoder")]
    Transformer(EncoderConfig),
    /// The dilated residual CNN over one-hot bases; parameters under `cnn.*`.
    #[serde(rename = "cnn")]
    Cnn(CnnConfig),
    /// The published DNABERT-2 encoder; parameters under `bert.*`, the checkpoint's names.
    #[serde(rename = "dnabert2")]
    Dnabert2(Dnabert2Config),
    /// The published Nucleotide Transformer v2 encoder; parameters under `esm.*`, the
    /// checkpoint's names.
    #[serde(rename = "nt_v2")]
    NtV2(NtV2Config),
}

impl BackboneConfig {
    pub fn kind(&self) -> BackboneKind {
        match self {
            Self::Transformer(_) => BackboneKind::Transformer,
            Self::Cnn(_) => BackboneKind::Cnn,
            Self::Dnabert2(_) => BackboneKind::Dnabert2,
            Self::NtV2(_) => BackboneKind::NtV2,
        }
    }

    /// The prefix of the backbone's parameter names (without the dot).
    pub fn prefix(&self) -> &'static str {
        match self {
            Self::Transformer(_) => "encoder",
            Self::Cnn(_) => "cnn",
            Self::Dnabert2(_) => "bert",
            Self::NtV2(_) => "esm",
        }
    }

    pub fn validate(&self) -> Result<()> {
        match self {
            Self::Transformer(c) => c.validate(),
            Self::Cnn(c) => c.validate(),
            Self::Dnabert2(c) => c.validate(),
            Self::NtV2(c) => c.validate(),
        }
    }

    pub fn hidden_size(&self) -> usize {
        match self {
            Self::Transformer(c) => c.d_model,
            Self::Cnn(c) => c.channels,
            Self::Dnabert2(c) => c.hidden_size,
            Self::NtV2(c) => c.hidden_size,
        }
    }

    /// Longest input (positions, specials included) the backbone accepts.
    pub fn max_length(&self) -> usize {
        match self {
            Self::Transformer(c) => c.max_length,
            Self::Cnn(c) => c.max_length,
            Self::Dnabert2(c) => c.max_length,
            Self::NtV2(c) => c.max_length,
        }
    }

    /// The epsilon of layer norms in heads that sit on this backbone.
    pub fn layer_norm_eps(&self) -> f64 {
        match self {
            Self::Transformer(c) => c.layer_norm_eps,
            Self::Cnn(c) => c.layer_norm_eps,
            Self::Dnabert2(c) => c.layer_norm_eps,
            Self::NtV2(c) => c.layer_norm_eps,
        }
    }

    /// Dropout probability used in training.
    pub fn dropout(&self) -> f64 {
        match self {
            Self::Transformer(c) => c.dropout,
            Self::Cnn(c) => c.dropout,
            Self::Dnabert2(c) => c.hidden_dropout_prob,
            Self::NtV2(c) => c.hidden_dropout_prob,
        }
    }

    /// Builds the backbone under `vb.pp(prefix)`.
    pub fn build(&self, vb: VarBuilder) -> candle_core::Result<Arc<dyn Backbone>> {
        let vb = vb.pp(self.prefix());
        Ok(match self {
            Self::Transformer(c) => Arc::new(Encoder::new(c, vb)?),
            Self::Cnn(c) => Arc::new(DilatedResidualCnn::new(c, vb)?),
            Self::Dnabert2(c) => Arc::new(Dnabert2Encoder::new(c, vb)?),
            Self::NtV2(c) => Arc::new(NtV2Encoder::new(c, vb)?),
        })
    }
}
