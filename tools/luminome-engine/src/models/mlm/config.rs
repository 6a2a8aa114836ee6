//! The masked-LM family's config.

use std::path::Path;

use anyhow::{bail, Result};
use candle_nn::VarBuilder;
use luminome_io::token_dataset::TokenizerInfo;
use serde::{Deserialize, Serialize};

use super::model::MlmModel;
use crate::backbones::{BackboneConfig, EncoderConfig};
use crate::checkpoint::read_checkpoint_meta;
use crate::models::FamilyConfig;

/// A masked-LM model: an encoder + an LM head over the vocabulary. The encoder is Luminome's
/// transformer (`"encoder": {...}`, parameters `encoder.*` + `mlm_head.*`) or the Nucleotide
/// Transformer v2 architecture (`"nt_v2": {...}`, parameters `esm.*` + `lm_head.*`, the published
/// `EsmForMaskedLM`'s names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlmConfig {
    #[serde(flatten)]
    pub backbone: BackboneConfig,
}

impl MlmConfig {
    /// The masked-LM checkpoint given as `--init` to a model trained on `dataset` (tokenized
    /// with `tok`): refused unless it is one, and unless the data is tokenized as its training
    /// data was.
    pub fn read_init(init: &Path, dataset: &Path, tok: &TokenizerInfo) -> Result<Self> {
        let m = read_checkpoint_meta(init)?;
        let Some(mc) = m.model.get::<Self>() else {
            bail!(
                "{}: --init needs a masked-LM checkpoint (kind mlm), this one is a {}",
                init.display(),
                m.model.kind()
            );
        };
        m.check_tokenizer(init, dataset, tok)?;
        Ok(mc.clone())
    }

    /// Luminome's transformer, when that is the encoder.
    pub fn transformer(&self) -> Option<&EncoderConfig> {
        match &self.backbone {
            BackboneConfig::Transformer(e) => Some(e),
            _ => None,
        }
    }
}

impl FamilyConfig for MlmConfig {
    const FAMILY: &'static str = "masked-LM model";
    type Model = MlmModel;

    fn validate(&self) -> Result<()> {
        match &self.backbone {
            BackboneConfig::Transformer(_) | BackboneConfig::NtV2(_) => self.backbone.validate(),
            other => bail!(
                "a masked-LM model on the {} backbone is not built (transformer or nt-v2)",
                other.kind().name()
            ),
        }
    }

    fn build(&self, vb: VarBuilder) -> candle_core::Result<MlmModel> {
        MlmModel::new(self, vb)
    }
}
