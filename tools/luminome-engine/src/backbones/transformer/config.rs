//! The transformer encoder's configuration.

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

/// How attention weighs its values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttentionKind {
    /// softmax(QKᵀ/√d)·V.
    #[default]
    Standard,
    /// Genetic attention (specs/genetic-attention-dual-encoder.md): per head, the values are
    /// multiplied feature-wise by fitness scores γ_g = (Σ_s (Φ_g + ½)/(Φ_s + ½))⁻¹, where Φ_g is
    /// the mean over the unmasked positions of σ(V)[:, g]; then softmax(QKᵀ/√d)·(V ⊙ γ).
    Genetic,
    /// Genetic attention with γ multiplied by the head width, so the fitness scores average 1
    /// instead of summing to 1 (not in the spec: values keep their scale; docs/dual.md).
    GeneticScaled,
}

impl AttentionKind {
    pub fn is_standard(&self) -> bool {
        *self == Self::Standard
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::Genetic => "genetic",
            Self::GeneticScaled => "genetic-scaled",
        }
    }
}

impl std::str::FromStr for AttentionKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "standard" => Ok(Self::Standard),
            "genetic" => Ok(Self::Genetic),
            "genetic-scaled" => Ok(Self::GeneticScaled),
            _ => bail!("unknown attention {s:?} (expected standard, genetic or genetic-scaled)"),
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
    /// Standard or genetic attention (absent in checkpoints written before it existed, and for
    /// standard attention, so their bytes are unchanged).
    #[serde(default, skip_serializing_if = "AttentionKind::is_standard")]
    pub attention: AttentionKind,
}

impl EncoderConfig {
    pub fn validate(&self) -> Result<()> {
        if self.vocab_size == 0 || self.d_model == 0 || self.num_layers == 0 || self.ffn_dim == 0 {
            bail!("vocab size, d_model, layers and FFN width must be positive");
        }
        if self.num_heads == 0 || !self.d_model.is_multiple_of(self.num_heads) {
            bail!(
                "d_model ({}) must be a multiple of the number of heads ({})",
                self.d_model,
                self.num_heads
            );
        }
        if self.position == PositionEncoding::Rotary
            && !(self.d_model / self.num_heads).is_multiple_of(2)
        {
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
        // Caps far above any model this suite trains: a checkpoint's config is user input, and
        // an absurd size must be refused before anything of that size is allocated.
        for (what, v, cap) in [
            ("vocabulary size", self.vocab_size, 1usize << 24),
            ("d_model", self.d_model, 1 << 16),
            ("FFN width", self.ffn_dim, 1 << 18),
            ("layers", self.num_layers, 1 << 10),
            ("max length", self.max_length, 1 << 22),
        ] {
            if v > cap {
                bail!("{what} {v} is larger than the largest this suite builds ({cap})");
            }
        }
        Ok(())
    }

    pub fn head_dim(&self) -> usize {
        self.d_model / self.num_heads
    }
}
