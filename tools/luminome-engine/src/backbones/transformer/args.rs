//! Command-line settings of a transformer encoder built from scratch.

use anyhow::Result;
use clap::Args;

use super::config::{AttentionKind, EncoderConfig, PositionEncoding};
use crate::backbones::NtV2Config;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Model")]
pub struct EncoderArgs {
    /// Hidden width of the encoder [default: 128; classify: 64 below 10,000 training records].
    #[arg(long)]
    pub d_model: Option<usize>,
    /// Number of encoder layers [default: 4; classify: 2 below 10,000 training records].
    #[arg(long)]
    pub layers: Option<usize>,
    /// Attention heads per layer (must divide --d-model).
    #[arg(long, default_value_t = 4)]
    pub heads: usize,
    /// Feed-forward width [default: 512; classify: 256 below 10,000 training records].
    #[arg(long)]
    pub ffn: Option<usize>,
    /// Dropout probability (embeddings, attention probabilities, residual branches, FFN; the
    /// CNN's residual branches) [default: 0.1; classify with the transformer: 0.2 below 10,000 training
    /// records].
    #[arg(long)]
    pub dropout: Option<f64>,
    /// Longest sequence (tokens, specials included) the model accepts [default: the training
    /// set's row length].
    #[arg(long)]
    pub max_length: Option<usize>,
    /// Position encoding: learned (absolute) or rotary.
    #[arg(long, default_value = "learned")]
    pub position: PositionEncoding,
    /// Attention: standard (softmax(QKᵀ/√d)·V); genetic (the values weighted feature-wise by
    /// fitness scores that sum to 1 per head, specs/genetic-attention-dual-encoder.md);
    /// genetic-scaled (the same scores times the head width, so they average 1; not in the spec).
    #[arg(long, default_value = "standard")]
    pub attention: AttentionKind,
}

/// The defaults of the encoder flags that depend on the size of the training set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EncoderDefaults {
    pub d_model: usize,
    pub layers: usize,
    pub ffn: usize,
    pub dropout: f64,
}

impl EncoderDefaults {
    pub const STANDARD: Self = Self {
        d_model: 128,
        layers: 4,
        ffn: 512,
        dropout: 0.1,
    };
    /// For training sets below `train::SMALL_TRAINING_SET` records (docs/small-data.md).
    pub const SMALL_DATA: Self = Self {
        d_model: 64,
        layers: 2,
        ffn: 256,
        dropout: 0.2,
    };
}

impl EncoderArgs {
    /// The encoder for a vocabulary of `vocab_size` tokens (padding id `pad_id`) and rows of
    /// `row_length` tokens (the default max length), with the standard defaults.
    pub fn config(
        &self,
        vocab_size: usize,
        pad_id: u32,
        row_length: usize,
    ) -> Result<EncoderConfig> {
        self.config_with(&EncoderDefaults::STANDARD, vocab_size, pad_id, row_length)
    }

    /// The same with `defaults` for the flags not given.
    pub fn config_with(
        &self,
        defaults: &EncoderDefaults,
        vocab_size: usize,
        pad_id: u32,
        row_length: usize,
    ) -> Result<EncoderConfig> {
        let cfg = EncoderConfig {
            vocab_size,
            d_model: self.d_model.unwrap_or(defaults.d_model),
            num_layers: self.layers.unwrap_or(defaults.layers),
            num_heads: self.heads,
            ffn_dim: self.ffn.unwrap_or(defaults.ffn),
            dropout: self.dropout(defaults),
            max_length: self.max_length.unwrap_or(row_length),
            position: self.position,
            layer_norm_eps: 1e-5,
            pad_id,
            attention: self.attention,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// The Nucleotide Transformer v2 architecture of these sizes (`--ffn` is its
    /// `intermediate_size`: the SwiGLU projection is twice as wide), for pretraining here. It
    /// always has rotary positions and standard attention: `--position` and `--attention` other
    /// than their defaults are refused.
    pub fn nt_v2_config(&self, vocab_size: usize, row_length: usize) -> Result<NtV2Config> {
        if self.position != PositionEncoding::Learned || self.attention != AttentionKind::Standard {
            anyhow::bail!("--backbone nt-v2 always has rotary positions and standard attention (the published architecture): leave out --position and --attention");
        }
        let d = EncoderDefaults::STANDARD;
        let sizes = (
            self.d_model.unwrap_or(d.d_model),
            self.layers.unwrap_or(d.layers),
            self.heads,
            self.ffn.unwrap_or(d.ffn),
        );
        NtV2Config::from_sizes(
            vocab_size,
            sizes,
            self.max_length.unwrap_or(row_length),
            self.dropout(&d),
        )
    }

    /// Whether any transformer size (--d-model, --layers, --ffn) was given.
    pub fn sizes_given(&self) -> bool {
        self.d_model.is_some() || self.layers.is_some() || self.ffn.is_some()
    }

    /// `--dropout`, or the default.
    pub fn dropout(&self, defaults: &EncoderDefaults) -> f64 {
        self.dropout.unwrap_or(defaults.dropout)
    }

    /// The flags, among those `defaults` sets, that the user did not give, with their values
    /// (for the log).
    pub fn defaulted(&self, defaults: &EncoderDefaults) -> Vec<String> {
        let mut v = Vec::new();
        if self.d_model.is_none() {
            v.push(format!("--d-model {}", defaults.d_model));
        }
        if self.layers.is_none() {
            v.push(format!("--layers {}", defaults.layers));
        }
        if self.ffn.is_none() {
            v.push(format!("--ffn {}", defaults.ffn));
        }
        if self.dropout.is_none() {
            v.push(format!("--dropout {}", defaults.dropout));
        }
        v
    }
}
