//! Arguments shared by the subcommands, and the checks both run before training.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use luminome_engine::config::{EncoderConfig, PositionEncoding};
use luminome_engine::optim::AdamWConfig;
use luminome_engine::trainer::TrainConfig;
use luminome_io::token_dataset::TokenDataset;

#[derive(Args, Debug, Clone)]
pub struct EncoderArgs {
    /// Hidden width of the encoder.
    #[arg(long, default_value_t = 128)]
    pub d_model: usize,
    /// Number of encoder layers.
    #[arg(long, default_value_t = 4)]
    pub layers: usize,
    /// Attention heads per layer (must divide --d-model).
    #[arg(long, default_value_t = 4)]
    pub heads: usize,
    /// Feed-forward width.
    #[arg(long, default_value_t = 512)]
    pub ffn: usize,
    /// Dropout probability (embeddings, attention probabilities, residual branches, FFN).
    #[arg(long, default_value_t = 0.1)]
    pub dropout: f64,
    /// Longest sequence (tokens, specials included) the model accepts [default: the training
    /// set's row length].
    #[arg(long)]
    pub max_length: Option<usize>,
    /// Position encoding: learned (absolute) or rotary.
    #[arg(long, default_value = "learned")]
    pub position: PositionEncoding,
}

impl EncoderArgs {
    pub fn config(&self, ds: &TokenDataset) -> Result<EncoderConfig> {
        let cfg = EncoderConfig {
            vocab_size: ds.tokenizer().vocab_size(),
            d_model: self.d_model,
            num_layers: self.layers,
            num_heads: self.heads,
            ffn_dim: self.ffn,
            dropout: self.dropout,
            max_length: self.max_length.unwrap_or(ds.max_length()),
            position: self.position,
            layer_norm_eps: 1e-5,
            pad_id: ds.tokenizer().pad_id,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

#[derive(Args, Debug, Clone)]
pub struct TrainArgs {
    /// Training token dataset (luminome-tokenize output).
    #[arg(long)]
    pub train: PathBuf,
    /// Dev token dataset: evaluated every --eval-every steps; selects the best checkpoint.
    #[arg(long)]
    pub dev: Option<PathBuf>,
    /// Output folder (created if missing): best.safetensors, last.safetensors (+ .config.json,
    /// last.state.safetensors for resuming) and metrics.tsv.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Examples per micro-batch.
    #[arg(long, default_value_t = 32)]
    pub batch_size: usize,
    /// Micro-batches per optimizer step (gradient accumulation).
    #[arg(long, default_value_t = 1)]
    pub grad_accum: usize,
    /// Optimizer steps.
    #[arg(long, default_value_t = 1000)]
    pub steps: u64,
    /// Peak learning rate.
    #[arg(long, default_value_t = 5e-4)]
    pub lr: f64,
    /// Linear warmup steps.
    #[arg(long, default_value_t = 100)]
    pub warmup: u64,
    /// Final learning rate of the cosine decay, as a fraction of the peak.
    #[arg(long, default_value_t = 0.1)]
    pub min_lr_ratio: f64,
    /// AdamW decoupled weight decay (matrices and embeddings only).
    #[arg(long, default_value_t = 0.01)]
    pub weight_decay: f64,
    /// Clip the global gradient norm to this value (0: no clipping).
    #[arg(long, default_value_t = 1.0)]
    pub clip_norm: f64,
    /// Evaluate on --dev and write checkpoints every this many steps.
    #[arg(long, default_value_t = 200)]
    pub eval_every: u64,
    /// Stop when the selection metric has not improved for this many evaluations.
    #[arg(long)]
    pub patience: Option<u64>,
    /// Batch size for evaluation.
    #[arg(long, default_value_t = 128)]
    pub eval_batch_size: usize,
    /// Random seed: weights, data order, dropout and masking (same seed, same numbers on CPU).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// cpu, cuda, cuda:N or metal (CUDA/Metal need a build with --features cuda / metal).
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Resume from a run's last.safetensors (its .state.safetensors beside it): continues the
    /// same run exactly, with the training settings stored in the state.
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Pause after this many optimizer steps with a resumable checkpoint (for time-limited
    /// jobs; continue with --resume).
    #[arg(long)]
    pub stop_after_steps: Option<u64>,
    /// Quiet: no progress lines on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

impl TrainArgs {
    pub fn train_config(&self, metric: &str, maximize: bool) -> TrainConfig {
        TrainConfig {
            batch_size: self.batch_size,
            grad_accum: self.grad_accum,
            max_steps: self.steps,
            lr: self.lr,
            warmup_steps: self.warmup,
            min_lr_ratio: self.min_lr_ratio,
            adamw: AdamWConfig {
                weight_decay: self.weight_decay,
                ..Default::default()
            },
            clip_norm: self.clip_norm,
            eval_every: self.eval_every,
            patience: self.patience,
            metric: metric.to_string(),
            maximize,
            seed: self.seed,
        }
    }
}

/// Opens a token dataset with a message that names it.
pub fn open_dataset(path: &Path, what: &str) -> Result<TokenDataset> {
    let ds = TokenDataset::open(path).with_context(|| format!("cannot open the {what} dataset"))?;
    if ds.is_empty() {
        bail!("{}: the {what} dataset has no records", path.display());
    }
    Ok(ds)
}

/// The dev set must use the training set's vocabulary.
pub fn check_same_vocab(train: &TokenDataset, other: &TokenDataset) -> Result<()> {
    if train.tokenizer().vocab != other.tokenizer().vocab
        || train.tokenizer().pad_id != other.tokenizer().pad_id
    {
        bail!(
            "{}: vocabulary differs from the training set's ({}); tokenize both with the same settings",
            other.path().display(),
            train.path().display()
        );
    }
    Ok(())
}

/// Rows longer than the model accepts are refused up front.
pub fn check_length(ds: &TokenDataset, max_length: usize, source: &str) -> Result<()> {
    if ds.max_length() > max_length {
        bail!(
            "{}: rows are {} tokens long, longer than the model's max length {max_length} ({source}); re-tokenize with a shorter window or train a model with a larger --max-length",
            ds.path().display(),
            ds.max_length()
        );
    }
    Ok(())
}

/// Creates the output folder (its parent must exist).
pub fn prepare_output(dir: &Path) -> Result<()> {
    if dir.is_file() {
        bail!("output {} is a file; -o names a folder", dir.display());
    }
    if !dir.exists() {
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !parent.is_dir() {
            bail!(
                "output folder {} does not exist (for output {}); create it first",
                parent.display(),
                dir.display()
            );
        }
        std::fs::create_dir(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    Ok(())
}

pub fn tool_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
