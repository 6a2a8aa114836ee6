//! `luminome-train mlm`: masked-LM pretraining of the encoder.

use anyhow::{Context, Result};
use clap::Args;
use luminome_engine::checkpoint::CheckpointMeta;
use luminome_engine::mlm::MaskingConfig;
use luminome_engine::model::{BuiltModel, Model};
use luminome_engine::tasks::MlmTask;
use luminome_engine::trainer::{RunPaths, Trainer};
use luminome_engine::{parse_device, Checkpoint, MlmConfig, ModelConfig};

use crate::args::{
    check_length, check_same_vocab, open_dataset, prepare_output, tool_version, EncoderArgs,
    TrainArgs,
};

pub const EXAMPLE: &str = "Example (pretrain a small encoder on tokenized promoters):
  luminome-tokenize table train.csv -o train.safetensors
  luminome-train mlm --train train.safetensors --dev dev.safetensors -o mlm/ \\
      --d-model 128 --layers 4 --heads 4 --ffn 512 --steps 2000 --eval-every 200 --seed 1
Writes mlm/best.safetensors (lowest dev loss; use it with `classify --init`), mlm/last.safetensors
(+ last.state.safetensors: resume with --resume mlm/last.safetensors) and mlm/metrics.tsv
(step, epoch, loss, lr, grad_norm, examples_per_s, dev_loss, dev_accuracy).";

#[derive(Args, Debug)]
pub struct MlmArgs {
    #[command(flatten)]
    pub train: TrainArgs,
    #[command(flatten)]
    pub encoder: EncoderArgs,
    /// Fraction of real tokens chosen for prediction.
    #[arg(long, default_value_t = 0.15)]
    pub mask_prob: f64,
    /// Loss weight of chosen positions whose base was soft-masked (lowercase), e.g. 0.1; needs
    /// a dataset tokenized with its soft mask.
    #[arg(long, default_value_t = 1.0)]
    pub soft_mask_weight: f32,
    /// Dev records scored per evaluation (the first ones).
    #[arg(long, default_value_t = 2048)]
    pub eval_records: usize,
}

pub fn run(a: MlmArgs, command_line: &str) -> Result<()> {
    crate::set_threads(a.train.threads);
    let t = &a.train;
    let device = parse_device(&t.device)?;
    if !(0.0..=1.0).contains(&a.mask_prob) || a.mask_prob == 0.0 {
        anyhow::bail!("--mask-prob must be in (0, 1], got {}", a.mask_prob);
    }
    let train = open_dataset(&t.train, "training")?;
    let dev = t
        .dev
        .as_deref()
        .map(|p| open_dataset(p, "dev"))
        .transpose()?;
    if let Some(d) = &dev {
        check_same_vocab(&train, d)?;
    }
    if a.soft_mask_weight != 1.0 && !train.has_soft_mask() {
        anyhow::bail!(
            "{}: --soft-mask-weight needs a dataset with a soft mask (tokenize with soft-mask output)",
            train.path().display()
        );
    }
    let (varmap, model, config) = match &t.resume {
        Some(r) => {
            let ck = Checkpoint::load(r, &device)?;
            ck.mlm()?;
            ck.meta.check_tokenizer(r, &t.train, train.tokenizer())?;
            (ck.varmap, ck.model, ck.meta.model)
        }
        None => {
            let config = ModelConfig::Mlm(MlmConfig {
                encoder: a.encoder.config(&train)?,
            });
            let b = BuiltModel::new(&config, &device, t.seed)?;
            (b.varmap, b.model, b.config)
        }
    };
    let Model::Mlm(model) = &model else {
        unreachable!("checked above")
    };
    let max_len = config.encoder().max_length;
    check_length(&train, max_len, "training set")?;
    if let Some(d) = &dev {
        check_length(d, max_len, "dev set")?;
    }
    prepare_output(&t.output)?;
    let task = MlmTask {
        model,
        train: &train,
        dev: dev.as_ref(),
        masking: MaskingConfig {
            select_prob: a.mask_prob,
            soft_mask_weight: a.soft_mask_weight,
            ..Default::default()
        },
        device: device.clone(),
        eval_batch_size: t.eval_batch_size,
        eval_records: a.eval_records,
    };
    let mut trainable: Vec<String> = varmap
        .data()
        .lock()
        .expect("var map lock")
        .keys()
        .cloned()
        .collect();
    trainable.sort();
    let mut sources = vec![t.train.display().to_string()];
    sources.extend(t.dev.iter().map(|p| p.display().to_string()));
    let meta = CheckpointMeta {
        kind: luminome_engine::checkpoint::CHECKPOINT_KIND.into(),
        format_version: luminome_engine::checkpoint::CHECKPOINT_VERSION,
        model: config.clone(),
        tokenizer: train.tokenizer().clone(),
        step: 0,
        metrics: Default::default(),
        sources,
        tool: "luminome-train mlm".into(),
        tool_version: tool_version(),
        command_line: command_line.into(),
    };
    let resume_cfg = match &t.resume {
        Some(r) => Some(crate::classify::stored_train_config(r)?),
        None => None,
    };
    let trainer = Trainer {
        config: resume_cfg.unwrap_or_else(|| t.train_config("dev_loss", false)),
        varmap: &varmap,
        trainable,
        meta,
        paths: RunPaths {
            dir: t.output.clone(),
        },
        stop_after: t.stop_after_steps,
        verbose: !t.quiet,
    };
    if !t.quiet {
        let n: usize = varmap.all_vars().iter().map(|v| v.elem_count()).sum();
        eprintln!(
            "luminome-train mlm: {n} parameters, {} training records",
            train.len()
        );
    }
    let s = trainer
        .run(&task, t.resume.as_deref())
        .context("masked-LM training failed")?;
    if !t.quiet {
        eprintln!(
            "done: {} steps in {:.1} s; best step {} ({:?}){}",
            s.steps,
            s.seconds,
            s.best_step,
            s.best_value,
            if s.paused {
                "; paused, continue with --resume"
            } else {
                ""
            }
        );
    }
    Ok(())
}
