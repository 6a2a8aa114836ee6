//! `luminome-train mlm`: masked-LM pretraining of the encoder, from arguments to a built model
//! and its task.

use anyhow::{bail, Result};
use candle_core::Device;
use clap::Args;
use luminome_io::masking::MaskingConfig;

use super::config::MlmConfig;
use super::task::MlmTask;
use crate::backbones::{BackboneConfig, BackboneKind, EncoderArgs};
use crate::checkpoint::Checkpoint;
use crate::input::tokens::{check_length, check_same_vocab, open_dataset};
use crate::input::InputSpec;
use crate::models::{parameter_names, BuiltModel, ModelConfig};
use crate::train::{TrainArgs, TrainCommand, TrainingSetup};

pub const EXAMPLE: &str = "Example (pretrain a small encoder on tokenized promoters):
  luminome-tokenize table train.csv -o train.safetensors
  luminome-train mlm --train train.safetensors --dev dev.safetensors -o mlm/ \\
      --d-model 128 --layers 4 --heads 4 --ffn 512 --steps 2000 --eval-every 200 --seed 1
Writes mlm/best.safetensors (lowest dev loss; use it with `classify --init`), mlm/last.safetensors
(+ last.state.safetensors: resume with --resume mlm/last.safetensors) and mlm/metrics.tsv
(step, epoch, loss, lr, grad_norm, examples_per_s, dev_loss, dev_accuracy).
The Nucleotide Transformer v2 architecture (published names; data in its 6-mer vocabulary, e.g.
`luminome-tokenize --scheme hf --tokenizer NT_FOLDER`): add --backbone nt-v2
(docs/pretrained-models.md).";

/// Masked-LM pretraining of a transformer encoder — Luminome's, or the Nucleotide Transformer v2
/// architecture (BERT: 15 % of tokens; 80 % [MASK], 10 % random, 10 % unchanged).
#[derive(Args, Debug)]
#[command(after_long_help = EXAMPLE)]
pub struct MlmArgs {
    #[command(flatten)]
    pub train: TrainArgs,
    /// Encoder: transformer (Luminome's; the --d-model … --position flags) or nt-v2 (the
    /// Nucleotide Transformer v2 architecture: pre-LN, rotary positions, SwiGLU, the published
    /// parameter names; --d-model, --layers, --heads, --ffn, --dropout size it;
    /// docs/pretrained-models.md) [default: transformer].
    #[arg(long, help_heading = "Model")]
    pub backbone: Option<BackboneKind>,
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

impl TrainCommand for MlmArgs {
    const NAME: &'static str = "mlm";
    const WHAT: &'static str = "masked-LM";

    fn train_args(&self) -> &TrainArgs {
        &self.train
    }

    fn setup(&self, device: &Device) -> Result<TrainingSetup> {
        let t = &self.train;
        if !(0.0..=1.0).contains(&self.mask_prob) || self.mask_prob == 0.0 {
            bail!("--mask-prob must be in (0, 1], got {}", self.mask_prob);
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
        if self.soft_mask_weight != 1.0 && !train.has_soft_mask() {
            bail!(
                "{}: --soft-mask-weight needs a dataset with a soft mask (tokenize with soft-mask output)",
                train.path().display()
            );
        }
        let (varmap, model, config) = match &t.resume {
            Some(r) => {
                let ck = Checkpoint::load(r, device)?;
                let model = ck.get::<MlmConfig>()?.clone();
                let kind = model.config.backbone.kind();
                if self.backbone.is_some_and(|b| b != kind) {
                    bail!(
                        "{}: a run of --backbone {}; --backbone must be the resumed run's",
                        r.display(),
                        kind.name()
                    );
                }
                ck.meta.check_tokenizer(r, &t.train, train.tokenizer())?;
                (ck.varmap, model, ck.meta.model)
            }
            None => {
                let tok = train.tokenizer();
                let (vocab, rows) = (tok.vocab_size(), train.max_length());
                let backbone = match self.backbone.unwrap_or(BackboneKind::Transformer) {
                    BackboneKind::Transformer => {
                        BackboneConfig::Transformer(self.encoder.config(vocab, tok.pad_id, rows)?)
                    }
                    BackboneKind::NtV2 => {
                        BackboneConfig::NtV2(self.encoder.nt_v2_config(vocab, rows)?)
                    }
                    other => bail!(
                        "--backbone {}: masked-LM pretraining builds a transformer or nt-v2 encoder",
                        other.name()
                    ),
                };
                let config = ModelConfig::from(MlmConfig { backbone });
                let b = BuiltModel::new(&config, device, t.seed)?;
                let model = b.get::<MlmConfig>()?.clone();
                (b.varmap, model, b.config)
            }
        };
        let max_len = model.config.backbone.max_length();
        check_length(&train, max_len, "training set")?;
        if let Some(d) = &dev {
            check_length(d, max_len, "dev set")?;
        }
        let n: usize = varmap.all_vars().iter().map(|v| v.elem_count()).sum();
        let description = format!("{n} parameters, {} training records", train.len());
        let input = InputSpec::Tokens(train.tokenizer().clone());
        let trainable = parameter_names(&varmap);
        let task = MlmTask {
            model,
            train,
            dev,
            masking: MaskingConfig {
                select_prob: self.mask_prob,
                soft_mask_weight: self.soft_mask_weight,
                ..Default::default()
            },
            device: device.clone(),
            eval_batch_size: t.eval_batch_size,
            eval_records: self.eval_records,
        };
        Ok(TrainingSetup {
            config,
            varmap,
            task: Box::new(task),
            trainable,
            input,
            sources: t.sources(),
            metric: "dev_loss".into(),
            maximize: false,
            description,
            train_defaults: crate::train::TrainDefaults::STANDARD,
        })
    }
}
