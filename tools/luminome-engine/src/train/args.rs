//! The training flags every `luminome-train` subcommand shares.

use std::path::PathBuf;

use clap::Args;
use luminome_cli::RuntimeArgs;

use super::optim::AdamWConfig;
use super::trainer::TrainConfig;

/// Training sets with fewer records than this get the small-data defaults (`classify` with the
/// transformer backbone; docs/small-data.md).
pub const SMALL_TRAINING_SET: usize = 10_000;

/// The defaults of the training settings that depend on the size of the training set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainDefaults {
    pub lr: f64,
    pub weight_decay: f64,
    pub patience: Option<u64>,
    pub loss_patience: Option<u64>,
    /// Optimizer steps when `--steps` is not given (None: [`DEFAULT_STEPS`]).
    pub steps: Option<u64>,
}

impl TrainDefaults {
    pub const STANDARD: Self = Self {
        lr: 5e-4,
        weight_decay: 0.01,
        patience: None,
        loss_patience: None,
        steps: None,
    };
    /// The transformer on a small training set.
    pub const SMALL_DATA: Self = Self {
        lr: 5e-4,
        weight_decay: 0.1,
        patience: Some(5),
        loss_patience: Some(5),
        steps: None,
    };
    /// A published foundation model fine-tuned whole (DNABERT-2's own recipe: learning rate
    /// 3e-5, weight decay 0.01; docs/pretrained-models.md).
    pub const FINE_TUNE: Self = Self {
        lr: 3e-5,
        weight_decay: 0.01,
        patience: None,
        loss_patience: None,
        steps: None,
    };
    /// A published foundation model kept frozen (`--freeze-encoder`): only the adapter trains,
    /// from scratch, at the rate a new head needs.
    pub const FROZEN_BACKBONE: Self = Self {
        lr: 1e-3,
        weight_decay: 0.01,
        patience: None,
        loss_patience: None,
        steps: None,
    };
    /// The CNN backbone, whatever the size (the recipe of docs/results.md): early stopping
    /// after 10 evaluations without a better dev metric.
    pub const CNN: Self = Self {
        lr: 1e-3,
        weight_decay: 0.01,
        patience: Some(10),
        loss_patience: None,
        steps: None,
    };

    /// These defaults with `--steps` defaulting to enough optimizer steps for `epochs` passes
    /// over `records` training records at `records_per_step` records a step, never fewer
    /// than [`DEFAULT_STEPS`] nor more than `max_steps` (the CNN, docs/small-data.md).
    pub fn with_epochs(
        self,
        epochs: u64,
        records: usize,
        records_per_step: usize,
        max_steps: u64,
    ) -> Self {
        let per_step = records_per_step.max(1) as u64;
        let steps = (epochs.saturating_mul(records as u64)).div_ceil(per_step);
        Self {
            steps: Some(steps.clamp(DEFAULT_STEPS, max_steps.max(DEFAULT_STEPS))),
            ..self
        }
    }
}

/// Optimizer steps of a run that gives no `--steps` (and whose training set calls for no
/// other number, [`TrainDefaults::steps`]).
pub const DEFAULT_STEPS: u64 = 1000;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Training")]
pub struct TrainArgs {
    /// Training dataset.
    #[arg(help_heading = "Inputs", long)]
    pub train: PathBuf,
    /// Dev dataset: evaluated every --eval-every steps; selects the best checkpoint.
    #[arg(help_heading = "Inputs", long)]
    pub dev: Option<PathBuf>,
    /// Output folder (created if missing): best.safetensors, last.safetensors (+ .config.json,
    /// last.state.safetensors for resuming) and metrics.tsv.
    #[arg(help_heading = "Outputs", short, long)]
    pub output: PathBuf,
    /// Examples per micro-batch.
    #[arg(long, default_value_t = 32)]
    pub batch_size: usize,
    /// Micro-batches per optimizer step (gradient accumulation).
    #[arg(long, default_value_t = 1)]
    pub grad_accum: usize,
    /// Optimizer steps [default: 1000; classify with the CNN: enough for 20 epochs, between
    /// 1,000 and 5,000].
    #[arg(long)]
    pub steps: Option<u64>,
    /// Peak learning rate [default: 5e-4; classify with the CNN backbone: 1e-3].
    #[arg(long)]
    pub lr: Option<f64>,
    /// Linear warmup steps.
    #[arg(long, default_value_t = 100)]
    pub warmup: u64,
    /// Final learning rate of the cosine decay, as a fraction of the peak.
    #[arg(long, default_value_t = 0.1)]
    pub min_lr_ratio: f64,
    /// AdamW decoupled weight decay (matrices and embeddings only) [default: 0.01; classify with
    /// the transformer: 0.1 below 10,000 training records].
    #[arg(long)]
    pub weight_decay: Option<f64>,
    /// Clip the global gradient norm to this value (0: no clipping).
    #[arg(long, default_value_t = 1.0)]
    pub clip_norm: f64,
    /// Evaluate on --dev and write checkpoints every this many steps.
    #[arg(long, default_value_t = 200)]
    pub eval_every: u64,
    /// Stop when the selection metric has not improved for this many evaluations (0: never)
    /// [default: never; classify: 10 with the CNN, 5 with the transformer below 10,000
    /// training records].
    #[arg(long)]
    pub patience: Option<u64>,
    /// Also stop when the dev loss has not improved for this many evaluations (0: never)
    /// [default: never; classify with the transformer: 5 below 10,000 training records].
    #[arg(long)]
    pub loss_patience: Option<u64>,
    /// Batch size for evaluation.
    #[arg(long, default_value_t = 128)]
    pub eval_batch_size: usize,
    /// Random seed: weights, data order, dropout and masking (same seed, same numbers on CPU).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Resume from a run's last.safetensors (its .state.safetensors beside it): continues the
    /// same run exactly, with the training settings stored in the state.
    #[arg(help_heading = "Inputs", long)]
    pub resume: Option<PathBuf>,
    /// Pause after this many optimizer steps with a resumable checkpoint (for time-limited
    /// jobs; continue with --resume).
    #[arg(long)]
    pub stop_after_steps: Option<u64>,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
}

impl TrainArgs {
    /// Checks every numeric flag's range before anything is read or written (a zero batch size
    /// or a NaN learning rate would otherwise fail deep in the loop, or train silently wrong).
    pub fn check(&self) -> anyhow::Result<()> {
        for (flag, v) in [
            ("--batch-size", self.batch_size as u64),
            ("--grad-accum", self.grad_accum as u64),
            ("--steps", self.steps.unwrap_or(DEFAULT_STEPS)),
            ("--eval-every", self.eval_every),
            ("--eval-batch-size", self.eval_batch_size as u64),
        ] {
            if v == 0 {
                anyhow::bail!("{flag} must be at least 1");
            }
        }
        if self.stop_after_steps == Some(0) {
            anyhow::bail!("--stop-after-steps must be at least 1");
        }
        if let Some(lr) = self.lr {
            if !(lr.is_finite() && lr > 0.0) {
                anyhow::bail!("--lr must be a positive number, got {lr}");
            }
        }
        if let Some(wd) = self.weight_decay {
            if !(wd.is_finite() && wd >= 0.0) {
                anyhow::bail!("--weight-decay must be a number ≥ 0, got {wd}");
            }
        }
        if !(self.clip_norm.is_finite() && self.clip_norm >= 0.0) {
            anyhow::bail!(
                "--clip-norm must be a number ≥ 0 (0: no clipping), got {}",
                self.clip_norm
            );
        }
        if !(0.0..=1.0).contains(&self.min_lr_ratio) {
            anyhow::bail!(
                "--min-lr-ratio must be in [0, 1], got {}",
                self.min_lr_ratio
            );
        }
        Ok(())
    }

    /// The loop's settings for a new run selecting checkpoints on `metric`; flags not given take
    /// `defaults`.
    pub fn train_config(
        &self,
        metric: &str,
        maximize: bool,
        defaults: &TrainDefaults,
    ) -> TrainConfig {
        let patience = |flag: Option<u64>, default: Option<u64>| match flag {
            Some(0) => None,
            Some(p) => Some(p),
            None => default,
        };
        TrainConfig {
            batch_size: self.batch_size,
            grad_accum: self.grad_accum,
            max_steps: self.steps.or(defaults.steps).unwrap_or(DEFAULT_STEPS),
            lr: self.lr.unwrap_or(defaults.lr),
            warmup_steps: self.warmup,
            min_lr_ratio: self.min_lr_ratio,
            adamw: AdamWConfig {
                weight_decay: self.weight_decay.unwrap_or(defaults.weight_decay),
                ..Default::default()
            },
            clip_norm: self.clip_norm,
            eval_every: self.eval_every,
            patience: patience(self.patience, defaults.patience),
            loss_patience: patience(self.loss_patience, defaults.loss_patience),
            metric: metric.to_string(),
            maximize,
            seed: self.seed,
        }
    }

    /// The flags, among those `defaults` sets, that the user did not give, with their values
    /// (for the log).
    pub fn defaulted(&self, defaults: &TrainDefaults) -> Vec<String> {
        let mut v = Vec::new();
        if self.lr.is_none() && defaults.lr != TrainDefaults::STANDARD.lr {
            v.push(format!("--lr {:e}", defaults.lr));
        }
        if self.weight_decay.is_none()
            && defaults.weight_decay != TrainDefaults::STANDARD.weight_decay
        {
            v.push(format!("--weight-decay {}", defaults.weight_decay));
        }
        // Early stopping watches --dev: without it the defaults change nothing.
        let dev = self.dev.is_some();
        if let (None, Some(p), true) = (self.patience, defaults.patience, dev) {
            v.push(format!("--patience {p}"));
        }
        if let (None, Some(p), true) = (self.loss_patience, defaults.loss_patience, dev) {
            v.push(format!("--loss-patience {p}"));
        }
        if let (None, Some(n)) = (self.steps, defaults.steps) {
            v.push(format!("--steps {n}"));
        }
        v
    }

    /// The input files a checkpoint names as its sources: training and dev sets.
    pub fn sources(&self) -> Vec<String> {
        let mut s = vec![self.train.display().to_string()];
        s.extend(self.dev.iter().map(|p| p.display().to_string()));
        s
    }
}
