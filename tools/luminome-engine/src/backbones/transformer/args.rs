//! Command-line settings of a transformer encoder built from scratch.

use anyhow::Result;
use clap::Args;

use super::config::{EncoderConfig, PositionEncoding};

#[derive(Args, Debug, Clone)]
pub struct EncoderArgs {
    /// Hidden width of the encoder.
    #[arg(long, default_value_t = 128)]
    pub d_model: usize,
    /// Number of encoder layers.
    #[arg(long, default_value_t = 4)]
    pub layers: usize,
    /// Attention heads per layer (must divide --d-model).
    #[arg(long, default_value_t = 4)]
    pub heads: usize,
    /// Feed-forward width.
    #[arg(long, default_value_t = 512)]
    pub ffn: usize,
    /// Dropout probability (embeddings, attention probabilities, residual branches, FFN).
    #[arg(long, default_value_t = 0.1)]
    pub dropout: f64,
    /// Longest sequence (tokens, specials included) the model accepts [default: the training
    /// set's row length].
    #[arg(long)]
    pub max_length: Option<usize>,
    /// Position encoding: learned (absolute) or rotary.
    #[arg(long, default_value = "learned")]
    pub position: PositionEncoding,
}

impl EncoderArgs {
    /// The encoder for a vocabulary of `vocab_size` tokens (padding id `pad_id`) and rows of
    /// `row_length` tokens (the default max length).
    pub fn config(
        &self,
        vocab_size: usize,
        pad_id: u32,
        row_length: usize,
    ) -> Result<EncoderConfig> {
        let cfg = EncoderConfig {
            vocab_size,
            d_model: self.d_model,
            num_layers: self.layers,
            num_heads: self.heads,
            ffn_dim: self.ffn,
            dropout: self.dropout,
            max_length: self.max_length.unwrap_or(row_length),
            position: self.position,
            layer_norm_eps: 1e-5,
            pad_id,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}
