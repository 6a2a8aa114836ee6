//! What the training loop needs from a model family. A family's task owns its model (a clone
//! that shares the parameters) and its data, and computes its own loss and dev metrics; the loop
//! stays generic.

use std::collections::BTreeMap;

use anyhow::Result;
use candle_core::Tensor;

use super::trainer::RunPaths;

pub trait TrainTask {
    /// Training records available.
    fn train_len(&self) -> usize;

    /// Loss (a scalar tensor, mean over the micro-batch) of the given training records, in
    /// training mode; `seed` drives its dropout (and masking) draws.
    fn train_loss(&self, records: &[usize], seed: u64) -> Result<Tensor>;

    /// Dev-set metric names, in log-column order (empty: no dev set).
    fn metric_names(&self) -> Vec<String>;

    /// Dev-set metrics (in eval mode).
    fn evaluate(&self) -> Result<BTreeMap<String, f64>>;

    /// The order in which an epoch draws its records, given the trainer's shuffled `order` and
    /// the micro-batch size: a family whose micro-batches must meet a condition (a dual encoder's
    /// in-batch negatives: no duplicate positives) rearranges it. The default keeps it.
    fn arrange_epoch(&self, order: Vec<usize>, _batch_size: usize) -> Vec<usize> {
        order
    }

    /// Whether the dev set is scored before the first step (and those weights kept as the best
    /// so far): for a model that starts from a fitted solution.
    fn evaluate_before_training(&self) -> bool {
        false
    }

    /// Runs once training has ended (e.g. scores the best checkpoint on a test set).
    fn after_training(&self, _paths: &RunPaths, _quiet: bool) -> Result<()> {
        Ok(())
    }
}

/// Records `0..n` in chunks of `size` (evaluation batches).
pub fn chunks(n: usize, size: usize) -> impl Iterator<Item = Vec<usize>> {
    (0..n)
        .step_by(size.max(1))
        .map(move |s| (s..(s + size).min(n)).collect())
}
