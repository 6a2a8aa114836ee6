//! `luminome-train kmer-linear`: k-mer frequency features, L2 logistic regression, the penalty
//! (and with --select-k the upper k) chosen on dev. Not a gradient-step run: a full-batch L-BFGS
//! fit per grid point, so it has its own run instead of the step trainer's.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::{Device, Tensor};
use clap::Args;
use luminome_cli::RuntimeArgs;

use super::config::KmerLinearConfig;
use super::features::KmerLayout;
use super::select::{dataset_bases, fit_and_select, probabilities, KmerFit, KmerSearch};
use crate::checkpoint::{save_checkpoint, CheckpointMeta};
use crate::input::tokens::check_length;
use crate::input::InputSpec;
use crate::models::token::{dataset_classes, ClassificationArgs, ClassificationData};
use crate::models::{BuiltModel, ModelConfig};
use crate::train::classification::score;

pub const EXAMPLE: &str = "Example (the k-mer floor of a classification task):
  luminome-train kmer-linear --train train.safetensors --dev dev.safetensors --test test.safetensors \\
      -o kmer/ --k 1-6 --select-k
Writes kmer/best.safetensors (the chosen model; luminome-predict and luminome-importance read it),
kmer/metrics.tsv (one line per k_max x l2 tried, with the dev metrics) and kmer/test_metrics.tsv.";

/// A k range on the command line: `K` or `KMIN-KMAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KRange(pub usize, pub usize);

impl std::str::FromStr for KRange {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        let parse = |v: &str| -> Result<usize> {
            v.trim()
                .parse()
                .with_context(|| format!("--k {s:?}: expected K or KMIN-KMAX, e.g. 1-6"))
        };
        let r = match s.split_once('-') {
            Some((a, b)) => KRange(parse(a)?, parse(b)?),
            None => {
                let k = parse(s)?;
                KRange(k, k)
            }
        };
        super::config::check_k_range(r.0, r.1).with_context(|| format!("--k {s}"))?;
        Ok(r)
    }
}

/// k-mer linear classifier: k-mer frequencies of each sequence, L2 logistic regression, the
/// penalty chosen on dev. The floor a deep classifier has to beat.
#[derive(Args, Debug)]
#[command(after_long_help = EXAMPLE)]
pub struct KmerLinearArgs {
    /// Training dataset (nucleotide or k-mer tokens, with labels).
    #[arg(help_heading = "Inputs", long)]
    pub train: PathBuf,
    /// Dev dataset: chooses the L2 penalty (and the upper k with --select-k).
    #[arg(help_heading = "Inputs", long)]
    pub dev: PathBuf,
    /// Output folder (created if missing): best.safetensors, metrics.tsv, test_metrics.tsv.
    #[arg(help_heading = "Outputs", short, long)]
    pub output: PathBuf,
    /// k-mer lengths counted, K or KMIN-KMAX (1 <= k <= 8).
    #[arg(long, default_value = "1-6")]
    pub k: KRange,
    /// Also choose the upper k on dev (KMIN..=KMAX tried).
    #[arg(long)]
    pub select_k: bool,
    /// L2 penalties tried, comma-separated, strongest first [default: 10, 3, 1, 0.3, ..., 1e-4:
    /// half-decades; a k's path stops after 3 penalties in a row that do not improve on dev].
    #[arg(long, value_delimiter = ',')]
    pub l2: Option<Vec<f64>>,
    /// L-BFGS iterations per penalty at most.
    #[arg(long, default_value_t = 500)]
    pub max_iter: usize,
    /// Stop when the largest gradient entry is below this.
    #[arg(long, default_value_t = 1e-5)]
    pub tol: f64,
    #[command(flatten)]
    pub classification: ClassificationArgs,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
}

impl KmerLinearArgs {
    fn search(&self) -> Result<KmerSearch> {
        let s = KmerSearch {
            k_min: self.k.0,
            k_max: self.k.1,
            select_k: self.select_k,
            l2: self
                .l2
                .clone()
                .unwrap_or_else(|| super::select::DEFAULT_L2_GRID.to_vec()),
            metric: self.classification.metric.clone(),
            maximize: self.classification.maximize()?,
            max_iter: self.max_iter,
            tol: self.tol,
        };
        s.check()?;
        Ok(s)
    }
}

/// Runs `luminome-train kmer-linear`.
pub fn run(args: &KmerLinearArgs, command_line: &str) -> Result<()> {
    args.runtime.apply_threads();
    if args.runtime.device != "cpu" {
        bail!(
            "--device {}: the k-mer linear model is fitted on the CPU",
            args.runtime.device
        );
    }
    let search = args.search()?;
    // Refused before the fit: its files must not replace an input.
    let mut sources = vec![
        args.train.display().to_string(),
        args.dev.display().to_string(),
    ];
    sources.extend(
        args.classification
            .test
            .iter()
            .map(|p| p.display().to_string()),
    );
    crate::train::command::check_run_outputs(&args.output, &["test_metrics.tsv"], &sources)?;
    let data = ClassificationData::open(
        &args.train,
        Some(&args.dev),
        args.classification.test.as_deref(),
        "kmer-linear",
    )?;
    let label_values = data.label_values(args.classification.classes.as_deref())?;
    let quiet = args.runtime.quiet;
    let dev = data.dev.as_ref().expect("dev is required");
    let fit = KmerFloor::new(&data.train, dev, &label_values, &search, |p| {
        if !quiet {
            eprintln!(
                "k {}-{} l2 {:e}: {} iterations, dev {} {:.4}",
                search.k_min, p.k_max, p.l2, p.iterations, search.metric, p.dev[&search.metric]
            );
        }
    })?;
    luminome_cli::prepare_output_dir(&args.output)?;
    let tool = "luminome-train kmer-linear";
    write_checkpoint(
        &fit.fit,
        &args.output.join("best.safetensors"),
        &data.train,
        sources,
        tool,
        command_line,
    )?;
    write_grid(&fit.fit, &args.output.join("metrics.tsv"))?;
    let chosen = &fit.fit.grid[fit.fit.chosen];
    if !quiet {
        eprintln!(
            "{tool}: chose k {}-{}, l2 {:e} ({} {:.4} on dev)",
            fit.fit.config.k_min,
            chosen.k_max,
            chosen.l2,
            search.metric,
            chosen.dev[&search.metric]
        );
    }
    if let Some(test) = &data.test {
        let m = fit.score(test)?;
        let mut w =
            luminome_io::atomic::AtomicWriter::create(args.output.join("test_metrics.tsv"))?;
        writeln!(w, "metric\tvalue")?;
        for (k, v) in m.rows() {
            writeln!(w, "{k}\t{v}")?;
        }
        w.commit()?;
        if !quiet {
            eprintln!(
                "test ({} records): accuracy {:.4} mcc {:.4}",
                test.len(),
                m.accuracy,
                m.mcc
            );
        }
    }
    Ok(())
}

/// The k-mer floor of a deep classifier run: fitted after training on the same training and dev
/// sets and reported beside the model's metrics (kmer_floor.tsv), so a user sees at once when
/// the deep model loses to it.
#[derive(Args, Debug, Clone)]
pub struct KmerFloorArgs {
    /// k range of the k-mer floor fitted after training (the upper k chosen on dev, from KMIN
    /// up), K or KMIN-KMAX.
    #[arg(long, default_value = "1-6")]
    pub floor_k: KRange,
    /// Do not fit the k-mer floor.
    #[arg(long)]
    pub no_kmer_floor: bool,
}

impl KmerFloorArgs {
    /// The floor's search, selecting on the run's dev metric; `None` when switched off.
    pub fn search(&self, classification: &ClassificationArgs) -> Result<Option<KmerSearch>> {
        if self.no_kmer_floor {
            return Ok(None);
        }
        let s = KmerSearch {
            k_min: self.floor_k.0,
            k_max: self.floor_k.1,
            select_k: true,
            l2: super::select::DEFAULT_L2_GRID.to_vec(),
            metric: classification.metric.clone(),
            maximize: classification.maximize()?,
            max_iter: 500,
            tol: 1e-5,
        };
        s.check()?;
        Ok(Some(s))
    }
}

/// A fitted k-mer floor and what it needs to score other datasets.
pub struct KmerFloor {
    pub fit: KmerFit,
    pub label_values: Vec<i64>,
}

impl KmerFloor {
    /// Fits on `train`, chooses on `dev` (both labelled, nucleotide or k-mer tokens).
    pub fn new(
        train: &luminome_io::token_dataset::TokenDataset,
        dev: &luminome_io::token_dataset::TokenDataset,
        label_values: &[i64],
        search: &KmerSearch,
        progress: impl FnMut(&super::select::GridPoint),
    ) -> Result<Self> {
        let train_classes = dataset_classes(train, label_values)?;
        let dev_classes = dataset_classes(dev, label_values)?;
        let mut seen = vec![false; label_values.len()];
        for &c in &train_classes {
            seen[c as usize] = true;
        }
        if let Some(missing) = seen.iter().position(|s| !s) {
            bail!(
                "{}: class {} (label value {}) has no training records; every class needs examples to learn from",
                train.path().display(),
                missing,
                label_values[missing]
            );
        }
        check_length(dev, train.max_length(), "dev set")?;
        let template = KmerLinearConfig {
            k_min: search.k_min,
            k_max: search.k_max,
            scale: Vec::new(),
            l2: 0.0,
            tokenizer: train.tokenizer().clone(),
            max_length: train.max_length(),
            num_classes: label_values.len(),
            label_values: label_values.to_vec(),
        };
        let train_bases = dataset_bases(train)?;
        let dev_bases = dataset_bases(dev)?;
        let fit = fit_and_select(
            search,
            (&train_bases, &train_classes),
            (&dev_bases, &dev_classes),
            template,
            progress,
        )?;
        Ok(Self {
            fit,
            label_values: label_values.to_vec(),
        })
    }

    /// Metrics of the chosen model on a labelled dataset.
    pub fn score(
        &self,
        ds: &luminome_io::token_dataset::TokenDataset,
    ) -> Result<luminome_metrics::ClassificationMetrics> {
        let classes = dataset_classes(ds, &self.label_values)?;
        let bases = dataset_bases(ds)?;
        let layout: KmerLayout = self.fit.config.layout();
        let rows = super::select::KmerRows::new(&layout, &bases, &self.fit.config.scale, classes);
        let probs = probabilities(&rows.rows, &self.fit.weights, layout.len());
        let (_, m) = score(&probs, &rows.classes, self.label_values.len())
            .with_context(|| ds.path().display().to_string())?;
        Ok(m)
    }
}

/// Writes the chosen model as a checkpoint (weights `[features, classes]` and bias, f32).
pub(crate) fn write_checkpoint(
    fit: &KmerFit,
    dest: &Path,
    train: &luminome_io::token_dataset::TokenDataset,
    sources: Vec<String>,
    tool: &str,
    command_line: &str,
) -> Result<()> {
    let config = ModelConfig::from(fit.config.clone());
    let built = BuiltModel::new(&config, &Device::Cpu, 0)?;
    let c = fit.config.num_classes;
    let f = fit.config.layout().len();
    let weight: Vec<f32> = fit.weights.weight.iter().map(|&v| v as f32).collect();
    let bias: Vec<f32> = fit.weights.bias.iter().map(|&v| v as f32).collect();
    {
        let data = built.varmap.data().lock().expect("var map lock");
        data["weight"].set(&Tensor::from_vec(weight, (f, c), &Device::Cpu)?)?;
        data["bias"].set(&Tensor::from_vec(bias, c, &Device::Cpu)?)?;
    }
    let mut meta = CheckpointMeta::new(
        config,
        InputSpec::Tokens(train.tokenizer().clone()),
        sources,
        tool,
        command_line,
    );
    meta.metrics = fit.grid[fit.chosen].dev.clone();
    save_checkpoint(dest, &meta, &built.varmap)
}

/// metrics.tsv: one line per grid point.
fn write_grid(fit: &KmerFit, dest: &Path) -> Result<()> {
    let mut w = luminome_io::atomic::AtomicWriter::create(dest)?;
    writeln!(
        w,
        "k_min\tk_max\tl2\titerations\ttrain_objective\tdev_loss\tdev_accuracy\tdev_auroc\tdev_f1\tdev_mcc\tchosen"
    )?;
    for (i, p) in fit.grid.iter().enumerate() {
        write!(
            w,
            "{}\t{}\t{:e}\t{}\t{:.6}",
            fit.config.k_min, p.k_max, p.l2, p.iterations, p.train_objective
        )?;
        for m in ["dev_loss", "dev_accuracy", "dev_auroc", "dev_f1", "dev_mcc"] {
            write!(w, "\t{:.6}", p.dev[m])?;
        }
        writeln!(w, "\t{}", u8::from(i == fit.chosen))?;
    }
    w.commit()?;
    Ok(())
}
