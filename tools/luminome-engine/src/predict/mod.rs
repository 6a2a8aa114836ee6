//! What a family implements to run under `luminome-predict`: a [`Predictor`] bound to a dataset,
//! opened through [`PredictFamily`]. `luminome-predict` lists the families it runs, one
//! [`PredictorEntry`] each; the run loop, outputs and metrics handling are its own.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::Device;
use luminome_io::atomic::Commit;

mod class_outputs;
mod sample_tally;
pub(crate) use sample_tally::SampleTally;
pub mod embeddings;
pub mod saturation;
pub mod variants;

pub use class_outputs::ClassOutputs;

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
    /// Saturated variant datasets: every interval's substitutions as (N, 4, L) npz arrays.
    pub npz: Option<PathBuf>,
    /// Chromosome sizes (a `.fai` or `chrom.sizes`) for a bigWig track.
    pub chrom_sizes: Option<PathBuf>,
    /// Per-record embeddings (safetensors), for the families that write them here.
    pub embeddings: Option<PathBuf>,
}

impl ExtraOutputs {
    pub fn any(&self) -> bool {
        self.vcf.is_some() || self.bedgraph.is_some() || self.npz.is_some()
    }
}

/// The exact numbers behind a predictor's extra outputs and metrics, `width` per predicted
/// record: what each shard of a sharded run (`luminome-predict --shard`) carries to the gather,
/// which replays them so its outputs are those of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub width: usize,
    /// Dataset row numbers, ascending.
    pub records: Vec<u64>,
    /// `records.len() × width`, row-major (f64: a classifier's probabilities exactly).
    pub values: Vec<f64>,
}

/// A predictor that keeps a [`Tally`]: its sharded runs gather every output, not only the TSV.
pub trait Tallied {
    /// Keeps a tally of what is predicted from here on (a shard's part; other runs keep none).
    fn start_tally(&mut self);

    /// The tally of everything predicted since [`Tallied::start_tally`].
    fn tally(&self) -> Tally;

    /// Replays the tallies of a sharded run's parts, in record order, as if those records had
    /// been predicted here.
    fn replay(&mut self, tally: &Tally) -> Result<()>;
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

    /// As [`SelectsSubset`], for families that predict one subset of a split (expression models
    /// trained with `--holdout`); `None` (the default): `--subset` is refused by the caller.
    fn subsets(&mut self) -> Option<&mut dyn SelectsSubset> {
        None
    }

    /// As [`WritesExtraOutputs`], for families that write outputs beside the TSV (variant
    /// scores as a VCF, a bedGraph or npz arrays); `None` (the default): those flags are refused.
    fn extra_outputs(&mut self) -> Option<&mut dyn WritesExtraOutputs> {
        None
    }

    /// The predictor as [`Tallied`], for families whose extra outputs or metrics a sharded run
    /// gathers; `None` (the default): a gathered run writes only the TSV.
    fn tallied(&mut self) -> Option<&mut dyn Tallied> {
        None
    }

    /// As [`ClassProbabilities`], for classifiers whose prediction is the most probable class;
    /// `None` (the default) for a family that cannot join an ensemble ([`EnsemblePredictor`]).
    fn classes(&mut self) -> Option<&mut dyn ClassProbabilities> {
        None
    }
}

/// A predictor of one subset of the split its model was trained with.
pub trait SelectsSubset {
    /// Keeps only `subset`'s samples; called before anything is predicted.
    fn select_subset(&mut self, subset: crate::models::region::Subset) -> Result<()>;
}

/// A predictor that writes outputs beside the predictions TSV.
pub trait WritesExtraOutputs {
    /// Checks, before any output, that the extra outputs asked for can be written.
    fn check_extra(&self, extra: &ExtraOutputs) -> Result<()>;

    /// Writes the extra outputs after the last batch, uncommitted (they are committed with the
    /// predictions).
    fn write_extra(&mut self, extra: &ExtraOutputs) -> Result<Vec<Box<dyn Commit>>>;
}

/// A classifier's class probabilities (what an ensemble averages).
pub trait ClassProbabilities {
    /// The label value of each class, in the order of [`ClassProbabilities::class_probabilities`].
    fn class_labels(&self) -> &[i64];

    /// The class probabilities of `records`, with their names and labels, not recorded for
    /// [`Predictor::metrics`].
    fn class_probabilities(&mut self, records: &[usize]) -> Result<ClassBatch>;
}

/// Class probabilities of a batch of records (the input of an ensemble's average).
pub struct ClassBatch {
    /// `(record, name)` of each record, in batch order.
    pub records: Vec<(u64, String)>,
    /// Their label values, when the dataset has labels.
    pub labels: Option<Vec<i64>>,
    /// One probability per class and record.
    pub probs: Vec<Vec<f64>>,
}

/// Several classifiers run on one dataset as one model: the prediction is the mean of the
/// members' class probabilities (soft voting), the predicted class its most probable one. The
/// members must have the same classes in the same order; each opened the dataset with its own
/// checks (tokenizer, length, labels), so they may differ in family, backbone, adapter or
/// strand settings. Metrics are the ensemble's, then each member's under `member_<i>.`.
pub struct EnsemblePredictor {
    members: Vec<Box<dyn Predictor>>,
    outputs: ClassOutputs,
    member_outputs: Vec<ClassOutputs>,
}

impl EnsemblePredictor {
    /// `members` with the checkpoint each came from (for messages), at least two.
    pub fn new(mut members: Vec<(Box<dyn Predictor>, PathBuf)>) -> Result<Self> {
        if members.len() < 2 {
            bail!("an ensemble needs at least two checkpoints");
        }
        let labels = members[0]
            .0
            .classes()
            .map(|c| c.class_labels().to_vec())
            .unwrap_or_default();
        let (first_len, first_path) = (members[0].0.len(), members[0].1.clone());
        for (m, path) in &mut members {
            match m.classes().map(|c| c.class_labels()) {
                None => bail!(
                    "{}: several checkpoints are averaged only for classifiers (the classifier, k-mer linear and bag-of-tokens families); this one is not",
                    path.display()
                ),
                Some(l) if l != labels.as_slice() => bail!(
                    "{}: its classes (label values {l:?}) are not those of {} ({labels:?}); an ensemble averages the probabilities of the same classes",
                    path.display(),
                    first_path.display()
                ),
                Some(_) => {}
            }
            if m.len() != first_len {
                bail!(
                    "{} sees {} records in the dataset and {} sees {first_len}",
                    path.display(),
                    m.len(),
                    first_path.display(),
                );
            }
        }
        let has_truth = members[0].0.has_truth();
        let n = members.len();
        Ok(Self {
            members: members.into_iter().map(|(m, _)| m).collect(),
            outputs: ClassOutputs::new(labels.clone(), has_truth),
            member_outputs: (0..n)
                .map(|_| ClassOutputs::new(labels.clone(), has_truth))
                .collect(),
        })
    }
}

impl Predictor for EnsemblePredictor {
    fn len(&self) -> usize {
        self.members[0].len()
    }

    fn has_truth(&self) -> bool {
        self.members[0].has_truth()
    }

    fn columns(&self) -> Vec<String> {
        self.outputs.columns()
    }

    fn predict(&mut self, records: &[usize]) -> Result<Vec<PredictionRow>> {
        let batches = self
            .members
            .iter_mut()
            .map(|m| {
                m.classes()
                    .context("internal: an ensemble member without class probabilities")?
                    .class_probabilities(records)
            })
            .collect::<Result<Vec<_>>>()?;
        // Every member read the same dataset and index, so its rows are the same records in the
        // same order; checked, since the mean is taken by position.
        for (i, b) in batches.iter().enumerate() {
            if b.records != batches[0].records
                || b.labels != batches[0].labels
                || b.probs.len() != b.records.len()
            {
                bail!(
                    "ensemble member {}: its batch is not member 1's records with one probability row each",
                    i + 1
                );
            }
        }
        let k = self.outputs.label_values.len();
        let mut mean = vec![vec![0.0f64; k]; records.len()];
        for b in &batches {
            for (acc, p) in mean.iter_mut().zip(&b.probs) {
                for (a, x) in acc.iter_mut().zip(p) {
                    *a += x;
                }
            }
        }
        let scale = 1.0 / batches.len() as f64;
        for row in &mut mean {
            row.iter_mut().for_each(|a| *a *= scale);
        }
        let first = &batches[0];
        let batch = ClassBatch {
            records: first.records.clone(),
            labels: first.labels.clone(),
            probs: mean,
        };
        for (out, b) in self.member_outputs.iter_mut().zip(batches) {
            out.record(&b)?;
        }
        self.outputs.rows(batch)
    }

    /// With labels: the ensemble's and every member's metrics are computed from tallies.
    fn tallied(&mut self) -> Option<&mut dyn Tallied> {
        if self.has_truth() {
            Some(self)
        } else {
            None
        }
    }

    fn metrics(&self) -> Result<Option<Vec<(String, String)>>> {
        let Some(m) = self.outputs.metrics()? else {
            return Ok(None);
        };
        let mut rows = m.rows();
        rows.push(("members".into(), self.members.len().to_string()));
        for (i, out) in self.member_outputs.iter().enumerate() {
            if let Some(m) = out.metrics()? {
                rows.extend(
                    m.rows()
                        .into_iter()
                        .filter(|(k, _)| !k.starts_with("confusion_"))
                        .map(|(k, v)| (format!("member_{}.{k}", i + 1), v)),
                );
            }
        }
        Ok(Some(rows))
    }
}

/// An ensemble's tally: per labelled record, the averaged classes' tally row (label, mean
/// probabilities), then each member's (label, its probabilities), side by side.
impl Tallied for EnsemblePredictor {
    fn start_tally(&mut self) {
        self.outputs.start_tally();
        self.member_outputs.iter_mut().for_each(|m| m.start_tally());
    }

    fn tally(&self) -> Tally {
        let mean = self.outputs.tally();
        let members: Vec<Tally> = self.member_outputs.iter().map(|m| m.tally()).collect();
        let w = mean.width;
        let mut values = Vec::with_capacity(mean.values.len() * (1 + members.len()));
        for i in 0..mean.records.len() {
            values.extend(&mean.values[i * w..(i + 1) * w]);
            for m in &members {
                values.extend(&m.values[i * w..(i + 1) * w]);
            }
        }
        Tally {
            width: w * (1 + members.len()),
            records: mean.records,
            values,
        }
    }

    fn replay(&mut self, tally: &Tally) -> Result<()> {
        let groups = 1 + self.member_outputs.len();
        if !tally.width.is_multiple_of(groups)
            || tally.values.len() != tally.width * tally.records.len()
        {
            bail!(
                "a shard's tally holds {} values per record, not {groups} rows of a label and probabilities",
                tally.width
            );
        }
        let w = tally.width / groups;
        let part = |g: usize| Tally {
            width: w,
            records: tally.records.clone(),
            values: tally
                .values
                .chunks_exact(tally.width)
                .flat_map(|row| row[g * w..(g + 1) * w].iter().copied())
                .collect(),
        };
        self.outputs.replay(&part(0))?;
        for (g, m) in self.member_outputs.iter_mut().enumerate() {
            m.replay(&part(g + 1))?;
        }
        Ok(())
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
    /// Whether several checkpoints of this family can be averaged as one ensemble (its predictor
    /// gives [`Predictor::classes`]).
    const ENSEMBLES: bool = false;

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
    /// [`PredictFamily::ENSEMBLES`].
    pub ensembles: bool,
    pub open: fn(&Path, &Path, Device) -> Result<Box<dyn Predictor>>,
}

impl PredictorEntry {
    pub fn of<C: PredictFamily>() -> Self {
        Self {
            kind: C::KIND,
            family: C::FAMILY,
            ensembles: C::ENSEMBLES,
            open: C::open_predictor,
        }
    }
}
