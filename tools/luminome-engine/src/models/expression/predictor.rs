//! Expression models under `luminome-predict` (and the input `luminome-importance` explains):
//! one row per sample (gene, gene id, cell type, the split it belongs to, predicted, observed),
//! and Pearson, Spearman, R², Poisson deviance and MSE over all samples with a value and per
//! cell type. Samples with no region in their window get `NA` and are left out of the metrics.

use std::path::Path;

use anyhow::{bail, Result};
use candle_core::Device;
use luminome_io::region_dataset::{RegionDataset, SampleRow};

use super::config::ExpressionConfig;
use super::model::ExpressionModel;
use crate::checkpoint::{read_checkpoint_meta, Checkpoint};
use crate::input::check_region_features;
use crate::models::region::metrics::{metrics_by_cell_type, observed_column};
use crate::models::region::{RegionPosition, RegionTensors, Subset};
use crate::predict::{
    PredictFamily, PredictionRow, Predictor, SampleTally, SelectsSubset, Tallied, Tally,
};

/// An expression checkpoint and a region dataset, checked against each other.
pub struct ExpressionInput {
    pub checkpoint: Checkpoint,
    pub dataset: RegionDataset,
    pub samples: Vec<SampleRow>,
    pub device: Device,
}

impl ExpressionInput {
    pub fn open(checkpoint: &Path, dataset: &Path, device: Device) -> Result<Self> {
        let meta = read_checkpoint_meta(checkpoint)?;
        if meta.model.get::<ExpressionConfig>().is_none() {
            bail!(
                "{}: this checkpoint holds a {} (kind {}), not an expression model (luminome-train expression)",
                checkpoint.display(),
                meta.model.family(),
                meta.model.kind()
            );
        }
        meta.check_dataset_kind(checkpoint, dataset)?;
        let ds = RegionDataset::open(dataset)?;
        check_region_features(
            checkpoint,
            &meta.feature_names.clone().unwrap_or_default(),
            &ds,
        )?;
        let ck = Checkpoint::load_frozen(checkpoint, &device)?;
        let max = ck.get::<ExpressionConfig>()?.config.encoder.max_regions;
        if ds.n_regions() > max {
            bail!(
                "{}: {} region slots, more than the {} the model in {} reads",
                dataset.display(),
                ds.n_regions(),
                max,
                checkpoint.display()
            );
        }
        let samples = ds.read_samples()?;
        Ok(Self {
            checkpoint: ck,
            dataset: ds,
            samples,
            device,
        })
    }

    pub fn model(&self) -> Result<&ExpressionModel> {
        self.checkpoint.get::<ExpressionConfig>()
    }

    /// The batch of `records` as the model reads it.
    pub fn tensors(&self, records: &[usize]) -> Result<RegionTensors> {
        let e = &self.model()?.config.encoder;
        RegionTensors::new(
            &self.dataset,
            records,
            e.max_offset(),
            e.position == RegionPosition::TssRelative,
            &self.device,
        )
    }

    /// The records of `subset` of the model's split, in dataset order.
    pub fn subset(&self, subset: Subset) -> Result<Vec<usize>> {
        let all = (0..self.dataset.len()).collect();
        if subset == Subset::All {
            return Ok(all);
        }
        let Some(h) = &self.model()?.config.holdout else {
            bail!(
                "{}: --subset {} needs a model trained with --holdout; this one was trained without a split",
                self.checkpoint.path.display(),
                subset.name()
            );
        };
        let records: Vec<usize> = (0..self.dataset.len())
            .filter(|&r| h.assign(&self.samples[r]) == subset)
            .collect();
        if records.is_empty() {
            bail!(
                "{}: no sample of this dataset is in the model's {} set ({})",
                self.dataset.path().display(),
                subset.name(),
                h.describe()
            );
        }
        Ok(records)
    }

    /// The split each sample belongs to, when the model has one.
    pub fn split_of(&self, record: usize) -> Result<Option<Subset>> {
        Ok(self
            .model()?
            .config
            .holdout
            .as_ref()
            .map(|h| h.assign(&self.samples[record])))
    }
}

pub struct ExpressionPredictor {
    input: ExpressionInput,
    /// Dataset rows predicted, in order.
    records: Vec<usize>,
    /// (cell type, observed, predicted) of every sample with both.
    scored: Vec<(String, f64, f64)>,
    /// Samples with no region (predicted NA).
    empty: usize,
    /// Since [`Tallied::start_tally`] (a shard's part): each predicted sample (its position
    /// among `records`); reason 1: no region.
    tally: SampleTally,
}

impl ExpressionPredictor {
    pub fn open(checkpoint: &Path, dataset: &Path, device: Device) -> Result<Self> {
        let input = ExpressionInput::open(checkpoint, dataset, device)?;
        Ok(Self {
            records: (0..input.dataset.len()).collect(),
            input,
            scored: Vec::new(),
            empty: 0,
            tally: SampleTally::default(),
        })
    }
}

impl SelectsSubset for ExpressionPredictor {
    fn select_subset(&mut self, subset: Subset) -> Result<()> {
        self.records = self.input.subset(subset)?;
        Ok(())
    }
}

impl Predictor for ExpressionPredictor {
    fn len(&self) -> usize {
        self.records.len()
    }

    fn has_truth(&self) -> bool {
        self.input.dataset.has_expression()
    }

    fn columns(&self) -> Vec<String> {
        let mut c = vec!["gene_id".to_string(), "cell_type".into()];
        if self
            .input
            .checkpoint
            .get::<ExpressionConfig>()
            .is_ok_and(|m| m.config.holdout.is_some())
        {
            c.push("split".into());
        }
        c.push("predicted".into());
        if self.has_truth() {
            c.push("observed".into());
        }
        c
    }

    fn subsets(&mut self) -> Option<&mut dyn SelectsSubset> {
        Some(self)
    }

    fn predict(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>> {
        let rows: Vec<usize> = records.iter().map(|&i| self.records[i]).collect();
        let t = self.input.tensors(&rows)?;
        let predicted = self.input.model()?.predict(&t)?;
        let mut out = Vec::with_capacity(rows.len());
        for (i, &r) in rows.iter().enumerate() {
            let s = &self.input.samples[r];
            let mut values = vec![s.gene_id.clone(), s.cell_type.clone()];
            if let Some(split) = self.input.split_of(r)? {
                values.push(split.name().into());
            }
            let p = (t.n_used[i] > 0).then_some(predicted[i]);
            if p.is_none() {
                self.empty += 1;
            }
            let observed = t.expression.as_ref().map(|e| e[i]);
            self.tally
                .push(records[i], u8::from(p.is_none()), p, observed);
            values.push(p.map_or_else(|| "NA".into(), |v| v.to_string()));
            observed_column(
                &mut values,
                &mut self.scored,
                t.expression.as_ref().map(|e| e[i]),
                &s.cell_type,
                p,
            );
            out.push(PredictionRow {
                record: r as u64,
                name: s.gene.clone(),
                values,
            });
        }
        Ok(out)
    }

    fn tallied(&mut self) -> Option<&mut dyn Tallied> {
        Some(self)
    }

    fn metrics(&self) -> Result<Option<Vec<(String, String)>>> {
        if !self.has_truth() || self.scored.is_empty() {
            return Ok(None);
        }
        let mut out = metrics_by_cell_type(&self.scored, self.input.dataset.cell_types());
        if self.empty > 0 {
            out.push(("samples_without_regions".into(), self.empty.to_string()));
        }
        Ok(Some(out))
    }
}

impl Tallied for ExpressionPredictor {
    fn start_tally(&mut self) {
        self.tally.start();
    }

    fn tally(&self) -> Tally {
        self.tally.get()
    }

    fn replay(&mut self, tally: &Tally) -> Result<()> {
        let has_truth = self.has_truth();
        for (i, reason, p, observed) in SampleTally::rows(tally, self.records.len())? {
            if reason != 0 {
                self.empty += 1;
            }
            let s = &self.input.samples[self.records[i]];
            let observed = has_truth.then_some(observed);
            observed_column(&mut Vec::new(), &mut self.scored, observed, &s.cell_type, p);
        }
        Ok(())
    }
}

impl PredictFamily for ExpressionConfig {
    fn open_predictor(
        checkpoint: &Path,
        dataset: &Path,
        device: Device,
    ) -> Result<Box<dyn Predictor>> {
        Ok(Box::new(ExpressionPredictor::open(
            checkpoint, dataset, device,
        )?))
    }
}
