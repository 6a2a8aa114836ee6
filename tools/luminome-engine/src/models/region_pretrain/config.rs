//! The masked-region pretraining family's config.

use anyhow::Result;
use candle_nn::{VarBuilder, VarMap};
use serde::{Deserialize, Serialize};

use super::model::RegionPretrainModel;
use crate::models::region::data::init_region_parameters;
use crate::models::region::{Holdout, RegionEncoderConfig};
use crate::models::FamilyConfig;

/// What the decoder is scored on at the masked regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PretrainLoss {
    /// Mean squared error against the standardised features (the spec's ‖x̂_i − x_i‖²).
    Mse,
    /// Binary cross-entropy of the decoder's logits against "feature > 0" (the spec's BCE
    /// alternative, for binarised features such as motif presence).
    Bce,
}

/// What is hidden at the masked regions and reconstructed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PretrainTarget {
    /// Every feature: the region replaced by the mask vector, all F features reconstructed.
    #[default]
    All,
    /// Accessibility only (the last feature): the region's motif features stay visible (they
    /// are known from its sequence), its standardised accessibility is set to 0 and a learned
    /// vector `acc_mask_vector` is added; the loss is the MSE on the masked regions'
    /// standardised accessibility.
    Accessibility,
}

impl PretrainTarget {
    pub fn is_all(&self) -> bool {
        *self == Self::All
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Accessibility => "accessibility",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionPretrainConfig {
    pub encoder: RegionEncoderConfig,
    pub loss: PretrainLoss,
    /// What the masked regions hide (absent for `all`: older checkpoints keep their bytes).
    #[serde(default, skip_serializing_if = "PretrainTarget::is_all")]
    pub target: PretrainTarget,
    /// The samples held out of pretraining (not part of the architecture: kept so the run
    /// says what it saw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout: Option<Holdout>,
}

impl FamilyConfig for RegionPretrainConfig {
    const FAMILY: &'static str = "masked-region pretraining model";
    type Model = RegionPretrainModel;

    fn validate(&self) -> Result<()> {
        self.encoder.validate()?;
        if self.target == PretrainTarget::Accessibility && self.loss != PretrainLoss::Mse {
            anyhow::bail!(
                "the accessibility target is scored by MSE on the standardised accessibility; give --loss mse"
            );
        }
        Ok(())
    }

    fn build(&self, vb: VarBuilder) -> candle_core::Result<RegionPretrainModel> {
        RegionPretrainModel::new(self, vb)
    }

    fn init(&self, varmap: &VarMap, seed: u64) -> Result<()> {
        init_region_parameters(varmap, seed)
    }
}
