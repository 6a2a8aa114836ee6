//! Training the bi-strand masked LM: L = L_a + L_b, each the mean cross-entropy over the masked
//! positions (A, C, G, T); dev loss, masked-base accuracy and perplexity per strand.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use candle_core::{DType, Device, Tensor, D};
use luminome_io::masking::{base_ids, mask_pair, PairMasking};
use luminome_io::pair_dataset::{PairBatch, PairDataset, IGNORE_INDEX};
use luminome_io::token_dataset::TokenizerInfo;
use rand::SeedableRng;

use super::model::{BiStrandModel, PairLogits};
use crate::nn::DropoutRng;
use crate::train::task::{chunks, TrainTask};

/// A batch as device tensors, with the masked positions and their classes (A, C, G, T = 0..3).
pub struct PairTensors {
    pub ids_a: Tensor,
    pub ids_b: Tensor,
    /// `[B, L]` f32, 1 = base.
    pub mask: Tensor,
    /// Flat indices b · L + i of the masked positions, u32.
    pub positions: Tensor,
    pub targets_a: Vec<u32>,
    pub targets_b: Vec<u32>,
}

impl PairTensors {
    pub fn new(batch: &PairBatch, tok: &TokenizerInfo, device: &Device) -> Result<Self> {
        let bases = base_ids(tok)
            .ok_or_else(|| anyhow::anyhow!("the dataset's vocabulary has no A, C, G, T tokens"))?;
        let class = |label: i64| -> Result<u32> {
            bases
                .iter()
                .position(|&b| i64::from(b) == label)
                .map(|c| c as u32)
                .ok_or_else(|| {
                    anyhow::anyhow!("label {label} at a masked position is not a base (A, C, G, T)")
                })
        };
        let shape = (batch.batch, batch.length);
        let mut positions = Vec::new();
        let (mut targets_a, mut targets_b) = (Vec::new(), Vec::new());
        for (i, &m) in batch.mask_positions.iter().enumerate() {
            if m != 0 {
                if batch.labels_a[i] == IGNORE_INDEX || batch.labels_b[i] == IGNORE_INDEX {
                    bail!(
                        "a masked position without labels (record {} of the batch)",
                        i / batch.length
                    );
                }
                positions.push(i as u32);
                targets_a.push(class(batch.labels_a[i])?);
                targets_b.push(class(batch.labels_b[i])?);
            }
        }
        let mask: Vec<f32> = batch
            .attention_mask
            .iter()
            .map(|&m| f32::from(m != 0))
            .collect();
        Ok(Self {
            ids_a: Tensor::from_slice(&batch.ids_a, shape, device)?,
            ids_b: Tensor::from_slice(&batch.ids_b, shape, device)?,
            mask: Tensor::from_vec(mask, shape, device)?,
            positions: Tensor::from_vec(positions, targets_a.len(), device)?,
            targets_a,
            targets_b,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.targets_a.is_empty()
    }

    pub fn logits(&self, model: &BiStrandModel, rng: Option<&DropoutRng>) -> Result<PairLogits> {
        Ok(model.logits_at(&self.ids_a, &self.ids_b, &self.mask, &self.positions, rng)?)
    }
}

/// Mean cross-entropy of logits `[P, 4]` against classes, and how many argmaxes are right.
pub fn strand_loss(logits: &Tensor, targets: &[u32]) -> Result<(Tensor, usize)> {
    let t = Tensor::from_slice(targets, targets.len(), logits.device())?;
    let loss = candle_nn::loss::cross_entropy(logits, &t)?;
    let pred: Vec<u32> = logits.argmax(D::Minus1)?.to_vec1()?;
    let correct = pred.iter().zip(targets).filter(|(p, t)| p == t).count();
    Ok((loss, correct))
}

/// Recovers the unmasked ids of a batch (the labels hold the originals at masked positions).
fn unmask(batch: &mut PairBatch) {
    for i in 0..batch.mask_positions.len() {
        if batch.mask_positions[i] != 0 {
            batch.ids_a[i] = batch.labels_a[i] as u32;
            batch.ids_b[i] = batch.labels_b[i] as u32;
        }
    }
}

pub struct BiStrandTask {
    pub model: BiStrandModel,
    pub train: PairDataset,
    pub dev: Option<PairDataset>,
    pub device: Device,
    pub eval_batch_size: usize,
    /// Dev records scored per evaluation (the first ones).
    pub eval_records: usize,
    /// Draw new masked positions for every training batch (seeded by the step) instead of using
    /// the dataset's.
    pub dynamic_masking: Option<PairMasking>,
}

impl BiStrandTask {
    fn train_batch(&self, records: &[usize], seed: u64) -> Result<PairBatch> {
        let mut batch = self.train.batch(records)?;
        if let Some(cfg) = &self.dynamic_masking {
            unmask(&mut batch);
            let tok = &self.train.meta().tokenizer;
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x6d61_736b);
            let l = batch.length;
            for r in 0..batch.batch {
                let row = r * l..(r + 1) * l;
                let m = mask_pair(
                    &mut batch.ids_a[row.clone()],
                    &mut batch.ids_b[row.clone()],
                    &batch.attention_mask[row.clone()],
                    None,
                    tok,
                    cfg,
                    &mut rng,
                )?;
                batch.labels_a[row.clone()].copy_from_slice(&m.labels_a);
                batch.labels_b[row.clone()].copy_from_slice(&m.labels_b);
                batch.mask_positions[row].copy_from_slice(&m.mask_positions);
            }
        }
        Ok(batch)
    }
}

impl TrainTask for BiStrandTask {
    fn train_len(&self) -> usize {
        self.train.len()
    }

    fn train_loss(&self, records: &[usize], seed: u64) -> Result<Tensor> {
        let batch = self.train_batch(records, seed)?;
        let t = PairTensors::new(&batch, &self.train.meta().tokenizer, &self.device)?;
        if t.is_empty() {
            bail!(
                "{}: records {records:?} have no masked position",
                self.train.path().display()
            );
        }
        let rng = DropoutRng::new(seed);
        let out = t.logits(&self.model, Some(&rng))?;
        let (la, _) = strand_loss(&out.a, &t.targets_a)?;
        let (lb, _) = strand_loss(&out.b, &t.targets_b)?;
        Ok((la + lb)?)
    }

    fn metric_names(&self) -> Vec<String> {
        if self.dev.is_none() {
            return Vec::new();
        }
        [
            "dev_loss",
            "dev_accuracy_a",
            "dev_accuracy_b",
            "dev_perplexity_a",
            "dev_perplexity_b",
        ]
        .map(String::from)
        .to_vec()
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        let Some(dev) = &self.dev else {
            return Ok(BTreeMap::new());
        };
        let n = dev.len().min(self.eval_records.max(1));
        let (mut sum_a, mut sum_b, mut ok_a, mut ok_b, mut total) = (0f64, 0f64, 0, 0, 0usize);
        for records in chunks(n, self.eval_batch_size) {
            let t = PairTensors::new(&dev.batch(&records)?, &dev.meta().tokenizer, &self.device)?;
            if t.is_empty() {
                continue;
            }
            let out = t.logits(&self.model, None)?;
            let k = t.targets_a.len();
            let (la, ca) = strand_loss(&out.a, &t.targets_a)?;
            let (lb, cb) = strand_loss(&out.b, &t.targets_b)?;
            sum_a += la.to_dtype(DType::F64)?.to_scalar::<f64>()? * k as f64;
            sum_b += lb.to_dtype(DType::F64)?.to_scalar::<f64>()? * k as f64;
            ok_a += ca;
            ok_b += cb;
            total += k;
        }
        let total = total.max(1) as f64;
        let (la, lb) = (sum_a / total, sum_b / total);
        let mut m = BTreeMap::new();
        m.insert("dev_loss".into(), la + lb);
        m.insert("dev_accuracy_a".into(), ok_a as f64 / total);
        m.insert("dev_accuracy_b".into(), ok_b as f64 / total);
        m.insert("dev_perplexity_a".into(), la.exp());
        m.insert("dev_perplexity_b".into(), lb.exp());
        Ok(m)
    }
}
