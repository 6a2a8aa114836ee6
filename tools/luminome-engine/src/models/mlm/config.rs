//! The masked-LM family's config.

use anyhow::Result;
use candle_nn::VarBuilder;
use serde::{Deserialize, Serialize};

use super::model::MlmModel;
use crate::backbones::EncoderConfig;
use crate::models::FamilyConfig;

/// A masked-LM model: encoder + LM head over the vocabulary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlmConfig {
    pub encoder: EncoderConfig,
}

impl FamilyConfig for MlmConfig {
    const FAMILY: &'static str = "masked-LM model";
    type Model = MlmModel;

    fn validate(&self) -> Result<()> {
        self.encoder.validate()
    }

    fn build(&self, vb: VarBuilder) -> candle_core::Result<MlmModel> {
        MlmModel::new(self, vb)
    }
}
