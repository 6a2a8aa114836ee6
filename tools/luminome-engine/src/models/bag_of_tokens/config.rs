//! The bag-of-tokens family's config.

use anyhow::{bail, Result};
use candle_nn::VarBuilder;
use serde::{Deserialize, Serialize};

use super::model::BagOfTokens;
use crate::models::token::check_classes;
use crate::models::FamilyConfig;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BagOfTokensConfig {
    pub vocab_size: usize,
    /// Longest row (tokens, specials included) accepted; the model itself has no length limit,
    /// this keeps predictions to data shaped like the training set.
    pub max_length: usize,
    pub num_classes: usize,
    /// The dataset label value of each class index.
    pub label_values: Vec<i64>,
}

impl FamilyConfig for BagOfTokensConfig {
    const FAMILY: &'static str = "bag-of-tokens classifier";
    type Model = BagOfTokens;

    fn validate(&self) -> Result<()> {
        if self.vocab_size == 0 || self.max_length == 0 {
            bail!("the vocabulary and the max length must be positive");
        }
        check_classes(self.num_classes, &self.label_values)
    }

    fn build(&self, vb: VarBuilder) -> candle_core::Result<BagOfTokens> {
        BagOfTokens::new(self, vb)
    }
}
