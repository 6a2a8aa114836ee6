//! Masked-LM pretraining as a training task: BERT masking of each batch (seeded by the step, so a
//! resumed run masks the same positions), loss on the chosen positions; dev loss and accuracy on
//! the first dev records, masked the same way at every evaluation.

use std::collections::BTreeMap;

use anyhow::Result;
use candle_core::{DType, Device, Tensor};
use luminome_io::masking::{mask_batch, MaskingConfig};
use luminome_io::token_dataset::TokenDataset;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::model::MlmModel;
use crate::input::batch_tensors;
use crate::nn::DropoutRng;
use crate::train::task::{chunks, TrainTask};

/// Masked-LM pretraining on a token dataset.
pub struct MlmTask {
    pub model: MlmModel,
    pub train: TokenDataset,
    pub dev: Option<TokenDataset>,
    pub masking: MaskingConfig,
    pub device: Device,
    pub eval_batch_size: usize,
    /// Dev records used per evaluation (the first ones), to keep evaluation cheap.
    pub eval_records: usize,
}

impl MlmTask {
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

impl TrainTask for MlmTask {
    fn train_len(&self) -> usize {
        self.train.len()
    }

    fn train_loss(&self, records: &[usize], seed: u64) -> Result<Tensor> {
        Ok(self.masked_loss(&self.train, records, seed, true)?.0)
    }

    fn metric_names(&self) -> Vec<String> {
        if self.dev.is_none() {
            return Vec::new();
        }
        ["dev_loss", "dev_accuracy"].map(String::from).to_vec()
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        let Some(dev) = &self.dev else {
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
