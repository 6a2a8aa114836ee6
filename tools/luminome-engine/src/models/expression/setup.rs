//! `luminome-train expression`: expression models from scratch or from a masked-region
//! pretraining checkpoint, from arguments to a built model and its task.

use std::path::PathBuf;

use anyhow::{bail, Result};
use candle_core::Device;
use clap::{Args, ValueEnum};
use luminome_io::region_dataset::RegionDataset;

use super::config::{ExpressionConfig, ExpressionHead, ExpressionLoss};
use super::task::ExpressionTask;
use crate::checkpoint::{load_into, read_checkpoint_meta, read_safetensors, Checkpoint};
use crate::input::{check_region_features, InputSpec};
use crate::models::region::data::{feature_statistics, set_standardisation, trainable};
use crate::models::region::{HoldoutArgs, RegionData, RegionEncoderArgs, ENCODER_PREFIX};
use crate::models::region_pretrain::RegionPretrainConfig;
use crate::models::{parameter_names, BuiltModel, ModelConfig};
use crate::train::{TrainArgs, TrainCommand, TrainingSetup};

pub const EXAMPLE: &str =
    "Example (chr22 genes in K562 and GM12878 from luminome-regions with --expression):
  luminome-train expression --train genes.safetensors --holdout genes -o expr/ \\
      --preset small --head attention-pool --loss poisson --steps 2000 --batch-size 16
  # from a pretrained encoder, GET's head, leave GM12878 out
  luminome-train expression --init pretrain/best.safetensors --train genes.safetensors \\
      --holdout cell-type --test-cell-type GM12878 --head tss-region -o expr_loco/
  luminome-predict --checkpoint expr/best.safetensors --dataset genes.safetensors --subset test \\
      -o test.predictions.tsv --metrics test.metrics.tsv
Writes expr/best.safetensors (highest dev Pearson), last.safetensors (+ state, for --resume) and
metrics.tsv (..., dev_loss, dev_pearson, dev_spearman). The split is stored in the checkpoint.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HeadArg {
    /// The spec's: attention pooling over the regions, then an MLP.
    AttentionPool,
    /// GET's: a linear layer on the TSS region's state.
    TssRegion,
}

/// Expression from region × motif/accessibility matrices: the region encoder (from scratch or
/// --init a region-pretrain checkpoint) and an attention-pooling or TSS-region head, trained
/// with the Poisson NLL or MSE.
#[derive(Args, Debug)]
#[command(after_long_help = EXAMPLE)]
pub struct ExpressionArgs {
    #[command(flatten)]
    pub train: TrainArgs,
    #[command(flatten)]
    pub encoder: RegionEncoderArgs,
    #[command(flatten)]
    pub holdout: HoldoutArgs,
    /// Initialise the encoder (and its standardisation) from a masked-region pretraining
    /// checkpoint; its sizes and positions are used.
    #[arg(help_heading = "Inputs", long)]
    pub init: Option<PathBuf>,
    /// attention-pool (the spec) or tss-region (GET).
    #[arg(long, value_enum, default_value = "attention-pool")]
    pub head: HeadArg,
    /// Hidden width of the attention-pooling head's MLP [default: the encoder's width].
    #[arg(long)]
    pub mlp_hidden: Option<usize>,
    /// poisson (the spec; targets ≥ 0, predictions softplus) or mse.
    #[arg(long, value_enum, default_value = "poisson")]
    pub loss: ExpressionLoss,
    /// Leave out samples with no region in their window (default: refuse them).
    #[arg(long)]
    pub skip_empty_samples: bool,
}

/// Every target the model will train or select on must be a number (and ≥ 0 for the Poisson
/// loss); the first one that is not is named with its sample, gene and cell type.
fn check_targets(ds: &RegionDataset, records: &[usize], loss: ExpressionLoss) -> Result<()> {
    if !ds.has_expression() {
        bail!(
            "{}: no expression values (build it with luminome-regions --expression)",
            ds.path().display()
        );
    }
    let samples = ds.read_samples()?;
    for chunk in records.chunks(1024) {
        let values = ds.batch(chunk)?.expression.unwrap_or_default();
        for (&r, &v) in chunk.iter().zip(&values) {
            let s = &samples[r];
            let problem = if v.is_nan() {
                "is missing (NA); rebuild without --keep-missing-expression, or give it a value"
            } else if !v.is_finite() {
                "is not finite"
            } else if v < 0.0 && loss == ExpressionLoss::Poisson {
                "is negative, which a Poisson loss cannot fit; use --loss mse or a non-negative transform"
            } else {
                continue;
            };
            bail!(
                "{}: sample {r} ({} in {}): expression {v} {problem}",
                ds.path().display(),
                s.gene,
                s.cell_type
            );
        }
    }
    Ok(())
}

impl TrainCommand for ExpressionArgs {
    const NAME: &'static str = "expression";
    const WHAT: &'static str = "expression";

    fn train_args(&self) -> &TrainArgs {
        &self.train
    }

    fn setup(&self, device: &Device) -> Result<TrainingSetup> {
        let t = &self.train;
        let data = RegionData::open(
            &t.train,
            t.dev.as_deref(),
            &self.holdout,
            self.skip_empty_samples,
        )?;
        let ds = data.train.clone();
        check_targets(&ds, &data.train_records, self.loss)?;
        if let Some((d, records)) = &data.dev {
            check_targets(d, records, self.loss)?;
        }
        let (varmap, model, config) = match &t.resume {
            Some(r) => {
                let ck = Checkpoint::load(r, device)?;
                let model = ck.get::<ExpressionConfig>()?.clone();
                check_region_features(r, &ck.meta.feature_names.clone().unwrap_or_default(), &ds)?;
                if model.config.holdout != data.holdout {
                    bail!("{}: the run held out other samples; resume with the run's --holdout settings", r.display());
                }
                (ck.varmap, model, ck.meta.model)
            }
            None => {
                let encoder = match &self.init {
                    Some(init) => {
                        let m = read_checkpoint_meta(init)?;
                        let Some(pre) = m.model.get::<RegionPretrainConfig>() else {
                            bail!(
                                "{}: --init needs a masked-region pretraining checkpoint (kind region_pretrain, from luminome-train region-pretrain); this one is a {} (kind {})",
                                init.display(),
                                m.model.family(),
                                m.model.kind()
                            );
                        };
                        check_region_features(
                            init,
                            &m.feature_names.clone().unwrap_or_default(),
                            &ds,
                        )?;
                        if self.encoder.sizes_given() {
                            bail!("--d-model, --layers, --heads and --ffn do not apply with --init: the encoder is {}'s", init.display());
                        }
                        pre.encoder.clone()
                    }
                    None => self.encoder.config(ds.n_features(), ds.n_regions())?,
                };
                let head = match self.head {
                    HeadArg::AttentionPool => ExpressionHead::AttentionPool {
                        mlp_hidden: self.mlp_hidden.unwrap_or(encoder.d_model),
                    },
                    HeadArg::TssRegion => {
                        if self.mlp_hidden.is_some() {
                            bail!("--mlp-hidden is for --head attention-pool");
                        }
                        ExpressionHead::TssRegion
                    }
                };
                let config = ModelConfig::from(ExpressionConfig {
                    encoder,
                    head,
                    loss: self.loss,
                    holdout: data.holdout.clone(),
                });
                let b = BuiltModel::new(&config, device, t.seed)?;
                match &self.init {
                    Some(init) => {
                        let (_, tensors) = read_safetensors(init, device)?;
                        load_into(
                            &b.varmap,
                            &tensors,
                            init,
                            Some(&format!("{ENCODER_PREFIX}.")),
                        )?;
                    }
                    None => {
                        let (mean, scale) = feature_statistics(&ds, &data.train_records)?;
                        set_standardisation(
                            &b.varmap,
                            &format!("{ENCODER_PREFIX}."),
                            &mean,
                            &scale,
                        )?;
                    }
                }
                let model = b.get::<ExpressionConfig>()?.clone();
                (b.varmap, model, b.config)
            }
        };
        let c = &model.config;
        if ds.n_regions() > c.encoder.max_regions {
            bail!(
                "{}: {} region slots, more than the model's {}",
                ds.path().display(),
                ds.n_regions(),
                c.encoder.max_regions
            );
        }
        let n: usize = varmap.all_vars().iter().map(|v| v.elem_count()).sum();
        let description = format!(
            "{n} parameters (d {} x {} layers, {} heads, positions {}, head {}, loss {}{}), {}",
            c.encoder.d_model,
            c.encoder.num_layers,
            c.encoder.num_heads,
            c.encoder.position.name(),
            c.head.name(),
            c.loss.name(),
            if self.init.is_some() {
                ", encoder from --init"
            } else {
                ""
            },
            data.describe()
        );
        let mut sources = t.sources();
        sources.extend(self.init.iter().map(|p| p.display().to_string()));
        let metric = if data.dev.is_some() {
            "dev_pearson"
        } else {
            ""
        };
        let task = ExpressionTask {
            model,
            data,
            device: device.clone(),
            eval_batch_size: t.eval_batch_size,
        };
        Ok(TrainingSetup {
            config,
            trainable: trainable(parameter_names(&varmap)),
            varmap,
            task: Box::new(task),
            input: InputSpec::RegionFeatures(ds.feature_names().to_vec()),
            sources,
            metric: metric.into(),
            maximize: true,
            description,
            train_defaults: crate::train::TrainDefaults::STANDARD,
        })
    }
}
