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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionPretrainConfig {
    pub encoder: RegionEncoderConfig,
    pub loss: PretrainLoss,
    /// The samples held out of pretraining (not part of the architecture: kept so the run
    /// says what it saw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout: Option<Holdout>,
}

impl FamilyConfig for RegionPretrainConfig {
    const FAMILY: &'static str = "masked-region pretraining model";
    type Model = RegionPretrainModel;

    fn validate(&self) -> Result<()> {
        self.encoder.validate()
    }

    fn build(&self, vb: VarBuilder) -> candle_core::Result<RegionPretrainModel> {
        RegionPretrainModel::new(self, vb)
    }

    fn init(&self, varmap: &VarMap, seed: u64) -> Result<()> {
        init_region_parameters(varmap, seed)
    }
}
