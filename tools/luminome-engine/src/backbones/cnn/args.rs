//! Command-line settings of the dilated residual CNN (`--backbone cnn`). Dropout and the
//! maximum length are the shared `--dropout` / `--max-length` flags.

use anyhow::Result;
use clap::Args;

use super::CnnConfig;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Model (CNN)")]
pub struct CnnArgs {
    /// --backbone cnn: channels of every layer (the hidden width the adapter sees).
    #[arg(long, default_value_t = 64)]
    pub cnn_channels: usize,
    /// --backbone cnn: dilated residual blocks (block i has dilation 2^i).
    #[arg(long, default_value_t = 7)]
    pub cnn_layers: usize,
    /// --backbone cnn: width of the dilated convolutions (odd).
    #[arg(long, default_value_t = 3)]
    pub cnn_kernel: usize,
    /// --backbone cnn: width of the first convolution over the one-hot bases (odd).
    #[arg(long, default_value_t = 15)]
    pub cnn_first_kernel: usize,
}

impl CnnArgs {
    /// The CNN for a vocabulary of `vocab_size` tokens and rows of at most `max_length` tokens.
    pub fn config(
        &self,
        vocab_size: usize,
        pad_id: u32,
        max_length: usize,
        dropout: f64,
    ) -> Result<CnnConfig> {
        let cfg = CnnConfig {
            vocab_size,
            channels: self.cnn_channels,
            first_kernel: self.cnn_first_kernel,
            kernel: self.cnn_kernel,
            num_layers: self.cnn_layers,
            dropout,
            max_length,
            layer_norm_eps: 1e-5,
            pad_id,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}
