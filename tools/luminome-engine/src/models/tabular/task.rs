//! Tabular classification as a training task: (class-weighted) cross-entropy on the training
//! rows; dev loss, accuracy, AUROC, F1 and MCC on the validation rows.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use candle_core::{DType, Device, Tensor, D};

use super::model::TabularModel;
use super::schema::EncodedRows;
use crate::nn::DropoutRng;
use crate::train::classification::{dev_metrics, score};
use crate::train::task::{chunks, TrainTask};

pub struct TabularTask {
    pub model: TabularModel,
    pub train: EncodedRows,
    pub dev: Option<EncodedRows>,
    /// Loss weight of each class (`None`: all 1).
    pub class_weights: Option<Vec<f32>>,
    pub device: Device,
    pub eval_batch_size: usize,
}

/// Class probabilities of every row, row-major `[n, C]`.
pub fn predict_probs(
    model: &TabularModel,
    rows: &EncodedRows,
    batch_size: usize,
    device: &Device,
) -> Result<Vec<f64>> {
    let mut probs = Vec::with_capacity(rows.n * model.config.schema.classes.len());
    for idx in chunks(rows.n, batch_size) {
        let logits = model.forward(&model.tensors(rows, &idx, device)?, None)?;
        for row in logits.to_dtype(DType::F32)?.to_vec2::<f32>()? {
            probs.extend(luminome_metrics::softmax(&row));
        }
    }
    Ok(probs)
}

/// "Balanced" class weights n / (C · n_c) (scikit-learn's), from the training classes.
pub fn balanced_weights(classes: &[u32], n_classes: usize) -> Vec<f32> {
    let mut counts = vec![0usize; n_classes];
    for &c in classes {
        counts[c as usize] += 1;
    }
    counts
        .iter()
        .map(|&k| classes.len() as f32 / (n_classes as f32 * k.max(1) as f32))
        .collect()
}

impl TabularTask {
    fn train_classes(&self) -> Result<&[u32]> {
        self.train
            .classes
            .as_deref()
            .context("internal: training rows without labels")
    }
}

impl TrainTask for TabularTask {
    fn train_len(&self) -> usize {
        self.train.n
    }

    fn train_loss(&self, records: &[usize], seed: u64) -> Result<Tensor> {
        let t = self.model.tensors(&self.train, records, &self.device)?;
        let rng = DropoutRng::new(seed ^ 0x7ab1e);
        let logits = self.model.forward(&t, Some(&rng))?;
        let classes = self.train_classes()?;
        let y: Vec<u32> = records.iter().map(|&i| classes[i]).collect();
        let y = Tensor::from_vec(y, (records.len(), 1), &self.device)?;
        let nll = candle_nn::ops::log_softmax(&logits, D::Minus1)?
            .gather(&y, 1)?
            .neg()?
            .squeeze(1)?;
        Ok(match &self.class_weights {
            None => nll.mean_all()?,
            Some(w) => {
                // PyTorch's weighted mean: Σ w_y · nll / Σ w_y.
                let w: Vec<f32> = records.iter().map(|&i| w[classes[i] as usize]).collect();
                let total: f32 = w.iter().sum();
                let w = Tensor::from_vec(w, records.len(), &self.device)?;
                ((nll * w)?.sum_all()? / total as f64)?
            }
        })
    }

    fn metric_names(&self) -> Vec<String> {
        if self.dev.is_none() {
            return Vec::new();
        }
        crate::train::classification::dev_metric_names()
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        let Some(dev) = &self.dev else {
            return Ok(BTreeMap::new());
        };
        let probs = predict_probs(&self.model, dev, self.eval_batch_size, &self.device)?;
        let classes = dev
            .classes
            .as_deref()
            .context("internal: dev rows without labels")?;
        let (loss, m) = score(&probs, classes, self.model.config.schema.classes.len())?;
        Ok(dev_metrics(loss, &m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::tabular::{TabularArch, TabularConfig};

    #[test]
    fn balanced_weights_by_hand() {
        // 4 rows of class 0, 1 of class 1: n / (C n_c) = 5/8 and 5/2.
        assert_eq!(balanced_weights(&[0, 0, 1, 0, 0], 2), vec![0.625, 2.5]);
    }

    #[test]
    fn the_weighted_loss_is_the_weighted_mean_of_the_rows_cross_entropy() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.tsv");
        std::fs::write(&p, "x\tlabel\n1\ta\n2\tb\n3\tc\n4\ta\n").unwrap();
        let arch = TabularArch::Mlp {
            hidden: 4,
            num_layers: 1,
            dropout: 0.0,
            category_dim: 2,
        };
        let (built, rows) =
            crate::testing::tabular_model(&p, "label", None, arch, None, 1).unwrap();
        let model = built.get::<TabularConfig>().unwrap().clone();
        let probs = predict_probs(&model, &rows, 4, &Device::Cpu).unwrap();
        let nll: Vec<f64> = [0usize, 1, 2, 0]
            .iter()
            .enumerate()
            .map(|(i, &k)| -probs[i * 3 + k].ln())
            .collect();
        let w = [1.0f32, 2.0, 4.0];
        let task = TabularTask {
            model,
            train: rows,
            dev: None,
            class_weights: Some(w.to_vec()),
            device: Device::Cpu,
            eval_batch_size: 4,
        };
        let loss: f64 = task
            .train_loss(&[0, 1, 2, 3], 0)
            .unwrap()
            .to_dtype(DType::F64)
            .unwrap()
            .to_scalar()
            .unwrap();
        let want = (nll[0] + 2.0 * nll[1] + 4.0 * nll[2] + nll[3]) / 8.0;
        assert!((loss - want).abs() < 1e-5, "{loss} vs {want}");
    }
}
