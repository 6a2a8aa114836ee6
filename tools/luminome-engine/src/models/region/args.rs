//! Command-line settings of a region encoder built from scratch.

use anyhow::Result;
use clap::Args;

use super::config::{RegionEncoderConfig, RegionPosition, RegionPreset};

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Model")]
pub struct RegionEncoderArgs {
    /// Named sizes: tiny (d 32 x 1 layer), small (d 128 x 4), base (d 256 x 6), get (the
    /// spec's d 768 x 12 layers x 12 heads); --d-model, --layers, --heads, --ffn override.
    #[arg(long, value_enum, default_value = "small")]
    pub preset: RegionPreset,
    /// Hidden width D [default: the preset's].
    #[arg(long)]
    pub d_model: Option<usize>,
    /// Transformer layers [default: the preset's].
    #[arg(long)]
    pub layers: Option<usize>,
    /// Attention heads (must divide --d-model) [default: the preset's].
    #[arg(long)]
    pub heads: Option<usize>,
    /// Feed-forward width [default: the preset's].
    #[arg(long)]
    pub ffn: Option<usize>,
    /// Dropout (region embeddings, attention probabilities, residual branches, FFN).
    #[arg(long, default_value_t = 0.1)]
    pub dropout: f64,
    /// How regions know their place: tss-relative (a learned embedding of each region's
    /// distance in regions from the TSS, strand-aware) or none (the spec's model, blind to
    /// order and to which region holds the TSS).
    #[arg(long, value_enum, default_value = "tss-relative")]
    pub position: RegionPosition,
    /// Attention: standard, genetic (specs/genetic-attention-dual-encoder.md) or
    /// genetic-scaled (docs/dual.md).
    #[arg(long, default_value = "standard")]
    pub attention: crate::backbones::AttentionKind,
}

impl RegionEncoderArgs {
    /// The encoder for regions of `n_features` features and `n_regions` slots.
    pub fn config(&self, n_features: usize, n_regions: usize) -> Result<RegionEncoderConfig> {
        let (d, l, h, f) = self.preset.sizes();
        let cfg = RegionEncoderConfig {
            n_features,
            d_model: self.d_model.unwrap_or(d),
            num_layers: self.layers.unwrap_or(l),
            num_heads: self.heads.unwrap_or(h),
            ffn_dim: self.ffn.unwrap_or(f),
            dropout: self.dropout,
            max_regions: n_regions,
            position: self.position,
            layer_norm_eps: 1e-5,
            attention: self.attention,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Whether any size was given on the command line (they do not apply to an --init model).
    pub fn sizes_given(&self) -> bool {
        self.d_model.is_some()
            || self.layers.is_some()
            || self.heads.is_some()
            || self.ffn.is_some()
    }
}
