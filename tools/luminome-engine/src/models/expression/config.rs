//! The expression family's config.

use anyhow::{bail, Result};
use candle_nn::{VarBuilder, VarMap};
use serde::{Deserialize, Serialize};

use super::linear_path::LinearPathConfig;
use super::model::ExpressionModel;
use crate::models::get_region::GetRegionConfig;
use crate::models::region::data::init_region_parameters;
use crate::models::region::{Holdout, RegionEncoderConfig};
use crate::models::FamilyConfig;

/// How the region states become one prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ExpressionHead {
    /// The spec's: attention pooling over the real regions, then an MLP (D → hidden → 1, GELU).
    AttentionPool { mlp_hidden: usize },
    /// GET's: a linear layer on each region's state, read at the TSS region.
    TssRegion,
}

impl ExpressionHead {
    pub fn name(self) -> &'static str {
        match self {
            Self::AttentionPool { .. } => "attention-pool",
            Self::TssRegion => "tss-region",
        }
    }
}

/// The training loss, which also fixes the output: Poisson predicts a rate (softplus of the
/// head), MSE the value itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ExpressionLoss {
    /// Poisson negative log-likelihood of the targets given rate ŷ = softplus(head):
    /// ŷ − y ln ŷ (PyTorch's PoissonNLLLoss(log_input=False)); targets must be ≥ 0.
    Poisson,
    /// Mean squared error of ŷ = head.
    Mse,
}

impl ExpressionLoss {
    pub fn name(self) -> &'static str {
        match self {
            Self::Poisson => "poisson",
            Self::Mse => "mse",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpressionConfig {
    pub encoder: RegionEncoderConfig,
    pub head: ExpressionHead,
    pub loss: ExpressionLoss,
    /// A linear path on each sample's TSS-region and window summaries, added to the head's
    /// output (`linear_path.rs`); absent in checkpoints from before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_path: Option<LinearPathConfig>,
    /// The encoder and head are GET's (`GETRegionFinetune`, its parameter names unchanged:
    /// `region_embed.*`, `cls_token`, `encoder.blocks.*`, `encoder.norm.*`, `head_exp.head.*`),
    /// started from a GET checkpoint by `--init`; `encoder` then records the inputs and GET's
    /// sizes. Absent: Luminome's region encoder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get: Option<GetRegionConfig>,
    /// The samples held out of training (not part of the architecture: kept so that
    /// `luminome-predict --subset test` scores exactly them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout: Option<Holdout>,
}

impl ExpressionConfig {
    /// Whether predictions are softplus of the head (a rate): for the Poisson loss, and always
    /// for GET's head, which its authors trained that way.
    pub fn softplus_output(&self) -> bool {
        self.loss == ExpressionLoss::Poisson || self.get.is_some()
    }
}

impl FamilyConfig for ExpressionConfig {
    const FAMILY: &'static str = "expression model";
    type Model = ExpressionModel;

    fn validate(&self) -> Result<()> {
        self.encoder.validate()?;
        if let Some(get) = &self.get {
            if self.head != ExpressionHead::TssRegion {
                bail!("a GET encoder reads GET's own head at the TSS region (head tss-region), not {}", self.head.name());
            }
            if get.num_motif != self.encoder.n_features {
                bail!(
                    "the GET encoder takes {} features per region, the model's inputs {}",
                    get.num_motif,
                    self.encoder.n_features
                );
            }
        }
        if let ExpressionHead::AttentionPool { mlp_hidden } = self.head {
            if mlp_hidden == 0 || mlp_hidden > 1 << 20 {
                bail!("the MLP width (mlp hidden) must be between 1 and 1048576, got {mlp_hidden}");
            }
        }
        Ok(())
    }

    fn build(&self, vb: VarBuilder) -> candle_core::Result<ExpressionModel> {
        ExpressionModel::new(self, vb)
    }

    fn init(&self, varmap: &VarMap, seed: u64) -> Result<()> {
        init_region_parameters(varmap, seed)
    }
}
