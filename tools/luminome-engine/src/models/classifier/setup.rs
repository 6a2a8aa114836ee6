//! `luminome-train classify`: from arguments (or a checkpoint to resume) to a built sequence
//! classifier and its task; and the opening of labelled datasets that every token-classification
//! family shares ([`ClassificationData`]).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use candle_core::Device;
use clap::{Args, ValueEnum};
use luminome_io::token_dataset::TokenizerScheme;

use super::config::{AdapterKind, ClassifierConfig};

/// `--adapter` when none is given: gated-max (DynamicGated plus a max-pooled head). With the
/// default CNN it is above the k-mer floor on all four sets of docs/results.md, "Plain
/// defaults", where DynamicGated alone lost to the floor on a TF-binding set (mouse/0) and max
/// or mean pooling alone on the bundled core promoters.
pub const DEFAULT_ADAPTER: AdapterKind = AdapterKind::GatedMax;
use super::published::PublishedBackbone;
use crate::backbones::{BackboneConfig, BackboneKind, CnnArgs, EncoderArgs, EncoderDefaults};
use crate::checkpoint::{load_into, read_safetensors, Checkpoint};
use crate::input::strand::ReverseComplement;
use crate::input::InputSpec;
use crate::models::kmer_linear::KmerFloorArgs;
use crate::models::mlm::MlmConfig;
use crate::models::token::{Baseline, ClassificationArgs, ClassificationData};
use crate::models::{parameter_names, BuiltModel, ModelConfig};
use crate::train::{TrainArgs, TrainCommand, TrainDefaults, TrainingSetup, SMALL_TRAINING_SET};

/// Which strands a classifier learns from (`--strands`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Strands {
    /// Each row as given: for sequences with a direction (promoters cut around a TSS, splice
    /// sites, transcripts).
    Given,
    /// Both: reverse-complement augmentation in training and the mean of both strands' logits
    /// at prediction (`--rc-augment --rc-average`, the CNN): for sequences without one (ChIP or
    /// ATAC peaks, TF binding sites).
    Both,
}

/// Epochs the CNN trains for when `--steps` is not given (at least 1,000
/// steps, at most [`CNN_MAX_STEPS`]); with `--dev`, early stopping can end it sooner.
pub const CNN_EPOCHS: u64 = 20;
/// The most optimizer steps [`CNN_EPOCHS`] gives a large training set.
pub const CNN_MAX_STEPS: u64 = 5_000;

pub const EXAMPLE: &str = "Example (fine-tune the DynamicGated adapter on a pretrained encoder):
  luminome-train classify --train train.safetensors --dev dev.safetensors -o gated/ \\
      --adapter gated --init mlm/best.safetensors --steps 3000 --eval-every 250 --metric dev_mcc
Example (classify's default, a dilated CNN on single nucleotides; rows with a direction, such as
core promoters, on the given strand only):
  luminome-train classify --train train.safetensors --dev dev.safetensors -o cnn/ --strands given
Example (fine-tune the published DNABERT-2 under an adapter; data in its own tokenizer):
  luminome-tokenize train.csv -o train.safetensors \\
      --scheme hf --tokenizer hf:zhihan1996/DNABERT-2-117M
  luminome-train classify --train train.safetensors --dev dev.safetensors -o db2/ \\
      --init hf:zhihan1996/DNABERT-2-117M --adapter gated --batch-size 32 --steps 3000
  (the Nucleotide Transformer v2 the same way: hf:InstaDeepAI/nucleotide-transformer-v2-50m-multi-species)
Writes gated/best.safetensors (best dev MCC), gated/last.safetensors (+ state, for --resume) and
gated/metrics.tsv (step, epoch, loss, lr, grad_norm, examples_per_s, dev_loss, dev_accuracy,
dev_auroc, dev_f1, dev_mcc). Labels: the training set's label values are the classes (or --classes).";

/// Sequence classification: encoder + LinearCLS / LinearMeanPool / LinearMaxPool / DynamicGated /
/// gated-max adapter, from scratch or from an MLM checkpoint.
#[derive(Args, Debug)]
#[command(after_long_help = EXAMPLE)]
pub struct ClassifyArgs {
    #[command(flatten)]
    pub train: TrainArgs,
    /// Backbone: transformer (the --d-model … --position flags), cnn (a dilated residual CNN
    /// over single nucleotides, the --cnn-* flags; docs/engine.md), dnabert2 or nt-v2 (the
    /// published encoders, from --init DIR|hf:ORG/NAME; nt-v2 also from a `luminome-train mlm
    /// --backbone nt-v2` checkpoint, or from scratch at the --d-model … --ffn sizes; the
    /// checkpoint's family is the default when --init is one) [default: cnn with
    /// --rc-augment --rc-average for single-nucleotide datasets, at every size; transformer for
    /// k-mer or BPE tokens, with --init or a transformer size; docs/small-data.md].
    #[arg(long)]
    pub backbone: Option<BackboneKind>,
    #[command(flatten)]
    pub encoder: EncoderArgs,
    #[command(flatten)]
    pub cnn: CnnArgs,
    /// Strands the model learns from: given (each row as it is: sequences with a direction,
    /// such as promoters cut around a TSS or splice sites) or both (--rc-augment --rc-average:
    /// sequences without one, such as ChIP or ATAC peaks). Default: both for classify's default
    /// CNN on single-nucleotide data, given otherwise (docs/engine.md, "Both strands"; on GUE
    /// core promoters the given strand is worth +0.03 test MCC, on TF binding both strands are
    /// worth more).
    #[arg(long, value_enum, conflicts_with_all = ["rc_augment", "rc_average"])]
    pub strands: Option<Strands>,
    /// Reverse-complement augmentation: each training row is read as its reverse complement
    /// with probability 1/2 (single-nucleotide datasets).
    #[arg(long)]
    pub rc_augment: bool,
    /// Predict with the mean of the logits of each sequence and of its reverse complement
    /// (evaluation, luminome-predict and luminome-importance; --backbone cnn). Stored in the
    /// checkpoint; implies --rc-augment.
    #[arg(long)]
    pub rc_average: bool,
    /// Adapter: cls (LinearCLS), mean (LinearMeanPool), max (LinearMaxPool), gated
    /// (DynamicGated) or gated-max (DynamicGated plus a max-pooled head). Default: gated-max, the
    /// one above the k-mer floor on every set measured (promoters and TF binding; docs/engine.md,
    /// "Which adapter"); resuming, the checkpoint's.
    #[arg(long, value_name = "ADAPTER")]
    pub adapter: Option<AdapterKind>,
    /// Initialise the encoder from a masked-LM checkpoint (its encoder — Luminome's transformer or
    /// nt-v2 — and its settings are used), or
    /// from a published DNABERT-2 or Nucleotide Transformer v2 checkpoint: a folder in the
    /// Hugging Face layout or hf:ORG/NAME (the data tokenized with its tokenizer: --scheme hf
    /// --tokenizer DIR).
    #[arg(help_heading = "Inputs", long)]
    pub init: Option<PathBuf>,
    /// Train the adapter only; the encoder stays as initialised.
    #[arg(long)]
    pub freeze_encoder: bool,
    #[command(flatten)]
    pub classification: ClassificationArgs,
    #[command(flatten)]
    pub floor: KmerFloorArgs,
}

impl TrainCommand for ClassifyArgs {
    const NAME: &'static str = "classify";
    const WHAT: &'static str = "classifier";

    fn train_args(&self) -> &TrainArgs {
        &self.train
    }

    fn setup(&self, device: &Device) -> Result<TrainingSetup> {
        let t = &self.train;
        let maximize = self.classification.maximize()?;
        let data = ClassificationData::open(
            &t.train,
            t.dev.as_deref(),
            self.classification.test.as_deref(),
            Self::NAME,
        )?;
        let choice = self.choose(&data)?;
        let (varmap, mut model, config) = match &t.resume {
            Some(r) => {
                let ck = Checkpoint::load(r, device)?;
                let model = ck.get::<ClassifierConfig>()?.clone();
                ck.meta
                    .check_tokenizer(r, &t.train, data.train.tokenizer())?;
                if let Some(a) = self.adapter.filter(|&a| a != model.config.adapter) {
                    bail!(
                        "--adapter {} differs from the resumed checkpoint's adapter {}",
                        a.name(),
                        model.config.adapter.name()
                    );
                }
                let both = model.config.rc_average.is_some();
                if self
                    .backbone
                    .is_some_and(|b| b != model.config.backbone.kind())
                    || (self.rc_average && !both)
                    || self.strands.is_some_and(|s| (s == Strands::Both) != both)
                {
                    bail!(
                        "{}: --backbone, --strands and --rc-average must be those of the resumed run (its strands: {})",
                        r.display(),
                        if both { "both" } else { "given" }
                    );
                }
                (ck.varmap, model, ck.meta.model)
            }
            None => self.new_model(&data, device, &choice)?,
        };
        model.frozen_backbone = self.freeze_encoder;
        let freeze = self.freeze_encoder;
        let trainable: Vec<String> = parameter_names(&varmap)
            .into_iter()
            .filter(|n| !freeze || n.starts_with("adapter."))
            .collect();
        let n: usize = varmap.all_vars().iter().map(|v| v.elem_count()).sum();
        let mut description = format!(
            "adapter {}, {n} parameters{}, {} training records, classes {:?}",
            model.config.adapter.name(),
            if freeze { " (encoder frozen)" } else { "" },
            data.train.len(),
            model.config.label_values
        );
        if let Some(note) = &choice.note {
            description.push('\n');
            description.push_str(note);
        }
        let input = InputSpec::Tokens(data.train.tokenizer().clone());
        let floor = self.floor.search(&self.classification)?;
        let baseline = floor.map(|s| Box::new(s) as Box<dyn Baseline>);
        // Averaging both strands at prediction implies training on both (also when resuming).
        let rc_augment = match self.rc_augment || model.config.rc_average.is_some() {
            true => Some(self.reverse_complement(&data)?),
            false => None,
        };
        let mut task =
            data.into_task::<ClassifierConfig>(model, device, t.eval_batch_size, baseline)?;
        task.rc_augment = rc_augment;
        let mut sources = t.sources();
        sources.extend(self.init.iter().map(|p| p.display().to_string()));
        Ok(TrainingSetup {
            config,
            varmap,
            task: Box::new(task),
            trainable,
            input,
            sources,
            metric: if t.dev.is_some() {
                self.classification.metric.clone()
            } else {
                String::new()
            },
            maximize,
            description,
            train_defaults: choice.train,
        })
    }
}

/// What a new classify run builds once the size-dependent defaults are applied.
struct SizeChoice {
    backbone: BackboneKind,
    rc_average: bool,
    encoder: EncoderDefaults,
    train: TrainDefaults,
    /// What the log says about a small training set.
    note: Option<String>,
}

impl ClassifyArgs {
    /// A new classifier: classes from the data, the encoder from --init (an MLM checkpoint,
    /// whose encoder weights are loaded) or from the encoder flags.
    fn new_model(
        &self,
        data: &ClassificationData,
        device: &Device,
        choice: &SizeChoice,
    ) -> Result<(candle_nn::VarMap, super::Classifier, ModelConfig)> {
        let defaults = &choice.encoder;
        let t = &self.train;
        let label_values = data.label_values(self.classification.classes.as_deref())?;
        let tok = data.train.tokenizer();
        let rc_average = match choice.rc_average {
            true => Some(self.reverse_complement(data)?),
            false => None,
        };
        let mut published = None;
        let backbone = match choice.backbone {
            BackboneKind::NtV2 if self.init.is_none() => {
                let mut c = self
                    .encoder
                    .nt_v2_config(tok.vocab_size(), data.train.max_length())?;
                c.hidden_dropout_prob = self.encoder.dropout(defaults);
                BackboneConfig::NtV2(c)
            }
            BackboneKind::NtV2 if self.init_is_mlm() => self.pretrained_nt_v2(data, defaults)?,
            kind @ (BackboneKind::Dnabert2 | BackboneKind::NtV2) => {
                let p = self.published_backbone(data, kind)?;
                let backbone = p.backbone.clone();
                published = Some(p);
                backbone
            }
            BackboneKind::Transformer => {
                BackboneConfig::Transformer(self.encoder_config(data, defaults)?)
            }
            BackboneKind::Cnn => {
                if self.encoder.sizes_given() {
                    bail!("--d-model, --layers and --ffn size a transformer; the CNN takes --cnn-channels, --cnn-layers, --cnn-kernel and --cnn-first-kernel");
                }
                if let Some(init) = &self.init {
                    bail!(
                        "{}: --init loads a pretrained transformer encoder; --backbone cnn trains from scratch",
                        init.display()
                    );
                }
                BackboneConfig::Cnn(self.cnn.config(
                    tok.vocab_size(),
                    tok.pad_id,
                    self.encoder.max_length.unwrap_or(data.train.max_length()),
                    self.encoder.dropout(defaults),
                )?)
            }
        };
        if rc_average.is_some() && choice.backbone != BackboneKind::Cnn {
            bail!("--strands both and --rc-average need --backbone cnn (its input is one-hot bases, whose reverse complement is a permutation); --rc-augment works with either backbone");
        }
        let adapter = self.adapter.unwrap_or(DEFAULT_ADAPTER);
        let gate_score_scale = adapter
            .has_gates()
            .then(|| 1.0 / (backbone.hidden_size() as f64).sqrt());
        let config = ModelConfig::from(ClassifierConfig {
            backbone,
            adapter,
            gate_score_scale,
            num_classes: label_values.len(),
            label_values,
            rc_average,
        });
        let b = BuiltModel::new(&config, device, t.seed)?;
        if let Some(p) = &published {
            p.load(&b.varmap, device)?;
        } else if let Some(init) = &self.init {
            let (_, tensors) = read_safetensors(init, device)?;
            let prefix = format!("{}.", b.get::<ClassifierConfig>()?.config.backbone.prefix());
            load_into(&b.varmap, &tensors, init, Some(&prefix))?;
        }
        let model = b.get::<ClassifierConfig>()?.clone();
        Ok((b.varmap, model, b.config))
    }

    /// Whether `--init` is a checkpoint file of this suite (a masked-LM run's), not a published
    /// folder or `hf:` name.
    fn init_is_mlm(&self) -> bool {
        self.init
            .as_deref()
            .is_some_and(|p| !crate::models::caduceus::is_published_checkpoint(p))
    }

    /// The masked-LM checkpoint of `--init`: its config (the data must be tokenized as its
    /// training data was) and the family of its encoder.
    fn mlm_init(&self, data: &ClassificationData) -> Result<MlmConfig> {
        let init = self.init.as_deref().expect("--init");
        MlmConfig::read_init(init, &self.train.train, data.train.tokenizer())
    }

    /// A Nucleotide Transformer v2 encoder pretrained here (`luminome-train mlm --backbone
    /// nt-v2`): its sizes are the checkpoint's, `--dropout` (or the default) its hidden dropout.
    fn pretrained_nt_v2(
        &self,
        data: &ClassificationData,
        defaults: &EncoderDefaults,
    ) -> Result<BackboneConfig> {
        let init = self.init.as_deref().expect("--init");
        if self.encoder.sizes_given() {
            bail!("{}: --d-model, --layers and --ffn size a new encoder; a pretrained one keeps its checkpoint's sizes", init.display());
        }
        let BackboneConfig::NtV2(mut c) = self.mlm_init(data)?.backbone else {
            bail!(
                "{}: a masked-LM checkpoint of Luminome's transformer, but --backbone says nt-v2",
                init.display()
            );
        };
        c.hidden_dropout_prob = self.encoder.dropout(defaults);
        c.validate()
            .with_context(|| format!("--dropout {}", c.hidden_dropout_prob))?;
        Ok(BackboneConfig::NtV2(c))
    }

    /// The published encoder of `--init` (DNABERT-2 or the Nucleotide Transformer v2, as
    /// `kind` says; its sizes are the checkpoint's; `--dropout`, when given, replaces its hidden
    /// dropout).
    fn published_backbone(
        &self,
        data: &ClassificationData,
        kind: BackboneKind,
    ) -> Result<PublishedBackbone> {
        let Some(init) = &self.init else {
            bail!("--backbone {} is a published encoder: give its checkpoint with --init DIR or --init hf:ORG/NAME", kind.name());
        };
        if self.encoder.sizes_given() {
            bail!("{}: --d-model, --layers and --ffn size Luminome's transformer; a published encoder's sizes are its config.json's", init.display());
        }
        PublishedBackbone::open_as(init, kind, &data.train, self.encoder.dropout)
    }

    /// The backbone and the defaults of a new run: the flags given, then what the tokens and the
    /// size of the training set call for (docs/small-data.md).
    fn choose(&self, data: &ClassificationData) -> Result<SizeChoice> {
        let new_run = self.train.resume.is_none();
        let records = data.train.len();
        let small = new_run && records < SMALL_TRAINING_SET;
        let nucleotides = data.train.tokenizer().scheme == TokenizerScheme::Nucleotide;
        // The CNN recipe of docs/results.md at every size; transformer sizes given on the
        // command line, or a pretrained encoder, ask for a transformer.
        let auto_cnn = new_run
            && self.backbone.is_none()
            && self.init.is_none()
            && !self.encoder.sizes_given()
            && nucleotides;
        let published = self
            .init
            .as_deref()
            .is_some_and(crate::models::caduceus::is_published_checkpoint);
        let backbone = match (self.backbone, auto_cnn) {
            (Some(b), _) => b,
            (None, _) if published && new_run => {
                super::published::kind_of(self.init.as_deref().expect("published"))?
            }
            (None, _) if self.init.is_some() && new_run => self.mlm_init(data)?.backbone.kind(),
            (None, true) => BackboneKind::Cnn,
            (None, false) => BackboneKind::Transformer,
        };
        let from_scratch = self.init.is_none();
        let (encoder, train) = match (backbone, small) {
            (BackboneKind::NtV2, true) if from_scratch => {
                (EncoderDefaults::STANDARD, TrainDefaults::SMALL_DATA)
            }
            (BackboneKind::NtV2, false) if from_scratch => {
                (EncoderDefaults::STANDARD, TrainDefaults::STANDARD)
            }
            (BackboneKind::Dnabert2 | BackboneKind::NtV2, _) if self.freeze_encoder => {
                (EncoderDefaults::STANDARD, TrainDefaults::FROZEN_BACKBONE)
            }
            (BackboneKind::Dnabert2 | BackboneKind::NtV2, _) => {
                (EncoderDefaults::STANDARD, TrainDefaults::FINE_TUNE)
            }
            // Enough passes for a small set to converge (about 20 epochs on GUE mouse/0, where 5
            // stay below the k-mer floor), bounded for a large one; early stopping on dev ends
            // a run that has clearly peaked (docs/small-data.md).
            (BackboneKind::Cnn, _) => (
                EncoderDefaults::STANDARD,
                TrainDefaults::CNN.with_epochs(
                    CNN_EPOCHS,
                    records,
                    // Saturating: a huge --batch-size must not overflow before it is refused.
                    self.train.batch_size.saturating_mul(self.train.grad_accum),
                    CNN_MAX_STEPS,
                ),
            ),
            (BackboneKind::Transformer, true) => {
                (EncoderDefaults::SMALL_DATA, TrainDefaults::SMALL_DATA)
            }
            (BackboneKind::Transformer, false) => {
                (EncoderDefaults::STANDARD, TrainDefaults::STANDARD)
            }
        };
        let note = match backbone {
            BackboneKind::Cnn if new_run => self.cnn_note(auto_cnn, records, &train),
            BackboneKind::Transformer if small => {
                Some(self.small_transformer_note(records, &encoder, &train))
            }
            _ => None,
        };
        Ok(SizeChoice {
            backbone,
            rc_average: match self.strands {
                Some(strands) => strands == Strands::Both,
                None => auto_cnn || self.rc_average,
            },
            encoder,
            train,
            note,
        })
    }

    /// The log line naming the CNN defaults a new run took (None when every flag was given).
    fn cnn_note(&self, auto_cnn: bool, records: usize, train: &TrainDefaults) -> Option<String> {
        let mut set = Vec::new();
        match (auto_cnn, self.strands) {
            (true, None) => set.push("--backbone cnn --rc-augment --rc-average".to_string()),
            (true, Some(_)) => set.push("--backbone cnn".to_string()),
            (false, _) => {}
        }
        set.extend(self.train.defaulted(train));
        let hint = match (auto_cnn, self.strands) {
            (true, None) => "give --strands given for rows with a direction, such as promoters; --backbone transformer for a transformer",
            (true, Some(_)) => "give --backbone transformer for a transformer",
            (false, _) => "give a flag to override it",
        };
        (!set.is_empty()).then(|| {
            format!(
                "classifier defaults for {records} training records: {} ({hint}; docs/small-data.md)",
                set.join(" ")
            )
        })
    }

    /// The log line naming the small-data defaults a transformer on a small set took.
    fn small_transformer_note(
        &self,
        records: usize,
        encoder: &EncoderDefaults,
        train: &TrainDefaults,
    ) -> String {
        // A pretrained encoder keeps its size.
        let mut set: Vec<String> = self
            .encoder
            .defaulted(encoder)
            .into_iter()
            .filter(|f| self.init.is_none() || f.starts_with("--dropout"))
            .collect();
        set.extend(self.train.defaulted(train));
        let what = match set.is_empty() {
            true => "small-data defaults all overridden".to_string(),
            false => format!(
                "small-data defaults {} (give a flag to override it)",
                set.join(" ")
            ),
        };
        format!(
            "small training set ({records} records, fewer than {SMALL_TRAINING_SET}): {what} (docs/small-data.md)"
        )
    }

    /// The reverse complement of the training set's tokens (single nucleotides only).
    fn reverse_complement(&self, data: &ClassificationData) -> Result<ReverseComplement> {
        ReverseComplement::for_tokenizer(data.train.tokenizer()).with_context(|| {
            format!(
                "{}: --rc-augment / --rc-average",
                data.train.path().display()
            )
        })
    }

    /// The transformer encoder: from --init (an MLM checkpoint) or from the encoder flags.
    fn encoder_config(
        &self,
        data: &ClassificationData,
        defaults: &EncoderDefaults,
    ) -> Result<crate::backbones::EncoderConfig> {
        let tok = data.train.tokenizer();
        Ok(match &self.init {
            Some(init) => {
                let Some(mut e) = self.mlm_init(data)?.transformer().cloned() else {
                    bail!("{}: a masked-LM checkpoint of the nt-v2 encoder, but --backbone says transformer", init.display());
                };
                e.dropout = self.encoder.dropout(defaults);
                e
            }
            None => self.encoder.config_with(
                defaults,
                tok.vocab_size(),
                tok.pad_id,
                data.train.max_length(),
            )?,
        })
    }
}
