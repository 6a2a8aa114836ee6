//! Classification of token sequences as a training task (cross-entropy; dev loss, accuracy,
//! AUROC, F1 and MCC), shared by every family whose model is a [`TokenClassifier`]; and the
//! class probabilities both training evaluation and `luminome-predict` report.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{bail, Context, Result};
use candle_core::{DType, Device, Tensor};
use luminome_io::token_dataset::{TokenBatch, TokenDataset};
use luminome_metrics::ClassificationMetrics;

use super::token_classifier::TokenClassifier;
use crate::checkpoint::Checkpoint;
use crate::input::batch_tensors;
use crate::input::strand::ReverseComplement;
use crate::input::tokens::real_length;
use crate::models::kmer_linear::{KmerFloor, KmerSearch};
use crate::models::FamilyConfig;
use crate::nn::DropoutRng;
use crate::train::task::{chunks, TrainTask};
use crate::train::RunPaths;

/// Class index of each label (position in `label_values`); an error names the first label
/// that is not a declared class.
pub fn class_indices(
    labels: &[i64],
    label_values: &[i64],
) -> std::result::Result<Vec<u32>, (usize, i64)> {
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            label_values
                .iter()
                .position(|v| v == l)
                .map(|p| p as u32)
                .ok_or((i, *l))
        })
        .collect()
}

/// Checks a labelled dataset against the classifier's classes; returns class indices.
pub fn dataset_classes(ds: &TokenDataset, label_values: &[i64]) -> Result<Vec<u32>> {
    if !ds.has_labels() {
        bail!(
            "{}: the dataset has no labels; tokenize the table with its label column",
            ds.path().display()
        );
    }
    let all: Vec<usize> = (0..ds.len()).collect();
    let labels = ds.batch(&all)?.labels.unwrap_or_default();
    class_indices(&labels, label_values).map_err(|(i, l)| {
        anyhow::anyhow!(
            "{}: record {}: label {l} is not one of the declared classes {:?}",
            ds.path().display(),
            i + 1,
            label_values
        )
    })
}

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
        crate::models::kmer_linear::select::score(&probs, &self.classes, c)
            .with_context(|| self.dataset.path().display().to_string())
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
    /// The k-mer floor fitted after training and reported beside the model (kmer_floor.tsv);
    /// `None`: not fitted.
    pub floor: Option<KmerSearch>,
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
        crate::models::kmer_linear::select::dev_metric_names()
    }

    fn evaluate(&self) -> Result<BTreeMap<String, f64>> {
        let Some(dev) = &self.dev else {
            return Ok(BTreeMap::new());
        };
        let (loss, m) = dev.score(&self.model, self.eval_batch_size, &self.device)?;
        let mut out = BTreeMap::new();
        out.insert("dev_loss".into(), loss);
        out.insert("dev_accuracy".into(), m.accuracy);
        out.insert("dev_auroc".into(), m.auroc.unwrap_or(f64::NAN));
        out.insert("dev_f1".into(), m.f1);
        out.insert("dev_mcc".into(), m.mcc);
        Ok(out)
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
        self.report_floor(paths, model_dev.as_ref(), test_metrics.as_ref(), quiet)
    }
}

impl<C: FamilyConfig> ClassifierTask<C>
where
    C::Model: TokenClassifier,
{
    /// Fits the k-mer floor on the training set (chosen on dev) and writes `kmer_floor.tsv`
    /// (metric, set, model, kmer_floor) beside the model's own dev and test metrics; says so on
    /// stderr when the model does worse than the floor. Skipped without a dev set or for
    /// tokens that do not stand for fixed bases (BPE).
    fn report_floor(
        &self,
        paths: &RunPaths,
        model_dev: Option<&ClassificationMetrics>,
        model_test: Option<&ClassificationMetrics>,
        quiet: bool,
    ) -> Result<()> {
        let (Some(search), Some(dev), Some(model_dev)) = (&self.floor, &self.dev, model_dev) else {
            return Ok(());
        };
        let train = &self.train.dataset;
        if !train.tokenizer().scheme.has_base_spans() {
            if !quiet {
                eprintln!(
                    "k-mer floor: skipped ({} tokens do not stand for fixed bases)",
                    train.tokenizer().scheme
                );
            }
            return Ok(());
        }
        let floor = KmerFloor::new(
            train,
            &dev.dataset,
            self.model.label_values(),
            search,
            |_| {},
        )
        .context("fitting the k-mer floor (--no-kmer-floor skips it)")?;
        // Saved as a checkpoint luminome-predict takes, alone or as an ensemble member: the
        // documented seeds-plus-floor ensemble fits it once (the other seeds: --no-kmer-floor).
        let mut sources = vec![train.path().display().to_string()];
        sources.push(dev.dataset.path().display().to_string());
        crate::models::kmer_linear::setup::write_checkpoint(
            &floor.fit,
            &paths.dir.join("kmer_floor.safetensors"),
            train,
            sources,
            "luminome-train classify (k-mer floor)",
            &luminome_cli::command_line(),
        )?;
        let floor_dev = floor.score(&dev.dataset)?;
        let floor_test = match &self.test {
            Some(t) => Some(floor.score(&t.dataset)?),
            None => None,
        };
        let dest = paths.dir.join("kmer_floor.tsv");
        let mut w = luminome_io::atomic::AtomicWriter::create(&dest)?;
        writeln!(w, "metric\tset\tmodel\tkmer_floor")?;
        let mut lines = |set: &str, m: &ClassificationMetrics, f: &ClassificationMetrics| {
            let fm: BTreeMap<String, String> = f.rows().into_iter().collect();
            for (k, v) in m.rows() {
                if let Some(fv) = fm.get(&k) {
                    writeln!(w, "{k}\t{set}\t{v}\t{fv}")?;
                }
            }
            std::io::Result::Ok(())
        };
        lines("dev", model_dev, &floor_dev)?;
        if let (Some(m), Some(f)) = (model_test, &floor_test) {
            lines("test", m, f)?;
        }
        let cfg = &floor.fit.config;
        writeln!(w, "floor_k\tall\t\t{}-{}", cfg.k_min, cfg.k_max)?;
        writeln!(w, "floor_l2\tall\t\t{:e}", cfg.l2)?;
        w.commit()?;
        let verdict = if model_dev.mcc < floor_dev.mcc {
            "the model does WORSE than the k-mer floor on dev"
        } else {
            "the model beats the k-mer floor on dev"
        };
        if !quiet || model_dev.mcc < floor_dev.mcc {
            eprintln!(
                "k-mer floor (k {}-{}, l2 {:e}): dev mcc {:.4} vs this model's {:.4}{}: {verdict}",
                cfg.k_min,
                cfg.k_max,
                cfg.l2,
                floor_dev.mcc,
                model_dev.mcc,
                match (&floor_test, model_test) {
                    (Some(f), Some(m)) => format!("; test mcc {:.4} vs {:.4}", f.mcc, m.mcc),
                    _ => String::new(),
                }
            );
        }
        Ok(())
    }
}
