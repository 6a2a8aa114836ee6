//! A GET fine-tuned checkpoint under `luminome-predict` on a `luminome-regions` dataset: one row
//! per sample (gene, gene id, cell type, predicted, observed) and the expression models' metrics
//! (Pearson, Spearman, R², Poisson deviance, MSE over all samples with a value, then per cell
//! type), as models/expression/predictor.rs writes them for a model trained without a split.
//!
//! `predicted` is GETRegionFinetune's output (softplus applied) at the slot a TSS-region head
//! reads ([`read_slot`]: the region holding the TSS, else the nearest one after it in genomic
//! order), in the column of the gene's strand (0: +, 1: −; [`super::tss`]). GET has no padding
//! mask and no position embedding: each sample runs over its used regions only (any count), so
//! empty slots never enter attention. Samples with no region, or whose strand is unknown, get
//! `NA` and are left out of the metrics.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use candle_core::{Device, Tensor};
use luminome_io::region_dataset::{RegionDataset, SampleRow};

use super::{check_motif_count, tss_expression, GetRegion, Strand, TssSite};
use crate::models::region::batch::read_slot;
use crate::models::region::metrics::{metrics_by_cell_type, observed_column};
use crate::models::region::Subset;
use crate::predict::{PredictionRow, Predictor, SampleTally, SelectsSubset, Tallied, Tally};

/// A GET finetune checkpoint and a region dataset, checked against each other.
pub struct GetPredictor {
    get: GetRegion,
    checkpoint: PathBuf,
    dataset: RegionDataset,
    samples: Vec<SampleRow>,
    device: Device,
    /// (cell type, observed, predicted) of every sample with both.
    scored: Vec<(String, f64, f64)>,
    /// Samples with no region (predicted NA).
    empty: usize,
    /// Samples whose strand is unknown (predicted NA).
    unstranded: usize,
    /// A shard's tally; reasons 1: no region, 2: no strand.
    tally: SampleTally,
}

impl GetPredictor {
    /// Opens `checkpoint` (anything [`GetRegion::open`] takes; `heads` as there) and `dataset`,
    /// refusing a pretrain checkpoint, a dataset with another feature count than the model's
    /// `num_motif`, and a dataset without the `tss_slot`/`strand` tensors.
    pub fn open(
        checkpoint: &Path,
        heads: Option<usize>,
        dataset: &Path,
        device: Device,
    ) -> Result<Self> {
        let get = GetRegion::open(checkpoint, heads, &device)?;
        get.finetune()?;
        let ds = RegionDataset::open(dataset)?;
        check_motif_count(checkpoint, get.config.num_motif, dataset, ds.n_features())?;
        let probe = ds.batch(&[])?;
        if probe.tss_slot.is_none() || probe.strand.is_none() {
            bail!(
                "{}: this dataset has no tss_slot/strand tensors (written by an older luminome-regions); GET reads the gene's strand column at its TSS region, so rebuild the dataset with the current luminome-regions",
                dataset.display()
            );
        }
        let samples = ds.read_samples()?;
        Ok(Self {
            get,
            checkpoint: checkpoint.to_path_buf(),
            dataset: ds,
            samples,
            device,
            scored: Vec::new(),
            empty: 0,
            unstranded: 0,
            tally: SampleTally::default(),
        })
    }

    /// GET's prediction for each of `records` (`None`: no region, or no strand).
    pub fn predict_values(&self, records: &[usize]) -> Result<Vec<Option<f32>>> {
        let model = self.get.finetune()?;
        let b = self.dataset.batch(records)?;
        let (n, f) = (b.n_regions, b.n_features);
        let (Some(slots), Some(strands)) = (&b.tss_slot, &b.strand) else {
            bail!("internal: the dataset lost its tss_slot/strand tensors");
        };
        // Samples by their count of used regions (the first slots), each group one batch.
        let mut groups: BTreeMap<usize, Vec<(usize, TssSite)>> = BTreeMap::new();
        for i in 0..b.batch {
            let mask = &b.region_mask[i * n..(i + 1) * n];
            let used = mask.iter().filter(|&&m| m != 0).count();
            if mask[..used].contains(&0) {
                bail!(
                    "{}: sample {}: its regions are not the first slots of its row",
                    self.dataset.path().display(),
                    records[i]
                );
            }
            let strand = match strands[i] {
                1 => Strand::Plus,
                -1 => Strand::Minus,
                _ => continue,
            };
            if used == 0 {
                continue;
            }
            let slot = read_slot(b.tss_index[i], slots[i].max(0) as usize, used);
            groups
                .entry(used)
                .or_default()
                .push((i, TssSite { slot, strand }));
        }
        let mut out = vec![None; b.batch];
        for (used, members) in groups {
            let mut x = Vec::with_capacity(members.len() * used * f);
            for &(i, _) in &members {
                x.extend_from_slice(&b.features[i * n * f..(i * n + used) * f]);
            }
            let x = Tensor::from_vec(x, (members.len(), used, f), &self.device)?;
            let y = model.forward(&x)?;
            let sites: Vec<TssSite> = members.iter().map(|m| m.1).collect();
            for (&(i, _), v) in members.iter().zip(tss_expression(&y, &sites)?) {
                out[i] = Some(v);
            }
        }
        Ok(out)
    }
}

impl GetPredictor {
    /// Counts a sample without a prediction: reason 1, no region; 2, no strand.
    fn count_missing(&mut self, reason: u8) {
        count_missing(&mut self.empty, &mut self.unstranded, reason);
    }
}

fn count_missing(empty: &mut usize, unstranded: &mut usize, reason: u8) {
    match reason {
        1 => *empty += 1,
        2 => *unstranded += 1,
        _ => {}
    }
}

impl Tallied for GetPredictor {
    fn start_tally(&mut self) {
        self.tally.start();
    }

    fn tally(&self) -> Tally {
        self.tally.get()
    }

    fn replay(&mut self, tally: &Tally) -> Result<()> {
        let has_truth = self.has_truth();
        for (r, reason, p, observed) in SampleTally::rows(tally, self.dataset.len())? {
            self.count_missing(reason);
            let cell_type = &self.samples[r].cell_type;
            let observed = has_truth.then_some(observed);
            observed_column(&mut Vec::new(), &mut self.scored, observed, cell_type, p);
        }
        Ok(())
    }
}

impl SelectsSubset for GetPredictor {
    fn select_subset(&mut self, subset: Subset) -> Result<()> {
        if subset != Subset::All {
            bail!(
                "{}: --subset {} is for Luminome expression models trained with --holdout; a GET checkpoint has no split of this dataset (use --subset all or leave it out)",
                self.checkpoint.display(),
                subset.name()
            );
        }
        Ok(())
    }
}

impl Predictor for GetPredictor {
    fn len(&self) -> usize {
        self.dataset.len()
    }

    fn has_truth(&self) -> bool {
        self.dataset.has_expression()
    }

    fn columns(&self) -> Vec<String> {
        let mut c = vec![
            "gene_id".to_string(),
            "cell_type".into(),
            "predicted".into(),
        ];
        if self.has_truth() {
            c.push("observed".into());
        }
        c
    }

    fn subsets(&mut self) -> Option<&mut dyn SelectsSubset> {
        Some(self)
    }

    fn predict(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>> {
        let predicted = self.predict_values(records)?;
        let b = self.dataset.batch(records)?;
        let n = b.n_regions;
        let mut out = Vec::with_capacity(records.len());
        for (i, &r) in records.iter().enumerate() {
            let s = &self.samples[r];
            let p = predicted[i];
            let reason = match p {
                Some(_) => 0,
                None if b.region_mask[i * n..(i + 1) * n].iter().all(|&m| m == 0) => 1,
                None => 2,
            };
            count_missing(&mut self.empty, &mut self.unstranded, reason);
            let observed = b.expression.as_ref().map(|e| e[i]);
            self.tally.push(r, reason, p, observed);
            let mut values = vec![
                s.gene_id.clone(),
                s.cell_type.clone(),
                p.map_or_else(|| "NA".into(), |v| v.to_string()),
            ];
            observed_column(
                &mut values,
                &mut self.scored,
                b.expression.as_ref().map(|e| e[i]),
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
        let mut out = metrics_by_cell_type(&self.scored, self.dataset.cell_types());
        if self.empty > 0 {
            out.push(("samples_without_regions".into(), self.empty.to_string()));
        }
        if self.unstranded > 0 {
            out.push(("samples_without_strand".into(), self.unstranded.to_string()));
        }
        Ok(Some(out))
    }
}
