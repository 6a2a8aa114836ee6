//! `luminome-train dual`: from arguments (or a checkpoint to resume) to a dual encoder and its
//! task.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::Device;
use clap::Args;
use luminome_io::retrieval_pairs::{RetrievalPairs, Side};

use super::config::DualConfig;
use super::retrieval::RetrievalSet;
use super::task::DualTask;
use crate::backbones::EncoderArgs;
use crate::checkpoint::{load_into, read_safetensors, Checkpoint};
use crate::input::InputSpec;
use crate::models::mlm::MlmConfig;
use crate::models::{parameter_names, BuiltModel, ModelConfig};
use crate::train::{TrainArgs, TrainCommand, TrainDefaults, TrainingSetup};

pub const EXAMPLE: &str = "Example (queries = reads, passages = genome windows; docs/dual.md):
  luminome-tokenize train.pairs.tsv --format pairs -o train.pairs.safetensors
  luminome-tokenize dev.pairs.tsv --like train.pairs.safetensors --format pairs -o dev.pairs.safetensors
  luminome-train dual --train train.pairs.safetensors --dev dev.pairs.safetensors -o dual/ \\
      --d-model 128 --layers 2 --attention genetic --temperature 0.05 --steps 2000 --seed 1
Writes dual/best.safetensors (best dev MRR over the dev pairs' own passages),
dual/last.safetensors (+ state, for --resume) and dual/metrics.tsv (dev_loss is the in-batch
InfoNCE; dev_mrr … dev_hit_at_5 rank every distinct dev passage). Evaluate against a corpus with
luminome-predict --checkpoint dual/best.safetensors --dataset test.pairs.safetensors --corpus ...";

/// Dual encoder for retrieval: query and passage encoders (separate, or one shared), mean
/// pooling, L2 normalisation, InfoNCE on cosine similarities with in-batch negatives.
#[derive(Args, Debug)]
#[command(after_long_help = EXAMPLE)]
pub struct DualArgs {
    #[command(flatten)]
    pub train: TrainArgs,
    #[command(flatten)]
    pub encoder: EncoderArgs,
    /// One encoder for queries and passages (the default is two with separate weights, as the
    /// spec trains them).
    #[arg(long)]
    pub shared_encoder: bool,
    /// InfoNCE temperature τ (loss = cross-entropy of cos(q, p) / τ); must be > 0.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub temperature: f64,
    /// Initialise both encoders from a masked-LM checkpoint (its architecture and attention;
    /// --dropout still applies).
    #[arg(help_heading = "Inputs", long)]
    pub init: Option<PathBuf>,
}

/// Opens a pairs dataset for training and checks its token ids against the vocabulary.
pub fn open_pairs(path: &Path, what: &str) -> Result<RetrievalPairs> {
    let ds = RetrievalPairs::open(path).with_context(|| format!("cannot open the {what} pairs"))?;
    check_ids(&ds)?;
    Ok(ds)
}

/// Every id must be a token of the recorded vocabulary (an id past it has no embedding).
fn check_ids(ds: &RetrievalPairs) -> Result<()> {
    let vocab = ds.tokenizer().vocab_size() as u32;
    for side in [Side::Query, Side::Passage] {
        for records in crate::train::task::chunks(ds.len(), 4096) {
            let b = ds.batch(side, &records)?;
            if let Some(pos) = b.input_ids.iter().position(|&id| id >= vocab) {
                bail!(
                    "{}: pair {}: {} token id {} is outside the vocabulary of {vocab} tokens",
                    ds.path().display(),
                    records[pos / b.max_length.max(1)],
                    side.name(),
                    b.input_ids[pos]
                );
            }
        }
    }
    Ok(())
}

fn longest(ds: &RetrievalPairs) -> usize {
    ds.length(Side::Query).max(ds.length(Side::Passage))
}

impl DualArgs {
    fn check(&self) -> Result<()> {
        if !(self.temperature.is_finite() && self.temperature > 0.0 && self.temperature <= 100.0) {
            bail!(
                "--temperature must be a number in (0, 100], got {} (the logits are cos / τ)",
                self.temperature
            );
        }
        if self.init.is_some() && self.encoder.sizes_given() {
            bail!("--init takes the encoder's sizes from the checkpoint: leave out --d-model, --layers and --ffn");
        }
        Ok(())
    }

    /// A new model: sizes from the flags, or the architecture (and weights) of --init.
    fn new_model(&self, train: &RetrievalPairs, device: &Device) -> Result<BuiltModel> {
        let t = &self.train;
        let tok = train.tokenizer();
        let encoder = match &self.init {
            Some(init) => {
                let mc = MlmConfig::read_init(init, &t.train, tok)?;
                let Some(mut e) = mc.transformer().cloned() else {
                    bail!("{}: a masked-LM checkpoint of the nt-v2 encoder; the dual encoder is built on Luminome's transformer", init.display());
                };
                e.dropout = self
                    .encoder
                    .dropout(&crate::backbones::EncoderDefaults::STANDARD);
                e
            }
            None => self
                .encoder
                .config(tok.vocab_size(), tok.pad_id, longest(train))?,
        };
        let config = ModelConfig::from(DualConfig {
            encoder,
            shared: self.shared_encoder,
            temperature: self.temperature,
        });
        let b = BuiltModel::new(&config, device, t.seed)?;
        if let Some(init) = &self.init {
            let (_, tensors) = read_safetensors(init, device)?;
            let prefixes: &[&str] = if self.shared_encoder {
                &["encoder."]
            } else {
                &["query_encoder.", "passage_encoder."]
            };
            for prefix in prefixes {
                // The MLM checkpoint's encoder.* become this prefix's parameters.
                let renamed: HashMap<String, candle_core::Tensor> = tensors
                    .iter()
                    .filter_map(|(k, v)| {
                        k.strip_prefix("encoder.")
                            .map(|rest| (format!("{prefix}{rest}"), v.clone()))
                    })
                    .collect();
                load_into(&b.varmap, &renamed, init, Some(prefix))?;
            }
        }
        Ok(b)
    }
}

impl TrainCommand for DualArgs {
    const NAME: &'static str = "dual";
    const WHAT: &'static str = "dual encoder";

    fn train_args(&self) -> &TrainArgs {
        &self.train
    }

    fn setup(&self, device: &Device) -> Result<TrainingSetup> {
        self.check()?;
        let t = &self.train;
        let train = open_pairs(&t.train, "training")?;
        let dev = t.dev.as_deref().map(|p| open_pairs(p, "dev")).transpose()?;
        if let Some(d) = &dev {
            if !train.tokenizer().same_tokenization(d.tokenizer()) {
                bail!(
                    "{}: tokenized differently from the training pairs ({} vs {}); tokenize it with `luminome-tokenize --like {} --format pairs`",
                    d.path().display(),
                    d.tokenizer().describe(),
                    train.tokenizer().describe(),
                    t.train.display()
                );
            }
        }
        let (varmap, model, config) = match &t.resume {
            Some(r) => {
                let ck = Checkpoint::load(r, device)?;
                let model = ck.get::<DualConfig>()?.clone();
                ck.meta.check_tokenizer(r, &t.train, train.tokenizer())?;
                (ck.varmap, model, ck.meta.model)
            }
            None => {
                let b = self.new_model(&train, device)?;
                let model = b.get::<DualConfig>()?.clone();
                (b.varmap, model, b.config)
            }
        };
        let max_len = model.config.encoder.max_length;
        for (ds, what) in
            std::iter::once((&train, "training pairs")).chain(dev.iter().map(|d| (d, "dev pairs")))
        {
            if longest(ds) > max_len {
                bail!(
                    "{}: rows of {} tokens are longer than the model's max length {max_len} ({what}); tokenize with a smaller --max-length or give the model a larger --max-length",
                    ds.path().display(),
                    longest(ds)
                );
            }
        }
        let n: usize = varmap.all_vars().iter().map(|v| v.elem_count()).sum();
        let description = format!(
            "{n} parameters, {} encoder{}, {} attention, temperature {}, {} training pairs ({} distinct passages)",
            if model.config.shared { "one shared" } else { "two" },
            if model.config.shared { "" } else { "s" },
            model.config.encoder.attention.name(),
            model.config.temperature,
            train.len(),
            train.meta().distinct_passages
        );
        let input = InputSpec::Tokens(train.tokenizer().clone());
        let trainable = parameter_names(&varmap);
        let mut sources = t.sources();
        sources.extend(self.init.iter().map(|p| p.display().to_string()));
        let dev = dev.map(|d| {
            let set = RetrievalSet::from_pairs(&d);
            (d, set)
        });
        let task = DualTask {
            model,
            train,
            dev,
            device: device.clone(),
            eval_batch_size: t.eval_batch_size,
            in_batch_size: t.batch_size,
        };
        Ok(TrainingSetup {
            config,
            varmap,
            task: Box::new(task),
            trainable,
            input,
            sources,
            metric: if t.dev.is_some() {
                "dev_mrr".into()
            } else {
                String::new()
            },
            maximize: true,
            description,
            train_defaults: TrainDefaults::STANDARD,
        })
    }
}
