//! The region encoder's configuration: sizes, named presets and how regions learn their place
//! relative to the TSS.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::backbones::{AttentionKind, EncoderConfig, PositionEncoding};

/// How a region's place in the window enters the encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum RegionPosition {
    /// None: the spec's model; self-attention over the regions is then blind to their order
    /// and to which region holds the TSS.
    None,
    /// A learned embedding of each region's signed distance, in regions, from the TSS
    /// (0 = the TSS region; negative upstream, positive downstream on the gene's strand; clamped
    /// to ±max_regions), added to its RegionEmb.
    TssRelative,
}

impl RegionPosition {
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::TssRelative => "tss-relative",
        }
    }
}

/// The encoder of region × feature matrices: standardisation, RegionEmb (linear F → D, no
/// activation, no bias), positions, transformer blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionEncoderConfig {
    /// Features per region (F = motif features + accessibility).
    pub n_features: usize,
    pub d_model: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub ffn_dim: usize,
    pub dropout: f64,
    /// Region slots per sample (N) the model accepts.
    pub max_regions: usize,
    pub position: RegionPosition,
    pub layer_norm_eps: f64,
    /// Standard or genetic attention in the blocks (absent for standard: older checkpoints
    /// keep their bytes).
    #[serde(default, skip_serializing_if = "AttentionKind::is_standard")]
    pub attention: AttentionKind,
}

/// Named sizes: the spec's (GET's) and small ones that train on a laptop CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RegionPreset {
    /// d 32, 1 layer, 2 heads, FFN 64: for tests and wiring.
    Tiny,
    /// d 128, 4 layers, 4 heads, FFN 256: minutes per run on a laptop CPU.
    Small,
    /// d 256, 6 layers, 8 heads, FFN 1024.
    Base,
    /// The spec's: d 768, 12 layers, 12 heads, FFN 3072 (GET; a GPU's job).
    Get,
}

impl RegionPreset {
    /// (d_model, layers, heads, ffn).
    pub fn sizes(self) -> (usize, usize, usize, usize) {
        match self {
            Self::Tiny => (32, 1, 2, 64),
            Self::Small => (128, 4, 4, 256),
            Self::Base => (256, 6, 8, 1024),
            Self::Get => (768, 12, 12, 3072),
        }
    }
}

impl RegionEncoderConfig {
    pub fn validate(&self) -> Result<()> {
        if self.n_features == 0
            || self.d_model == 0
            || self.num_layers == 0
            || self.ffn_dim == 0
            || self.max_regions == 0
        {
            bail!("features, d_model, layers, FFN width and max regions must be positive");
        }
        if self.num_heads == 0 || !self.d_model.is_multiple_of(self.num_heads) {
            bail!(
                "d_model ({}) must be a multiple of the number of heads ({})",
                self.d_model,
                self.num_heads
            );
        }
        if !(0.0..1.0).contains(&self.dropout) {
            bail!("dropout must be in [0, 1), got {}", self.dropout);
        }
        let params = (self.n_features as u128 + 2 * self.max_regions as u128 + 1)
            * self.d_model as u128
            + self.num_layers as u128
                * (4 * (self.d_model as u128).pow(2)
                    + 2 * self.d_model as u128 * self.ffn_dim as u128);
        if self.n_features > 1 << 20 || self.max_regions > 1 << 20 || params > 4_000_000_000 {
            bail!(
                "{} features, {} regions and d_model {} x {} layers are more than this tool builds",
                self.n_features,
                self.max_regions,
                self.d_model,
                self.num_layers
            );
        }
        Ok(())
    }

    /// Offsets from the TSS are clamped to ±this.
    pub fn max_offset(&self) -> usize {
        self.max_regions
    }

    /// The transformer blocks' settings (the token fields are unused by the region encoder).
    pub fn blocks(&self) -> EncoderConfig {
        EncoderConfig {
            vocab_size: 1,
            d_model: self.d_model,
            num_layers: self.num_layers,
            num_heads: self.num_heads,
            ffn_dim: self.ffn_dim,
            dropout: self.dropout,
            max_length: self.max_regions,
            position: PositionEncoding::Learned,
            layer_norm_eps: self.layer_norm_eps,
            pad_id: 0,
            attention: self.attention,
        }
    }
}
