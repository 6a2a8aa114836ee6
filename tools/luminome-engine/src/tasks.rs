//! The model families of this crate as [`TrainTask`]s: masked-LM pretraining and sequence
//! classification, both on token datasets.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use candle_core::{DType, Device, Tensor};
use luminome_io::token_dataset::TokenDataset;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::batch::{batch_tensors, class_indices};
use crate::classifier::{cross_entropy, Classifier};
use crate::mlm::{mask_batch, MaskingConfig, MlmModel};
use crate::ops::DropoutRng;
use crate::trainer::TrainTask;

/// Records `0..n` in chunks of `size`.
fn chunks(n: usize, size: usize) -> impl Iterator<Item = Vec<usize>> {
    (0..n)
        .step_by(size.max(1))
        .map(move |s| (s..(s + size).min(n)).collect())
}

/// Class probabilities of every record of a dataset, row-major `[N, C]`.
pub fn predict_probs(
    model: &Classifier,
    ds: &TokenDataset,
    batch_size: usize,
    device: &Device,
) -> Result<Vec<f64>> {
    let mut probs = Vec::with_capacity(ds.len() * model.config.num_classes);
    for records in chunks(ds.len(), batch_size) {
        let t = batch_tensors(&ds.batch(&records)?, device)?;
        let logits = model.forward(&t.ids, &t.mask, None)?.logits;
        for row in logits.to_dtype(DType::F32)?.to_vec2::<f32>()? {
            probs.extend(luminome_metrics::softmax(&row));
        }
    }
    Ok(probs)
}

/// Checks a labelled dataset against the classifier's classes; returns class indices.
pub fn dataset_classes(ds: &TokenDataset, label_values: &[i64]) -> Result<Vec<u32>> {
    if !ds.has_labels() {
        bail!(
            "{}: the dataset has no labels; tokenize the table with its label column",
            ds.path().display()
        );
    }
    let all: Vec<usize> = (0..ds.len()).collect();
    let labels = ds.batch(&all)?.labels.unwrap_or_default();
    class_indices(&labels, label_values).map_err(|(i, l)| {
        anyhow::anyhow!(
            "{}: record {}: label {l} is not one of the declared classes {:?}",
            ds.path().display(),
            i + 1,
            label_values
        )
    })
}

pub struct ClassifyTask<'a> {
    pub model: &'a Classifier,
    pub train: &'a TokenDataset,
    pub train_classes: Vec<u32>,
    pub dev: Option<(&'a TokenDataset, Vec<u32>)>,
    pub device: Device,
    pub freeze_encoder: bool,
    pub eval_batch_size: usize,
}

impl TrainTask for ClassifyTask<'_> {
    fn train_len(&self) -> usize {
        self.train.len()
    }

    fn train_loss(&self, records: &[usize], seed: u64) -> Result<Tensor> {
        let t = batch_tensors(&self.train.batch(records)?, &self.device)?;
        let targets: Vec<u32> = records.iter().map(|&r| self.train_classes[r]).collect();
        let targets = Tensor::from_vec(targets, records.len(), &self.device)?;
        let out = if self.freeze_encoder {
            self.model.forward_frozen_encoder(&t.ids, &t.mask)?
        } else {
            let rng = DropoutRng::new(seed);
            self.model.forward(&t.ids, &t.mask, Some(&rng))?
        };
        Ok(cross_entropy(&out.logits, &targets)?)
    }

    fn metric_names(&self) -> Vec<String> {
        if self.dev.is_none() {
            return Vec::new();
        }
        ["dev_loss", "dev_accuracy", "dev_auroc", "dev_f1", "dev_mcc"]
            .map(String::from)
            .to_vec()
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        let Some((dev, classes)) = &self.dev else {
            return Ok(BTreeMap::new());
        };
        let c = self.model.config.num_classes;
        let probs = predict_probs(self.model, dev, self.eval_batch_size, &self.device)?;
        let labels: Vec<usize> = classes.iter().map(|&k| k as usize).collect();
        let loss = labels
            .iter()
            .enumerate()
            .map(|(i, &k)| -(probs[i * c + k].max(1e-12)).ln())
            .sum::<f64>()
            / labels.len().max(1) as f64;
        let m =
            luminome_metrics::ClassificationMetrics::compute(&labels, &probs, c).map_err(|e| {
                anyhow::anyhow!("{}: cannot compute dev metrics: {e}", dev.path().display())
            })?;
        let mut out = BTreeMap::new();
        out.insert("dev_loss".into(), loss);
        out.insert("dev_accuracy".into(), m.accuracy);
        out.insert("dev_auroc".into(), m.auroc.unwrap_or(f64::NAN));
        out.insert("dev_f1".into(), m.f1);
        out.insert("dev_mcc".into(), m.mcc);
        Ok(out)
    }
}

pub struct MlmTask<'a> {
    pub model: &'a MlmModel,
    pub train: &'a TokenDataset,
    pub dev: Option<&'a TokenDataset>,
    pub masking: MaskingConfig,
    pub device: Device,
    pub eval_batch_size: usize,
    /// Dev records used per evaluation (the first ones), to keep evaluation cheap.
    pub eval_records: usize,
}

impl MlmTask<'_> {
    fn masked_loss(
        &self,
        ds: &TokenDataset,
        records: &[usize],
        seed: u64,
        train: bool,
    ) -> Result<(Tensor, usize, usize)> {
        let batch = ds.batch(records)?;
        let masked = mask_batch(
            &batch,
            ds.tokenizer(),
            &self.masking,
            &mut ChaCha8Rng::seed_from_u64(seed),
        )?;
        let t = batch_tensors(&batch, &self.device)?;
        let rng = DropoutRng::new(seed ^ 0xd409);
        let (loss, correct) = self.model.loss(&masked, &t.mask, train.then_some(&rng))?;
        Ok((loss, correct, masked.positions.len()))
    }
}

impl TrainTask for MlmTask<'_> {
    fn train_len(&self) -> usize {
        self.train.len()
    }

    fn train_loss(&self, records: &[usize], seed: u64) -> Result<Tensor> {
        Ok(self.masked_loss(self.train, records, seed, true)?.0)
    }

    fn metric_names(&self) -> Vec<String> {
        if self.dev.is_none() {
            return Vec::new();
        }
        ["dev_loss", "dev_accuracy"].map(String::from).to_vec()
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        let Some(dev) = self.dev else {
            return Ok(BTreeMap::new());
        };
        let n = dev.len().min(self.eval_records.max(1));
        let (mut loss_sum, mut correct, mut total) = (0f64, 0usize, 0usize);
        for (i, records) in chunks(n, self.eval_batch_size).enumerate() {
            // The same masking every evaluation: the dev numbers are comparable across steps.
            let (loss, c, k) = self.masked_loss(dev, &records, 0xdef0 + i as u64, false)?;
            loss_sum += loss.to_dtype(DType::F64)?.to_scalar::<f64>()? * k as f64;
            correct += c;
            total += k;
        }
        let mut out = BTreeMap::new();
        out.insert("dev_loss".into(), loss_sum / total.max(1) as f64);
        out.insert("dev_accuracy".into(), correct as f64 / total.max(1) as f64);
        Ok(out)
    }
}
