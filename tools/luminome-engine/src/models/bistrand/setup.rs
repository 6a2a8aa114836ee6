//! `luminome-train bistrand`: from arguments (or a checkpoint to resume) to a built bi-strand
//! masked LM and its task.

use std::path::Path;

use anyhow::{bail, Context, Result};
use candle_core::Device;
use clap::Args;
use luminome_io::masking::PairMasking;
use luminome_io::pair_dataset::{MaskMode, PairDataset, Pairing};

use super::config::{BiStrandConfig, PublishedEncoder};
use super::task::BiStrandTask;
use crate::checkpoint::Checkpoint;
use crate::input::InputSpec;
use crate::models::caduceus::weights::Weights;
use crate::models::caduceus::Caduceus;
use crate::models::{parameter_names, BuiltModel, ModelConfig};
use crate::train::{TrainArgs, TrainCommand, TrainingSetup};

pub const EXAMPLE: &str = "Example (E. coli windows with their complementary strands):
  luminome-mask-pairs --fasta ecoli.fa.gz --window 512 -o ecoli_pairs.safetensors
  luminome-mask-pairs --fasta ecoli_heldout.fa --window 512 -o heldout_pairs.safetensors
  luminome-train bistrand --train ecoli_pairs.safetensors --dev heldout_pairs.safetensors -o bistrand/ \\
      --d-model 128 --layers 2 --steps 2000 --batch-size 16 --dynamic-masking
Writes bistrand/best.safetensors (lowest dev loss), last.safetensors (+ state, for --resume) and
metrics.tsv (..., dev_loss, dev_accuracy_a, dev_accuracy_b, dev_perplexity_a, dev_perplexity_b).
Score variants with luminome-predict on a luminome-mask-pairs --variants dataset.";

/// Bi-strand cross-attention masked LM: per-strand embedding, short convolution and
/// bidirectional selective state-space layers, cross-attention A↔B, fusion, per-strand LM heads
/// over A/C/G/T; loss L_a + L_b on the positions masked on both strands.
#[derive(Args, Debug)]
#[command(after_long_help = EXAMPLE)]
pub struct BiStrandArgs {
    #[command(flatten)]
    pub train: TrainArgs,
    /// Hidden width of each strand.
    #[arg(long, default_value_t = 128)]
    pub d_model: usize,
    /// Bidirectional state-space layers per strand.
    #[arg(long, default_value_t = 2)]
    pub layers: usize,
    /// State size N of the selective scan.
    #[arg(long, default_value_t = 16)]
    pub d_state: usize,
    /// Inner channels per layer, as a multiple of --d-model.
    #[arg(long, default_value_t = 2)]
    pub expand: usize,
    /// Taps of the causal depthwise convolution.
    #[arg(long, default_value_t = 4)]
    pub d_conv: usize,
    /// Rank of the Δ projection [default: ceil(d_model / 16)].
    #[arg(long)]
    pub dt_rank: Option<usize>,
    /// Cross-attention heads (must divide --d-model).
    #[arg(long, default_value_t = 4)]
    pub cross_heads: usize,
    /// No cross-attention: the strands are modelled independently (to measure its value).
    #[arg(long)]
    pub no_cross_attention: bool,
    /// One set of weights for both strands.
    #[arg(long)]
    pub tie_strands: bool,
    /// Dropout on embeddings and residual branches.
    #[arg(long, default_value_t = 0.0)]
    pub dropout: f64,
    /// Longest row the model accepts [default: the training rows' length].
    #[arg(long)]
    pub max_length: Option<usize>,
    /// Draw new masked positions for every training batch (same fraction and replacement as the
    /// dataset's) instead of the dataset's fixed ones.
    #[arg(long)]
    pub dynamic_masking: bool,
    /// Dev records scored per evaluation (the first ones).
    #[arg(long, default_value_t = 2048)]
    pub eval_records: usize,
    /// Each strand's encoder from a published Caduceus/PlantCaduceus checkpoint (its folder or
    /// hf:ORG/NAME): its embedding and blocks replace the spec's own embedding → Conv → SSM
    /// stack (--d-model, --layers and the SSM sizes are then the checkpoint's); cross-attention,
    /// fusion and heads are trained on top. The datasets must be in its vocabulary
    /// (luminome-mask-pairs --like CHECKPOINT).
    #[arg(long, value_name = "CHECKPOINT")]
    pub encoder: Option<String>,
    /// With --encoder: keep the published encoder's weights as they are (only cross-attention,
    /// fusion and heads train) [default: fine-tune it too].
    #[arg(long, requires = "encoder")]
    pub freeze_encoder: bool,
}

impl BiStrandArgs {
    /// A new model whose strand encoders start from the published checkpoint `--encoder`.
    fn start_from_published(
        &self,
        tok: &luminome_io::token_dataset::TokenizerInfo,
        train: &PairDataset,
        device: &Device,
    ) -> Result<(candle_nn::VarMap, super::BiStrandModel, ModelConfig)> {
        let arg = self.encoder.as_deref().context("internal: no --encoder")?;
        let published = Caduceus::open(arg, device)?;
        if !tok.same_tokenization(&published.tokenizer) {
            bail!(
                "{}: its ids are in another vocabulary ({}) than the encoder's ({}; {arg}); build the pairs with luminome-mask-pairs --like {arg}",
                train.path().display(),
                tok.describe(),
                published.tokenizer.describe()
            );
        }
        let cad = published.model.config().clone();
        let config = ModelConfig::from(BiStrandConfig {
            vocab_size: cad.padded_vocab(),
            d_model: cad.d_model,
            num_layers: cad.n_layer,
            d_state: cad.ssm().d_state,
            expand: cad.ssm().expand,
            d_conv: cad.ssm().d_conv,
            dt_rank: cad.dt_rank(),
            cross_heads: self.cross_heads,
            cross_attention: !self.no_cross_attention,
            tie_strands: self.tie_strands,
            max_length: self.max_length.unwrap_or(train.length()),
            dropout: self.dropout,
            layer_norm_eps: 1e-5,
            encoder: Some(PublishedEncoder {
                source: arg.to_string(),
                caduceus: cad,
                frozen: self.freeze_encoder,
            }),
        });
        let b = BuiltModel::new(&config, device, self.train.seed)?;
        // The encoders' parameters are the published tensors, under each strand's prefix.
        let weights = Weights::open(&published.checkpoint.weights_path(), device)?;
        for (name, var) in b.varmap.data().lock().expect("var map lock").iter() {
            let Some(published_name) = ["strand_a.", "strand_b.", "strand."]
                .iter()
                .find_map(|p| name.strip_prefix(p))
            else {
                continue;
            };
            let t = weights.get(published_name, var.dims())?;
            var.set(&t.to_dtype(var.dtype())?)?;
        }
        let model = b.get::<BiStrandConfig>()?.clone();
        Ok((b.varmap, model, b.config))
    }
}

fn open_pairs(path: &Path, what: &str) -> Result<PairDataset> {
    let ds = PairDataset::open(path).with_context(|| format!("cannot open the {what} dataset"))?;
    if ds.is_empty() {
        bail!("{}: the {what} dataset has no records", path.display());
    }
    Ok(ds)
}

impl TrainCommand for BiStrandArgs {
    const NAME: &'static str = "bistrand";
    const WHAT: &'static str = "bi-strand masked-LM";

    fn train_args(&self) -> &TrainArgs {
        &self.train
    }

    fn setup(&self, device: &Device) -> Result<TrainingSetup> {
        let t = &self.train;
        let train = open_pairs(&t.train, "training")?;
        let dev = t.dev.as_deref().map(|p| open_pairs(p, "dev")).transpose()?;
        let (tok, pairing) = (train.meta().tokenizer.clone(), train.meta().pairing);
        if let Some(d) = &dev {
            if d.meta().tokenizer.vocab != tok.vocab || d.meta().pairing != pairing {
                bail!(
                    "{}: its vocabulary or pairing ({}) differs from the training set's ({})",
                    d.path().display(),
                    d.meta().pairing.name(),
                    pairing.name()
                );
            }
        }
        let (varmap, model, config) = match &t.resume {
            Some(r) => {
                let ck = Checkpoint::load(r, device)?;
                let model = ck.get::<BiStrandConfig>()?.clone();
                ck.meta.check_tokenizer(r, &t.train, &tok)?;
                (ck.varmap, model, ck.meta.model)
            }
            None if self.encoder.is_some() => self.start_from_published(&tok, &train, device)?,
            None => {
                let config = ModelConfig::from(BiStrandConfig {
                    vocab_size: tok.vocab_size(),
                    d_model: self.d_model,
                    num_layers: self.layers,
                    d_state: self.d_state,
                    expand: self.expand,
                    d_conv: self.d_conv,
                    dt_rank: self.dt_rank.unwrap_or(self.d_model.div_ceil(16)),
                    cross_heads: self.cross_heads,
                    cross_attention: !self.no_cross_attention,
                    tie_strands: self.tie_strands,
                    max_length: self.max_length.unwrap_or(train.length()),
                    dropout: self.dropout,
                    layer_norm_eps: 1e-5,
                    encoder: None,
                });
                let b = BuiltModel::new(&config, device, t.seed)?;
                let model = b.get::<BiStrandConfig>()?.clone();
                (b.varmap, model, b.config)
            }
        };
        for ds in std::iter::once(&train).chain(dev.as_ref()) {
            if ds.length() > model.config.max_length {
                bail!(
                    "{}: rows of {} bases are longer than the model's max length {}",
                    ds.path().display(),
                    ds.length(),
                    model.config.max_length
                );
            }
        }
        let masking = &train.meta().masking;
        if self.dynamic_masking && masking.mode != MaskMode::Random {
            bail!(
                "{}: --dynamic-masking needs a dataset masked at random positions, not at variant sites",
                train.path().display()
            );
        }
        let dynamic_masking = self.dynamic_masking.then(|| PairMasking {
            mode: MaskMode::Random,
            fraction: masking.fraction,
            bert_replacement: masking.bert_replacement,
            complement: pairing == Pairing::Complement,
        });
        let n: usize = varmap.all_vars().iter().map(|v| v.elem_count()).sum();
        let c = &model.config;
        let description = format!(
            "{n} parameters (d {} x {} layers, cross-attention {}, strands {}), {} training pairs ({} pairing){}",
            c.d_model,
            c.num_layers,
            if c.cross_attention { "on" } else { "off" },
            if c.tie_strands { "tied" } else { "untied" },
            train.len(),
            pairing.name(),
            if self.dynamic_masking { ", dynamic masking" } else { "" }
        ) + &c
            .encoder
            .as_ref()
            .map(|e| {
                format!(
                    ", strand encoders from {} ({})",
                    e.source,
                    if e.frozen { "frozen" } else { "fine-tuned" }
                )
            })
            .unwrap_or_default();
        let frozen = model.config.encoder.as_ref().is_some_and(|e| e.frozen);
        let task = BiStrandTask {
            model,
            train,
            dev,
            device: device.clone(),
            eval_batch_size: t.eval_batch_size,
            eval_records: self.eval_records,
            dynamic_masking,
        };
        let trainable: Vec<String> = parameter_names(&varmap)
            .into_iter()
            .filter(|n| !frozen || !n.starts_with("strand"))
            .collect();
        Ok(TrainingSetup {
            config,
            trainable,
            varmap,
            task: Box::new(task),
            input: InputSpec::TokenPairs(tok, pairing),
            sources: t.sources(),
            metric: "dev_loss".into(),
            maximize: false,
            description,
            train_defaults: crate::train::TrainDefaults::STANDARD,
        })
    }
}
