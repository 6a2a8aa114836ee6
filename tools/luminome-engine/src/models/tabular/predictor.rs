//! Tabular models under `luminome-predict`: one row per sample of a feature table (the table's
//! columns found by name, encoded with the schema stored in the model), its class probabilities
//! and the predicted class (the stored decision threshold, if any); with a label column, the
//! metrics. Also the input `luminome-importance` explains.

use std::path::Path;

use anyhow::{bail, Result};
use candle_core::Device;
use luminome_io::table::FeatureTable;
use luminome_metrics::ClassificationMetrics;

use super::config::TabularConfig;
use super::model::TabularModel;
use super::schema::EncodedRows;
use super::setup::predicted_class;
use super::task::predict_probs;
use crate::checkpoint::{read_checkpoint_meta, Checkpoint};
use crate::models::FamilyConfig;
use crate::predict::{PredictFamily, PredictionRow, Predictor, Tallied, Tally};

/// A tabular checkpoint and a table encoded for it.
pub struct TabularInput {
    pub checkpoint: Checkpoint,
    pub table: FeatureTable,
    pub rows: EncodedRows,
    pub device: Device,
}

impl TabularInput {
    pub fn open(checkpoint: &Path, table: &Path, device: Device) -> Result<Self> {
        let meta = read_checkpoint_meta(checkpoint)?;
        let Some(cfg) = meta.model.get::<TabularConfig>() else {
            bail!(
                "{}: this checkpoint holds a {} (kind {}), not a tabular classifier (luminome-train tabular)",
                checkpoint.display(),
                meta.model.family(),
                meta.model.kind()
            );
        };
        cfg.validate()?;
        let t = FeatureTable::read(table, None)?;
        if let Some(id) = &cfg.schema.id_column {
            super::schema::check_unique_ids(&t, id)?;
        }
        let rows = cfg.schema.encode(&t, &(0..t.len()).collect::<Vec<_>>())?;
        let ck = Checkpoint::load_frozen(checkpoint, &device)?;
        Ok(Self {
            checkpoint: ck,
            table: t,
            rows,
            device,
        })
    }

    pub fn model(&self) -> Result<&TabularModel> {
        self.checkpoint.get::<TabularConfig>()
    }
}

struct TabularPredictor {
    input: TabularInput,
    probs: Vec<f64>,
    done: Vec<usize>,
    /// `done`'s length at [`Tallied::start_tally`] (a shard's part: its records are from here).
    tally_from: Option<usize>,
}

impl Predictor for TabularPredictor {
    fn len(&self) -> usize {
        self.input.rows.n
    }

    fn has_truth(&self) -> bool {
        self.input.rows.classes.is_some()
    }

    fn columns(&self) -> Vec<String> {
        let schema = &self.input.model().expect("tabular model").config.schema;
        let mut c = Vec::new();
        if self.has_truth() {
            c.push("label".to_string());
        }
        c.extend(schema.classes.iter().map(|k| format!("prob_{k}")));
        c.push("predicted".into());
        c
    }

    fn predict(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>> {
        let model = self.input.model()?;
        let cfg = &model.config;
        let batch = self.input.rows.select(records);
        let probs = predict_probs(model, &batch, records.len().max(1), &self.input.device)?;
        let c = cfg.schema.classes.len();
        let mut out = Vec::with_capacity(records.len());
        for (i, &r) in records.iter().enumerate() {
            let p = &probs[i * c..(i + 1) * c];
            let mut values = Vec::with_capacity(c + 2);
            if let Some(k) = &batch.classes {
                values.push(cfg.schema.classes[k[i] as usize].clone());
            }
            values.extend(p.iter().map(|v| format!("{v:.6}")));
            values.push(cfg.schema.classes[predicted_class(p, cfg.threshold)].clone());
            out.push(PredictionRow {
                record: r as u64,
                name: batch.ids[i].clone(),
                values,
            });
        }
        self.probs.extend_from_slice(&probs);
        self.done.extend_from_slice(records);
        Ok(out)
    }

    fn tallied(&mut self) -> Option<&mut dyn Tallied> {
        if self.has_truth() {
            Some(self)
        } else {
            None
        }
    }

    fn metrics(&self) -> Result<Option<Vec<(String, String)>>> {
        let Some(classes) = &self.input.rows.classes else {
            return Ok(None);
        };
        if self.done.is_empty() {
            return Ok(None);
        }
        let cfg = &self.input.model()?.config;
        let labels: Vec<usize> = self.done.iter().map(|&r| classes[r] as usize).collect();
        let m = ClassificationMetrics::compute_with_threshold(
            &labels,
            &self.probs,
            cfg.schema.classes.len(),
            cfg.threshold,
        )
        .map_err(|e| anyhow::anyhow!("cannot compute metrics: {e}"))?;
        let mut rows = m.rows();
        if let Some(t) = cfg.threshold {
            rows.push(("threshold".into(), format!("{t:.6}")));
        }
        for (col, n) in &self.input.rows.unknown {
            rows.push((format!("unknown_categories.{col}"), n.to_string()));
        }
        Ok(Some(rows))
    }
}

/// What the metrics are computed from: each predicted row's class probabilities (f64, exact);
/// the labels come from the table.
impl Tallied for TabularPredictor {
    fn start_tally(&mut self) {
        self.tally_from = Some(self.done.len());
    }

    fn tally(&self) -> Tally {
        let from = self.tally_from.unwrap_or(self.done.len());
        let c = self
            .input
            .model()
            .map_or(0, |m| m.config.schema.classes.len());
        Tally {
            width: c,
            records: self.done[from..].iter().map(|&r| r as u64).collect(),
            values: self.probs[from * c..].to_vec(),
        }
    }

    fn replay(&mut self, tally: &Tally) -> Result<()> {
        let c = self.input.model()?.config.schema.classes.len();
        if tally.width != c || tally.values.len() != c * tally.records.len() {
            bail!(
                "a shard's tally holds {} values per row, not {c} class probabilities",
                tally.width
            );
        }
        if let Some(&r) = tally.records.iter().find(|&&r| r as usize >= self.len()) {
            bail!("a shard's tally names row {r} of {}", self.len());
        }
        self.done.extend(tally.records.iter().map(|&r| r as usize));
        self.probs.extend_from_slice(&tally.values);
        Ok(())
    }
}

impl PredictFamily for TabularConfig {
    fn open_predictor(
        checkpoint: &Path,
        dataset: &Path,
        device: Device,
    ) -> Result<Box<dyn Predictor>> {
        let input = TabularInput::open(checkpoint, dataset, device)?;
        if let Some(note) = input.rows.unknown_note() {
            eprintln!("luminome-predict: {}: {note}", dataset.display());
        }
        Ok(Box::new(TabularPredictor {
            input,
            probs: Vec::new(),
            done: Vec::new(),
            tally_from: None,
        }))
    }
}
