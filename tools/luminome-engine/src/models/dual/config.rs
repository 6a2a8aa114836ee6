//! The dual encoder's config.

use anyhow::{bail, Result};
use candle_nn::VarBuilder;
use serde::{Deserialize, Serialize};

use super::model::DualEncoder;
use crate::backbones::EncoderConfig;
use crate::models::FamilyConfig;

/// Query and passage encoders of one architecture, their pooling and the loss temperature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DualConfig {
    /// The architecture of both encoders (its max length covers queries and passages).
    pub encoder: EncoderConfig,
    /// One encoder for queries and passages (parameters `encoder.*`) instead of two
    /// (`query_encoder.*`, `passage_encoder.*`).
    pub shared: bool,
    /// InfoNCE temperature τ: the loss is the cross-entropy of cos(q, p) / τ.
    pub temperature: f64,
}

impl FamilyConfig for DualConfig {
    const FAMILY: &'static str = "dual encoder";
    type Model = DualEncoder;

    fn validate(&self) -> Result<()> {
        self.encoder.validate()?;
        if !(self.temperature.is_finite() && self.temperature > 0.0 && self.temperature <= 100.0) {
            bail!(
                "the temperature must be a number in (0, 100], got {}",
                self.temperature
            );
        }
        Ok(())
    }

    fn build(&self, vb: VarBuilder) -> candle_core::Result<DualEncoder> {
        DualEncoder::new(self, vb)
    }
}
