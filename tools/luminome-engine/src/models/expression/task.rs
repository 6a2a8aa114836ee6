//! Expression training as a training task: loss on the training samples' targets; dev loss,
//! Pearson and Spearman on the dev samples (the best checkpoint is the one with the highest dev
//! Pearson).

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use candle_core::{DType, Device, Tensor};
use luminome_io::region_dataset::RegionDataset;
use luminome_metrics::regression::{pearson, spearman};

use super::model::ExpressionModel;
use crate::models::region::{RegionData, RegionPosition, RegionTensors};
use crate::nn::DropoutRng;
use crate::train::task::TrainTask;

pub struct ExpressionTask {
    pub model: ExpressionModel,
    pub data: RegionData,
    pub device: Device,
    pub eval_batch_size: usize,
}

impl ExpressionTask {
    fn tensors(&self, ds: &RegionDataset, records: &[usize]) -> Result<RegionTensors> {
        let e = &self.model.config.encoder;
        RegionTensors::new(
            ds,
            records,
            e.max_offset(),
            e.position == RegionPosition::TssRelative,
            &self.device,
        )
    }
}

/// The targets of a batch (checked finite when the data was opened).
pub fn targets(t: &RegionTensors, ds: &RegionDataset) -> Result<Vec<f32>> {
    t.expression.clone().with_context(|| {
        format!(
            "{}: the dataset has no expression values",
            ds.path().display()
        )
    })
}

impl TrainTask for ExpressionTask {
    fn train_len(&self) -> usize {
        self.data.train_records.len()
    }

    fn train_loss(&self, records: &[usize], seed: u64) -> Result<Tensor> {
        let rows: Vec<usize> = records
            .iter()
            .map(|&i| self.data.train_records[i])
            .collect();
        let t = self.tensors(&self.data.train, &rows)?;
        let y = targets(&t, &self.data.train)?;
        let rng = DropoutRng::new(seed ^ 0xd409);
        let out = self.model.forward(&t, Some(&rng))?;
        Ok(self.model.loss(&out.prediction, &y)?)
    }

    /// The start is worth keeping when it is already a model: the linear path's ridge, or a
    /// published GET checkpoint's own predictions.
    fn evaluate_before_training(&self) -> bool {
        self.model.config.linear_path.is_some() || self.model.config.get.is_some()
    }

    fn metric_names(&self) -> Vec<String> {
        if self.data.dev.is_none() {
            return Vec::new();
        }
        ["dev_loss", "dev_pearson", "dev_spearman"]
            .map(String::from)
            .to_vec()
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        let Some((ds, records)) = &self.data.dev else {
            return Ok(BTreeMap::new());
        };
        let (mut truth, mut pred, mut loss_sum) = (Vec::new(), Vec::new(), 0f64);
        for chunk in records.chunks(self.eval_batch_size.max(1)) {
            let t = self.tensors(ds, chunk)?;
            let y = targets(&t, ds)?;
            let out = self.model.forward(&t, None)?;
            let l = self.model.loss(&out.prediction, &y)?;
            loss_sum += l.to_dtype(DType::F64)?.to_scalar::<f64>()? * chunk.len() as f64;
            pred.extend(out.prediction.to_vec1::<f32>()?.into_iter().map(f64::from));
            truth.extend(y.into_iter().map(f64::from));
        }
        let mut m = BTreeMap::new();
        m.insert("dev_loss".into(), loss_sum / records.len().max(1) as f64);
        // An undefined correlation (constant predictions early on) counts as 0.
        m.insert("dev_pearson".into(), pearson(&truth, &pred).unwrap_or(0.0));
        m.insert(
            "dev_spearman".into(),
            spearman(&truth, &pred).unwrap_or(0.0),
        );
        Ok(m)
    }
}
