//! Model configuration: everything needed to rebuild a model from its weights.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// How token positions enter the encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PositionEncoding {
    /// A learned absolute position embedding added to the token embedding.
    Learned,
    /// Rotary position embedding applied to queries and keys in every attention layer.
    Rotary,
}

impl std::str::FromStr for PositionEncoding {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "learned" => Ok(Self::Learned),
            "rotary" => Ok(Self::Rotary),
            _ => bail!("unknown position encoding {s:?} (expected learned or rotary)"),
        }
    }
}

/// The transformer encoder (pre-LN).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncoderConfig {
    pub vocab_size: usize,
    pub d_model: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub ffn_dim: usize,
    pub dropout: f64,
    pub max_length: usize,
    pub position: PositionEncoding,
    pub layer_norm_eps: f64,
    /// Token id of padding: its embedding row is still learned, but padded positions are masked
    /// out of attention and of every pooling.
    pub pad_id: u32,
}

impl EncoderConfig {
    pub fn validate(&self) -> Result<()> {
        if self.vocab_size == 0 || self.d_model == 0 || self.num_layers == 0 || self.ffn_dim == 0 {
            bail!("vocab size, d_model, layers and FFN width must be positive");
        }
        if self.num_heads == 0 || self.d_model % self.num_heads != 0 {
            bail!(
                "d_model ({}) must be a multiple of the number of heads ({})",
                self.d_model,
                self.num_heads
            );
        }
        if self.position == PositionEncoding::Rotary && (self.d_model / self.num_heads) % 2 != 0 {
            bail!(
                "rotary positions need an even head width (d_model / heads = {})",
                self.d_model / self.num_heads
            );
        }
        if !(0.0..1.0).contains(&self.dropout) {
            bail!("dropout must be in [0, 1), got {}", self.dropout);
        }
        if self.max_length == 0 {
            bail!("max length must be positive");
        }
        Ok(())
    }

    pub fn head_dim(&self) -> usize {
        self.d_model / self.num_heads
    }
}

/// Which sequence-classification adapter sits on the encoder (specs/adapters-dynamic-gated.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdapterKind {
    /// LinearCLS: y = W h_[CLS].
    Cls,
    /// LinearMeanPool: y = W (Σ h_i m_i / (Σ m_i + ε)).
    Mean,
    /// LinearMaxPool: y = W max_{m_i = 1} h_i.
    Max,
    /// DynamicGated: gates from [h_CLS; h_i] and q_CLSᵀ k_i, gated masked sum, LayerNorm, linear.
    Gated,
}

impl AdapterKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Cls => "cls",
            Self::Mean => "mean",
            Self::Max => "max",
            Self::Gated => "gated",
        }
    }
}

impl std::str::FromStr for AdapterKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "cls" => Ok(Self::Cls),
            "mean" => Ok(Self::Mean),
            "max" => Ok(Self::Max),
            "gated" => Ok(Self::Gated),
            _ => bail!("unknown adapter {s:?} (expected cls, mean, max or gated)"),
        }
    }
}

/// A sequence classifier: encoder + adapter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassifierConfig {
    pub encoder: EncoderConfig,
    pub adapter: AdapterKind,
    pub num_classes: usize,
    /// The dataset label value of each class index (class i ↔ label_values[i]).
    pub label_values: Vec<i64>,
}

/// A masked-LM model: encoder + LM head over the vocabulary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlmConfig {
    pub encoder: EncoderConfig,
}

/// What a checkpoint holds; serialised with a `kind` tag (`mlm` or `classifier`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ModelConfig {
    Mlm(MlmConfig),
    Classifier(ClassifierConfig),
}

impl ModelConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Mlm(_) => "mlm",
            Self::Classifier(_) => "classifier",
        }
    }

    pub fn encoder(&self) -> &EncoderConfig {
        match self {
            Self::Mlm(c) => &c.encoder,
            Self::Classifier(c) => &c.encoder,
        }
    }
}
