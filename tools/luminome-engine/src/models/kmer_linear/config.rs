//! The k-mer linear family's config: the k range, the tokenizer whose ids it reads bases from,
//! the per-k scales of the features and the classes.

use anyhow::{bail, Result};
use candle_nn::VarBuilder;
use luminome_io::token_dataset::TokenizerInfo;
use serde::{Deserialize, Serialize};

use super::features::KmerLayout;
use super::model::KmerLinear;
use crate::models::token::check_classes;
use crate::models::FamilyConfig;

/// Largest k: 4^8 = 65,536 features for the longest k-mers, beyond which almost every k-mer of
/// a short sequence is unique and the model only memorises.
pub const MAX_K: usize = 8;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KmerLinearConfig {
    pub k_min: usize,
    pub k_max: usize,
    /// The training set's mean number of counted k-mers per row, for k = k_min..=k_max (the
    /// feature scale, see `features`).
    pub scale: Vec<f64>,
    /// The L2 penalty λ the weights were fitted with (chosen on dev).
    pub l2: f64,
    /// The tokenizer of the training data, to read bases back from token ids.
    pub tokenizer: TokenizerInfo,
    /// Longest row (tokens, specials included) accepted.
    pub max_length: usize,
    pub num_classes: usize,
    /// The dataset label value of each class index.
    pub label_values: Vec<i64>,
}

impl KmerLinearConfig {
    pub fn layout(&self) -> KmerLayout {
        KmerLayout {
            k_min: self.k_min,
            k_max: self.k_max,
        }
    }
}

/// Checks a k range: 1 ≤ k_min ≤ k_max ≤ [`MAX_K`].
pub fn check_k_range(k_min: usize, k_max: usize) -> Result<()> {
    if k_min == 0 || k_min > k_max || k_max > MAX_K {
        bail!("k range {k_min}-{k_max}: expected 1 <= k_min <= k_max <= {MAX_K}");
    }
    Ok(())
}

impl FamilyConfig for KmerLinearConfig {
    const FAMILY: &'static str = "k-mer linear classifier";
    type Model = KmerLinear;

    fn validate(&self) -> Result<()> {
        check_k_range(self.k_min, self.k_max)?;
        if self.scale.len() != self.k_max - self.k_min + 1
            || self.scale.iter().any(|s| !s.is_finite() || *s <= 0.0)
        {
            bail!(
                "k-mer scales {:?}: expected one positive value per k",
                self.scale
            );
        }
        if !self.tokenizer.scheme.has_base_spans() {
            bail!(
                "a k-mer linear model reads bases from nucleotide or k-mer tokens, not {} tokens",
                self.tokenizer.scheme
            );
        }
        if self.max_length == 0 || !self.l2.is_finite() || self.l2 < 0.0 {
            bail!(
                "max length {} / l2 {}: expected a positive length and a finite l2 >= 0",
                self.max_length,
                self.l2
            );
        }
        check_classes(self.num_classes, &self.label_values)
    }

    fn build(&self, vb: VarBuilder) -> candle_core::Result<KmerLinear> {
        KmerLinear::new(self, vb)
    }
}
