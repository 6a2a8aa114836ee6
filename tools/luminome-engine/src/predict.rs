//! What a family implements to run under `luminome-predict`: a [`Predictor`] bound to a dataset,
//! opened through [`PredictFamily`]. `luminome-predict` lists the families it runs, one
//! [`PredictorEntry`] each; the run loop, outputs and metrics handling are its own.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use candle_core::Device;
use luminome_io::atomic::Commit;

use crate::models::FamilyConfig;

/// Outputs beside the predictions TSV that only some families write.
#[derive(Debug, Clone, Default)]
pub struct ExtraOutputs {
    /// Variant scores as a VCF (`.vcf`, or BGZF `.vcf.gz`).
    pub vcf: Option<PathBuf>,
    /// A bedGraph track of the scores on the genome.
    pub bedgraph: Option<PathBuf>,
    /// The variants file the VCF output copies its records from [default: the one the dataset
    /// was built from].
    pub variants: Option<PathBuf>,
    /// Chromosome sizes (a `.fai` or `chrom.sizes`) for a bigWig track.
    pub chrom_sizes: Option<PathBuf>,
}

impl ExtraOutputs {
    pub fn any(&self) -> bool {
        self.vcf.is_some() || self.bedgraph.is_some()
    }
}

/// A model bound to the dataset it predicts on.
pub trait Predictor {
    /// Records in the dataset.
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether true values are known (a truth column is written and metrics computed).
    fn has_truth(&self) -> bool;

    /// Output columns after `record` and `name`.
    fn columns(&self) -> Vec<String>;

    /// Predicts `records` (dataset row numbers, ascending): for each, its record number, its
    /// name and one value per [`Predictor::columns`] entry.
    fn predict(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>>;

    /// Metrics over everything predicted so far, as `(metric, value)` rows; `None` without truth.
    fn metrics(&self) -> Result<Option<Vec<(String, String)>>>;

    /// Predicts only the samples of `subset` of the split the model was trained with (expression
    /// models trained with --holdout); called before anything is predicted.
    fn select_subset(&mut self, subset: crate::models::region::Subset) -> Result<()> {
        bail!(
            "--subset {} is for expression models trained with --holdout",
            subset.name()
        )
    }

    /// Checks, before any output, that this predictor can write the extra outputs asked for.
    fn check_extra(&self, extra: &ExtraOutputs) -> Result<()> {
        if extra.any() {
            bail!(
                "--vcf and --bedgraph are written for variant datasets scored by a bi-strand model"
            );
        }
        Ok(())
    }

    /// Writes the extra outputs after the last batch, uncommitted (they are committed with the
    /// predictions).
    fn write_extra(&mut self, _extra: &ExtraOutputs) -> Result<Vec<Box<dyn Commit>>> {
        Ok(Vec::new())
    }
}

/// One output line.
pub struct PredictionRow {
    pub record: u64,
    pub name: String,
    pub values: Vec<String>,
}

/// A family that `luminome-predict` can run.
pub trait PredictFamily: FamilyConfig {
    /// Opens a checkpoint of this family on a dataset, with every check done before output.
    fn open_predictor(
        checkpoint: &Path,
        dataset: &Path,
        device: Device,
    ) -> Result<Box<dyn Predictor>>;
}

/// One family in `luminome-predict`'s list.
pub struct PredictorEntry {
    pub kind: &'static str,
    pub family: &'static str,
    pub open: fn(&Path, &Path, Device) -> Result<Box<dyn Predictor>>,
}

impl PredictorEntry {
    pub fn of<C: PredictFamily>() -> Self {
        Self {
            kind: C::KIND,
            family: C::FAMILY,
            open: C::open_predictor,
        }
    }
}
