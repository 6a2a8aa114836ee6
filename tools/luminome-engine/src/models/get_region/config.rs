//! The sizes of a GET region model: the keys of the authors' hydra `model.cfg`
//! (get_model/config/model/GETRegion{Finetune,Pretrain}.yaml) that shape the tensors, written as
//! a `config.json` of ours. What the yaml also holds (loss, metrics, dropout rates, flash_attn)
//! does not change inference and is ignored; what it fixes without saying so (mlp_ratio 4, the
//! q/v biases, LayerNorm eps 1e-6, no gamma scaling) is fixed in model.rs.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// Which of the authors' classes a checkpoint is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GetRegionKind {
    /// `GETRegionFinetune`: expression of both strands per region (`head_exp`).
    #[serde(rename = "GETRegionFinetune")]
    Finetune,
    /// `GETRegionPretrain`: masked-region motif reconstruction (`head_mask`, `mask_token`).
    #[serde(rename = "GETRegionPretrain")]
    Pretrain,
}

impl GetRegionKind {
    pub fn class_name(self) -> &'static str {
        match self {
            Self::Finetune => "GETRegionFinetune",
            Self::Pretrain => "GETRegionPretrain",
        }
    }
}

/// `model.cfg` as far as the tensors go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetRegionConfig {
    /// The class; absent: decided by the checkpoint's head (`head_exp` or `head_mask`).
    #[serde(default)]
    pub model: Option<GetRegionKind>,
    /// Regions a sample holds in training (informative: the model has no positional tensors,
    /// so any count runs).
    #[serde(default = "regions")]
    pub num_regions: usize,
    /// Features per region: motif clusters plus the accessibility column (283 = 282 + 1).
    pub num_motif: usize,
    pub embed_dim: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    /// `head_exp` outputs (2: the + and − strand) or `head_mask` outputs (`num_motif`, the
    /// pretrain yaml's `${model.cfg.num_motif}`); 0 or absent: that default for the class.
    #[serde(default)]
    pub output_dim: usize,
}

fn regions() -> usize {
    900
}

/// The heads of the published models, used when nothing says otherwise (the tensors cannot).
pub const DEFAULT_HEADS: usize = 12;

impl GetRegionConfig {
    /// A published size: `get` (GETRegionFinetune/Pretrain as released: 900 regions, 283
    /// features, 768 × 12 layers × 12 heads).
    pub fn preset(name: &str) -> Result<Self> {
        match name {
            "get" => Ok(Self {
                model: None,
                num_regions: 900,
                num_motif: 283,
                embed_dim: 768,
                num_layers: 12,
                num_heads: 12,
                // By class: 2 (finetune) or num_motif (pretrain), see `resolved`.
                output_dim: 0,
            }),
            other => bail!("no GET preset {other:?} (presets: get)"),
        }
    }

    /// Parses `config.json`; `what` names the file in messages.
    pub fn from_json(text: &str, what: &str) -> Result<Self> {
        let cfg: Self = serde_json::from_str(text)
            .map_err(|e| anyhow::anyhow!("{what}: not a GET region config.json: {e}"))?;
        cfg.validate(what)?;
        Ok(cfg)
    }

    /// With the class known: `model` set and an absent `output_dim` given its default.
    pub fn resolved(self, kind: GetRegionKind) -> Self {
        let output_dim = match (self.output_dim, kind) {
            (0, GetRegionKind::Finetune) => 2,
            (0, GetRegionKind::Pretrain) => self.num_motif,
            (n, _) => n,
        };
        Self {
            model: Some(kind),
            output_dim,
            ..self
        }
    }

    /// Width of the MLP inside a block (GETTransformer's mlp_ratio 4, which no config changes).
    pub fn mlp_dim(&self) -> usize {
        4 * self.embed_dim
    }

    /// Every size checked before anything is allocated (a config.json is user input).
    pub fn validate(&self, what: &str) -> Result<()> {
        let checks = [
            (self.num_motif, "num_motif", 1, 1 << 16),
            (self.embed_dim, "embed_dim", 1, 16_384),
            (self.num_layers, "num_layers", 1, 512),
            (self.num_heads, "num_heads", 1, 1024),
            (self.output_dim, "output_dim", 0, 1 << 16),
            (self.num_regions, "num_regions", 1, 1 << 24),
        ];
        for (value, name, lo, hi) in checks {
            if !(lo..=hi).contains(&value) {
                bail!("{what}: {name} = {value} is outside {lo}..={hi}");
            }
        }
        if !self.embed_dim.is_multiple_of(self.num_heads) {
            bail!(
                "{what}: embed_dim {} is not a multiple of num_heads {} (GET splits the width evenly over the heads)",
                self.embed_dim,
                self.num_heads
            );
        }
        Ok(())
    }
}
