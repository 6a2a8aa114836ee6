//! What the classification task trains and `luminome-predict` runs: any model that maps token ids
//! to class logits. The sequence classifier, bag-of-tokens and k-mer linear families implement
//! it, to reuse the task, the input checks and the predictor of this folder.

use candle_core::{Result, Tensor};

use crate::models::Model;
use crate::nn::DropoutRng;

pub trait TokenClassifier: Model + Clone {
    /// The dataset label value of each class index.
    fn label_values(&self) -> &[i64];

    /// Longest row (tokens, specials included) the model accepts.
    fn max_length(&self) -> usize;

    /// Logits `[B, C]` of ids `[B, L]` (u32) with mask `[B, L]`; `rng`: training mode (dropout).
    fn logits(&self, ids: &Tensor, mask: &Tensor, rng: Option<&DropoutRng>) -> Result<Tensor>;
}
