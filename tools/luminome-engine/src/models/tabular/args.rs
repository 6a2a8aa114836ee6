//! The `luminome-train tabular` command line: the table's columns, the model, the split and
//! the training settings (tabular defaults: small tables, frequent evaluation).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use luminome_cli::RuntimeArgs;

use super::config::TabularArch;
use super::schema::SchemaOptions;
use crate::train::optim::AdamWConfig;
use crate::train::trainer::TrainConfig;

pub const EXAMPLE: &str = "Examples:
  # 5-fold cross-validation, 3 seeds' worth of runs are 3 commands with --seed 1, 2, 3
  luminome-train tabular --train samples.tsv --label status --id sample --folds 5 -o cv/
  # one model: validation rows held out of train.tsv, a test table scored at the end
  luminome-train tabular --train train.tsv --test test.tsv --label status --id sample \\
      --categorical group --threshold youden -o model/
Writes (per fold in cv/fold-<k>/ with --folds) best.safetensors (luminome-predict and
luminome-importance read it), metrics.tsv (the training log), test_predictions.tsv and
test_metrics.tsv; with --folds also cv/cv_metrics.tsv (each fold, then mean and sd) and
cv/cv_predictions.tsv (every row of the table, predicted by the model that did not see it).
Columns: numbers when every value parses as one (else categories; --categorical and --numeric
override); empty, NA, N/A, NaN, nan, null, NULL and . are missing values.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TabularModelKind {
    /// Feature-tokenizer transformer (one token per column, [CLS], the suite's encoder).
    FtTransformer,
    /// Multi-layer perceptron (the baseline).
    Mlp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClassWeights {
    /// Every row weighs the same.
    None,
    /// n / (classes × n_class): each class weighs the same in the loss.
    Balanced,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ThresholdRule {
    /// The most probable class.
    Argmax,
    /// Binary: the P(positive) cut that maximises sensitivity + specificity − 1 on the
    /// validation rows (stored in the checkpoint, used by luminome-predict).
    Youden,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Selection {
    /// Lowest validation cross-entropy (smooth on small validation sets).
    Loss,
    Mcc,
    Auroc,
}

/// Classifier of a feature table's rows (a transformer over the columns, or an MLP).
#[derive(Args, Debug)]
#[command(after_long_help = EXAMPLE)]
pub struct TabularArgs {
    /// Feature table (CSV, or TSV when named .tsv/.txt/.tab; gzip/zstd read), header first,
    /// one sample per row.
    #[arg(help_heading = "Inputs", long)]
    pub train: PathBuf,
    /// Validation table: early stopping, checkpoint selection and --threshold [default:
    /// --val-fraction of the training rows, stratified].
    #[arg(help_heading = "Inputs", long, conflicts_with = "folds")]
    pub dev: Option<PathBuf>,
    /// Test table, scored once with the best checkpoint.
    #[arg(help_heading = "Inputs", long, conflicts_with = "folds")]
    pub test: Option<PathBuf>,
    /// Stratified k-fold cross-validation of --train: fold k is scored by a model trained on the
    /// others (its validation rows held out of them).
    #[arg(long)]
    pub folds: Option<usize>,
    /// Fraction of the training rows held out for validation (without --dev).
    #[arg(long, default_value_t = 0.2)]
    pub val_fraction: f64,
    /// The label column.
    #[arg(long)]
    pub label: String,
    /// The sample id column (unique; rows are named row<N> without it).
    #[arg(long)]
    pub id: Option<String>,
    /// Classes in order, comma-separated (binary: the second is the positive class) [default:
    /// the label values, sorted]; a label outside them is an error.
    #[arg(long, value_delimiter = ',')]
    pub classes: Option<Vec<String>>,
    /// Columns read as categories even when their values are numbers (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub categorical: Vec<String>,
    /// Columns that must be numbers (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub numeric: Vec<String>,
    /// Columns left out (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// The model.
    #[arg(long, value_enum, default_value_t = TabularModelKind::FtTransformer)]
    pub model: TabularModelKind,
    /// Transformer width (one token per column).
    #[arg(long, default_value_t = 64)]
    pub d_model: usize,
    /// Transformer blocks, or MLP hidden layers [default: 3 and 2].
    #[arg(long)]
    pub layers: Option<usize>,
    /// Attention heads.
    #[arg(long, default_value_t = 4)]
    pub heads: usize,
    /// Transformer feed-forward width [default: 2 × d-model].
    #[arg(long)]
    pub ffn_dim: Option<usize>,
    /// MLP hidden width.
    #[arg(long, default_value_t = 128)]
    pub hidden: usize,
    /// MLP category embedding width.
    #[arg(long, default_value_t = 8)]
    pub category_dim: usize,
    /// Dropout.
    #[arg(long, default_value_t = 0.1)]
    pub dropout: f64,
    /// Transformer attention: standard, genetic (specs/genetic-attention-dual-encoder.md) or
    /// genetic-scaled (docs/dual.md).
    #[arg(long, default_value = "standard")]
    pub attention: crate::backbones::AttentionKind,
    /// Class weights of the loss.
    #[arg(long, value_enum, default_value_t = ClassWeights::None)]
    pub class_weights: ClassWeights,
    /// How a binary model calls a sample positive.
    #[arg(long, value_enum, default_value_t = ThresholdRule::Argmax)]
    pub threshold: ThresholdRule,
    /// The validation metric that selects the checkpoint and stops training.
    #[arg(long, value_enum, default_value_t = Selection::Loss)]
    pub select: Selection,
    /// Output folder (created if missing).
    #[arg(help_heading = "Outputs", short, long)]
    pub output: PathBuf,
    /// Rows per step.
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,
    /// Optimizer steps (at most; see --patience).
    #[arg(long, default_value_t = 1000)]
    pub steps: u64,
    /// Peak learning rate.
    #[arg(long, default_value_t = 1e-3)]
    pub lr: f64,
    /// Linear warmup steps.
    #[arg(long, default_value_t = 20)]
    pub warmup: u64,
    /// AdamW decoupled weight decay (matrices and embeddings).
    #[arg(long, default_value_t = 1e-4)]
    pub weight_decay: f64,
    /// Evaluate on the validation rows every this many steps.
    #[arg(long, default_value_t = 10)]
    pub eval_every: u64,
    /// Stop when the selection metric has not improved for this many evaluations (0: never).
    #[arg(long, default_value_t = 20)]
    pub patience: u64,
    /// Rows per evaluation batch.
    #[arg(long, default_value_t = 256)]
    pub eval_batch_size: usize,
    /// Random seed: folds, validation rows, weights, data order, dropout.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
}

impl TabularArgs {
    pub(super) fn check(&self) -> Result<()> {
        let positive = [
            ("--batch-size", self.batch_size as u64),
            ("--steps", self.steps),
            ("--eval-every", self.eval_every),
            ("--eval-batch-size", self.eval_batch_size as u64),
            ("--d-model", self.d_model as u64),
            ("--heads", self.heads as u64),
            ("--hidden", self.hidden as u64),
            ("--category-dim", self.category_dim as u64),
        ];
        for (flag, v) in positive {
            if v == 0 {
                bail!("{flag} must be at least 1");
            }
        }
        if self.layers == Some(0) || self.ffn_dim == Some(0) {
            bail!("--layers and --ffn-dim must be at least 1");
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            bail!("--lr must be a positive number, got {}", self.lr);
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            bail!("--weight-decay must be ≥ 0, got {}", self.weight_decay);
        }
        if !(0.0..1.0).contains(&self.dropout) {
            bail!("--dropout must be in [0, 1), got {}", self.dropout);
        }
        if !(self.val_fraction > 0.0 && self.val_fraction < 1.0) {
            bail!(
                "--val-fraction must be in (0, 1), got {}",
                self.val_fraction
            );
        }
        if let Some(k) = self.folds {
            if k < 2 {
                bail!("--folds must be at least 2, got {k}");
            }
        }
        Ok(())
    }

    pub(super) fn arch(&self) -> TabularArch {
        match self.model {
            TabularModelKind::FtTransformer => TabularArch::FtTransformer {
                d_model: self.d_model,
                num_layers: self.layers.unwrap_or(3),
                num_heads: self.heads,
                ffn_dim: self.ffn_dim.unwrap_or(2 * self.d_model),
                dropout: self.dropout,
                attention: self.attention,
            },
            TabularModelKind::Mlp => TabularArch::Mlp {
                hidden: self.hidden,
                num_layers: self.layers.unwrap_or(2),
                dropout: self.dropout,
                category_dim: self.category_dim,
            },
        }
    }

    pub(super) fn schema_options(&self) -> SchemaOptions {
        SchemaOptions {
            label: self.label.clone(),
            id: self.id.clone(),
            categorical: self.categorical.clone(),
            numeric: self.numeric.clone(),
            ignore: self.ignore.clone(),
            classes: self.classes.clone(),
        }
    }

    pub(super) fn train_config(&self) -> TrainConfig {
        let (metric, maximize) = match self.select {
            Selection::Loss => ("dev_loss", false),
            Selection::Mcc => ("dev_mcc", true),
            Selection::Auroc => ("dev_auroc", true),
        };
        TrainConfig {
            batch_size: self.batch_size,
            grad_accum: 1,
            max_steps: self.steps,
            lr: self.lr,
            warmup_steps: self.warmup,
            min_lr_ratio: 0.1,
            adamw: AdamWConfig {
                weight_decay: self.weight_decay,
                ..Default::default()
            },
            clip_norm: 1.0,
            eval_every: self.eval_every,
            patience: (self.patience > 0).then_some(self.patience),
            loss_patience: None,
            metric: metric.into(),
            maximize,
            seed: self.seed,
        }
    }
}
