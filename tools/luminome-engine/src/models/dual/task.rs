//! Dual-encoder training as a task: InfoNCE over each micro-batch's in-batch negatives (batches
//! arranged without repeated queries or passages), dev evaluation by full-corpus retrieval.

use std::collections::BTreeMap;

use anyhow::Result;
use candle_core::{Device, Tensor};
use luminome_io::retrieval_pairs::{RetrievalPairs, Side};

use super::batches::{arrange, exclusions};
use super::model::DualEncoder;
use super::retrieval::{evaluate, RetrievalSet};
use crate::input::batch_tensors;
use crate::input::tokens::{real_length, trim_batch};
use crate::nn::DropoutRng;
use crate::train::task::TrainTask;

/// The dev metrics, in log-column order.
pub const DEV_METRICS: [&str; 9] = [
    "dev_loss",
    "dev_mrr",
    "dev_mrr_at_10",
    "dev_map",
    "dev_ndcg_at_10",
    "dev_hit_at_1",
    "dev_hit_at_5",
    "dev_positive_similarity",
    "dev_in_batch_mrr",
];

pub struct DualTask {
    pub model: DualEncoder,
    pub train: RetrievalPairs,
    /// Dev pairs, evaluated against their own distinct passages.
    pub dev: Option<(RetrievalPairs, RetrievalSet<'static>)>,
    pub device: Device,
    pub eval_batch_size: usize,
    /// Batch size of the dev in-batch metrics and loss (the training micro-batch size).
    pub in_batch_size: usize,
}

impl DualTask {
    /// One side of `records` as device tensors, trimmed to the batch's longest row.
    fn side(&self, side: Side, records: &[usize]) -> Result<crate::input::BatchTensors> {
        let b = self.train.batch(side, records)?;
        let len = b
            .attention_mask
            .chunks(b.max_length.max(1))
            .map(real_length)
            .max()
            .unwrap_or(1)
            .max(1);
        batch_tensors(&trim_batch(b, len), &self.device)
    }
}

impl TrainTask for DualTask {
    fn train_len(&self) -> usize {
        self.train.len()
    }

    fn train_loss(&self, records: &[usize], seed: u64) -> Result<Tensor> {
        let rng = DropoutRng::new(seed ^ 0xd0a1);
        let q = self.side(Side::Query, records)?;
        let p = self.side(Side::Passage, records)?;
        let qe = self.model.embed(Side::Query, &q.ids, &q.mask, Some(&rng))?;
        let pe = self
            .model
            .embed(Side::Passage, &p.ids, &p.mask, Some(&rng))?;
        let ex = exclusions(
            records,
            self.train.groups(Side::Query),
            self.train.groups(Side::Passage),
            &self.device,
        )?;
        Ok(self.model.info_nce(&qe, &pe, ex.as_ref())?)
    }

    fn arrange_epoch(&self, order: Vec<usize>, batch_size: usize) -> Vec<usize> {
        arrange(
            order,
            batch_size,
            self.train.groups(Side::Query),
            self.train.groups(Side::Passage),
        )
    }

    fn metric_names(&self) -> Vec<String> {
        if self.dev.is_none() {
            return Vec::new();
        }
        DEV_METRICS.map(String::from).to_vec()
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        let Some((pairs, set)) = &self.dev else {
            return Ok(BTreeMap::new());
        };
        let r = evaluate(
            &self.model,
            pairs,
            set,
            self.in_batch_size,
            self.eval_batch_size,
            &self.device,
        )?;
        let m = &r.full.mean;
        Ok(BTreeMap::from([
            ("dev_loss".into(), r.in_batch_loss),
            ("dev_mrr".into(), m.rr),
            ("dev_mrr_at_10".into(), m.rr_at_10),
            ("dev_map".into(), m.ap),
            ("dev_ndcg_at_10".into(), m.ndcg_at_10),
            ("dev_hit_at_1".into(), m.hit_at_1),
            ("dev_hit_at_5".into(), m.hit_at_5),
            ("dev_positive_similarity".into(), r.positive_similarity),
            ("dev_in_batch_mrr".into(), r.in_batch.mean.rr),
        ]))
    }
}
