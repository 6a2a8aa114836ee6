//! Classification of token sequences as a training task (cross-entropy; dev loss, accuracy,
//! AUROC, F1 and MCC), shared by every family whose model is a [`TokenClassifier`]; and the
//! class probabilities both training evaluation and `luminome-predict` report.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, Result};
use candle_core::{DType, Device, Tensor};
use luminome_io::token_dataset::{TokenBatch, TokenDataset};
use luminome_metrics::ClassificationMetrics;

use super::classifier::TokenClassifier;
use super::data::{dataset_classes, ClassificationData};
use crate::checkpoint::Checkpoint;
use crate::input::batch_tensors;
use crate::input::strand::ReverseComplement;
use crate::input::tokens::{check_length, real_length};
use crate::models::FamilyConfig;
use crate::nn::DropoutRng;
use crate::train::classification::{dev_metric_names, dev_metrics, score};
use crate::train::task::{chunks, TrainTask};
use crate::train::RunPaths;

/// Class probabilities of every record of a dataset, row-major `[N, C]`
/// (`luminome_metrics::softmax` of the logits).
pub fn predict_probs<M: TokenClassifier>(
    model: &M,
    ds: &TokenDataset,
    batch_size: usize,
    device: &Device,
) -> Result<Vec<f64>> {
    let mut probs = Vec::with_capacity(ds.len() * model.label_values().len());
    for records in chunks(ds.len(), batch_size) {
        let t = batch_tensors(&ds.batch(&records)?, device)?;
        let logits = model.logits(&t.ids, &t.mask, None)?;
        for row in logits.to_dtype(DType::F32)?.to_vec2::<f32>()? {
            probs.extend(luminome_metrics::softmax(&row));
        }
    }
    Ok(probs)
}

/// Reverse-complements each row of `batch` with probability ½; the coins come from `seed` (a
/// stream apart from dropout's, which the same seed drives).
fn flip_random_rows(rc: &ReverseComplement, batch: &mut TokenBatch, seed: u64, vocab: usize) {
    use rand::{Rng, SeedableRng};
    let mut coins = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x5256_434f_4d50_4c45);
    let complement = rc.complement_map(vocab);
    let l = batch.max_length;
    for r in 0..batch.batch {
        if coins.random::<bool>() {
            let len = real_length(&batch.attention_mask[r * l..(r + 1) * l]);
            rc.flip_ids(&mut batch.input_ids[r * l..(r + 1) * l], len, &complement);
        }
    }
}

/// A labelled dataset with its records' class indices.
pub struct LabelledSet {
    pub dataset: TokenDataset,
    pub classes: Vec<u32>,
}

impl LabelledSet {
    pub fn new(dataset: TokenDataset, label_values: &[i64]) -> Result<Self> {
        let classes = dataset_classes(&dataset, label_values)?;
        Ok(Self { dataset, classes })
    }

    /// Cross-entropy and the classification metrics of `model` on this set.
    fn score<M: TokenClassifier>(
        &self,
        model: &M,
        batch_size: usize,
        device: &Device,
    ) -> Result<(f64, ClassificationMetrics)> {
        let c = model.label_values().len();
        let probs = predict_probs(model, &self.dataset, batch_size, device)?;
        score(&probs, &self.classes, c).with_context(|| self.dataset.path().display().to_string())
    }
}

/// Training a [`TokenClassifier`] of family `C`: cross-entropy on the training set, metrics on
/// the dev set, and the best checkpoint scored on a test set at the end.
pub struct ClassifierTask<C: FamilyConfig>
where
    C::Model: TokenClassifier,
{
    pub model: C::Model,
    pub train: LabelledSet,
    pub dev: Option<LabelledSet>,
    pub test: Option<LabelledSet>,
    pub device: Device,
    pub eval_batch_size: usize,
    /// A baseline fitted after training and reported beside the model (the k-mer floor,
    /// kmer_floor.tsv); `None`: not fitted.
    pub baseline: Option<Box<dyn Baseline>>,
    /// Reverse-complement augmentation: each training row is read as its reverse complement
    /// with probability ½ (drawn from the step's seed).
    pub rc_augment: Option<ReverseComplement>,
}

impl<C: FamilyConfig> TrainTask for ClassifierTask<C>
where
    C::Model: TokenClassifier,
{
    fn train_len(&self) -> usize {
        self.train.dataset.len()
    }

    fn train_loss(&self, records: &[usize], seed: u64) -> Result<Tensor> {
        let mut batch = self.train.dataset.batch(records)?;
        if let Some(rc) = &self.rc_augment {
            flip_random_rows(
                rc,
                &mut batch,
                seed,
                self.train.dataset.tokenizer().vocab.len(),
            );
        }
        let t = batch_tensors(&batch, &self.device)?;
        let targets: Vec<u32> = records.iter().map(|&r| self.train.classes[r]).collect();
        let targets = Tensor::from_vec(targets, records.len(), &self.device)?;
        let rng = DropoutRng::new(seed);
        let logits = self.model.logits(&t.ids, &t.mask, Some(&rng))?;
        Ok(candle_nn::loss::cross_entropy(&logits, &targets)?)
    }

    fn metric_names(&self) -> Vec<String> {
        if self.dev.is_none() {
            return Vec::new();
        }
        dev_metric_names()
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        let Some(dev) = &self.dev else {
            return Ok(BTreeMap::new());
        };
        let (loss, m) = dev.score(&self.model, self.eval_batch_size, &self.device)?;
        Ok(dev_metrics(loss, &m))
    }

    /// Scores the run's best checkpoint on the test set (`test_metrics.tsv`) and fits the k-mer
    /// floor on the same sets (`kmer_floor.tsv`).
    fn after_training(&self, paths: &RunPaths, quiet: bool) -> Result<()> {
        let best = if paths.best().exists() {
            paths.best()
        } else {
            paths.last()
        };
        let ck = Checkpoint::load(&best, &self.device)?;
        let model = ck.get::<C>()?;
        let test_metrics = match &self.test {
            Some(test) => {
                let (_, m) = test.score(model, self.eval_batch_size, &self.device)?;
                let dest = paths.dir.join("test_metrics.tsv");
                let mut w = luminome_io::atomic::AtomicWriter::create(&dest)?;
                writeln!(w, "metric\tvalue")?;
                writeln!(w, "checkpoint_step\t{}", ck.meta.step)?;
                for (k, v) in m.rows() {
                    writeln!(w, "{k}\t{v}")?;
                }
                w.commit()?;
                if !quiet {
                    eprintln!(
                        "test ({} records, best checkpoint step {}): accuracy {:.4} auroc {} f1 {:.4} mcc {:.4}",
                        test.classes.len(),
                        ck.meta.step,
                        m.accuracy,
                        m.auroc.map(|v| format!("{v:.4}")).unwrap_or_else(|| "NA".into()),
                        m.f1,
                        m.mcc
                    );
                }
                Some(m)
            }
            None => None,
        };
        let model_dev = match &self.dev {
            Some(dev) => Some(dev.score(model, self.eval_batch_size, &self.device)?.1),
            None => None,
        };
        let (Some(baseline), Some(dev), Some(model_dev)) = (&self.baseline, &self.dev, &model_dev)
        else {
            return Ok(());
        };
        baseline.report(&BaselineRun {
            train: &self.train.dataset,
            dev: &dev.dataset,
            test: self.test.as_ref().map(|t| &t.dataset),
            label_values: self.model.label_values(),
            paths,
            model_dev,
            model_test: test_metrics.as_ref(),
            quiet,
        })
    }
}

/// What a [`Baseline`] is fitted on and reported beside: the run's sets, the model's metrics on
/// them, the run folder.
pub struct BaselineRun<'a> {
    pub train: &'a TokenDataset,
    pub dev: &'a TokenDataset,
    pub test: Option<&'a TokenDataset>,
    /// The model's classes (the baseline fits the same ones).
    pub label_values: &'a [i64],
    pub paths: &'a RunPaths,
    pub model_dev: &'a ClassificationMetrics,
    pub model_test: Option<&'a ClassificationMetrics>,
    pub quiet: bool,
}

/// A simpler model fitted on the same sets after training and reported beside the trained one
/// (the k-mer floor, `kmer_linear::KmerSearch`); the family's setup chooses it, so this folder
/// does not depend on the family that provides it.
pub trait Baseline: Send + Sync {
    fn report(&self, run: &BaselineRun) -> Result<()>;
}

impl ClassificationData {
    /// Checks every set against the model (row lengths, labels) and makes the task.
    pub fn into_task<C: FamilyConfig>(
        self,
        model: C::Model,
        device: &Device,
        eval_batch_size: usize,
        baseline: Option<Box<dyn Baseline>>,
    ) -> Result<ClassifierTask<C>>
    where
        C::Model: TokenClassifier,
    {
        let max = model.max_length();
        let values = model.label_values().to_vec();
        let set = |ds: TokenDataset, what: &str| -> Result<LabelledSet> {
            check_length(&ds, max, what)?;
            LabelledSet::new(ds, &values)
        };
        let train = set(self.train, "training set")?;
        let dev = self.dev.map(|d| set(d, "dev set")).transpose()?;
        let test = self.test.map(|d| set(d, "test set")).transpose()?;
        Ok(ClassifierTask {
            model,
            train,
            dev,
            test,
            device: device.clone(),
            eval_batch_size,
            baseline,
            rc_augment: None,
        })
    }
}
