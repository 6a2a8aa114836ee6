//! Masked-region pretraining as a training task: every batch draws its masked regions from a
//! generator seeded by the step (a resumed run masks the same ones); dev loss (and, for MSE, the
//! R² of the masked targets, all features or the accessibility, against predicting the training
//! mean) with the same masks at every evaluation.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use candle_core::{DType, Device, Tensor};
use luminome_io::region_dataset::RegionDataset;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::config::PretrainLoss;
use super::model::RegionPretrainModel;
use crate::models::region::{RegionData, RegionPosition, RegionTensors};
use crate::nn::DropoutRng;
use crate::train::task::TrainTask;

pub struct RegionPretrainTask {
    pub model: RegionPretrainModel,
    pub data: RegionData,
    /// Fraction of each sample's regions masked (at least one).
    pub mask_fraction: f64,
    pub device: Device,
    pub eval_batch_size: usize,
    /// Dev samples scored per evaluation (the first ones).
    pub eval_records: usize,
}

/// `[B, N]` 1 at the masked slots: round(fraction · regions) of each sample's real regions
/// (at least one), chosen uniformly.
pub fn choose_masked(n_used: &[usize], n: usize, fraction: f64, rng: &mut ChaCha8Rng) -> Vec<f32> {
    let mut out = vec![0f32; n_used.len() * n];
    for (r, &u) in n_used.iter().enumerate() {
        if u == 0 {
            continue;
        }
        let k = ((fraction * u as f64).round() as usize).clamp(1, u);
        for i in rand::seq::index::sample(rng, u, k) {
            out[r * n + i] = 1.0;
        }
    }
    out
}

impl RegionPretrainTask {
    fn masked_loss(
        &self,
        ds: &RegionDataset,
        records: &[usize],
        seed: u64,
        train: bool,
    ) -> Result<super::model::MaskedLoss> {
        let e = &self.model.config.encoder;
        let t = RegionTensors::new(
            ds,
            records,
            e.max_offset(),
            e.position == RegionPosition::TssRelative,
            &self.device,
        )?;
        let masked = choose_masked(
            &t.n_used,
            ds.n_regions(),
            self.mask_fraction,
            &mut ChaCha8Rng::seed_from_u64(seed ^ 0x6d61_736b),
        );
        let rng = DropoutRng::new(seed ^ 0xd409);
        Ok(self.model.loss(&t, &masked, train.then_some(&rng))?)
    }
}

impl TrainTask for RegionPretrainTask {
    fn train_len(&self) -> usize {
        self.data.train_records.len()
    }

    fn train_loss(&self, records: &[usize], seed: u64) -> Result<Tensor> {
        let rows: Vec<usize> = records
            .iter()
            .map(|&i| self.data.train_records[i])
            .collect();
        Ok(self.masked_loss(&self.data.train, &rows, seed, true)?.loss)
    }

    fn metric_names(&self) -> Vec<String> {
        match (&self.data.dev, self.model.config.loss) {
            (None, _) => Vec::new(),
            (Some(_), PretrainLoss::Mse) => vec!["dev_loss".into(), "dev_r2".into()],
            (Some(_), PretrainLoss::Bce) => vec!["dev_loss".into()],
        }
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        let Some((ds, records)) = &self.data.dev else {
            return Ok(BTreeMap::new());
        };
        let n = records.len().min(self.eval_records.max(1));
        let (mut loss_sum, mut sq_sum, mut entries) = (0f64, 0f64, 0usize);
        for (i, chunk) in records[..n].chunks(self.eval_batch_size.max(1)).enumerate() {
            // The same masks at every evaluation: the dev numbers are comparable across steps.
            let l = self.masked_loss(ds, chunk, 0xdef0 + i as u64, false)?;
            loss_sum += l.loss.to_dtype(DType::F64)?.to_scalar::<f64>()? * l.entries as f64;
            sq_sum += l.sum_sq_target;
            entries += l.entries;
        }
        if entries == 0 {
            bail!("the dev samples have no region to mask");
        }
        let mut out = BTreeMap::new();
        out.insert("dev_loss".into(), loss_sum / entries as f64);
        if self.model.config.loss == PretrainLoss::Mse && sq_sum > 0.0 {
            out.insert("dev_r2".into(), 1.0 - loss_sum / sq_sum);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_of_each_samples_real_regions_are_masked_never_padding() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let m = choose_masked(&[4, 1, 0, 7], 8, 0.5, &mut rng);
        let count = |r: usize| m[r * 8..(r + 1) * 8].iter().filter(|&&v| v > 0.0).count();
        assert_eq!((count(0), count(1), count(2), count(3)), (2, 1, 0, 4));
        for (r, u) in [(0, 4), (1, 1), (3, 7)] {
            assert!(
                m[r * 8 + u..(r + 1) * 8].iter().all(|&v| v == 0.0),
                "padding masked"
            );
        }
    }
}
