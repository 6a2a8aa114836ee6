//! `luminome-train expression`: expression models from scratch or from a masked-region
//! pretraining checkpoint, from arguments to a built model and its task.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use candle_core::Device;
use candle_nn::VarMap;
use clap::{Args, ValueEnum};
use luminome_io::region_dataset::RegionDataset;

use super::config::{ExpressionConfig, ExpressionHead, ExpressionLoss};
use super::linear_path::{
    self, fit_ridge, set_linear_path, LinearInputs, LinearPathConfig, RidgeData, RidgeDev, RidgeFit,
};
use super::model::ExpressionModel;
use super::task::ExpressionTask;
use crate::checkpoint::{load_into, read_checkpoint_meta, read_safetensors, Checkpoint};
use crate::input::{check_region_features, InputSpec};
use crate::models::get_region::{self, GetCheckpoint, GetRegionConfig, GetRegionKind};
use crate::models::region::data::{feature_statistics, set_standardisation, trainable};
use crate::models::region::{
    HoldoutArgs, RegionData, RegionEncoderArgs, RegionEncoderConfig, RegionPosition, RegionTensors,
    ENCODER_PREFIX,
};
use crate::models::region_pretrain::RegionPretrainConfig;
use crate::models::{parameter_names, BuiltModel, ModelConfig};
use crate::train::{TrainArgs, TrainCommand, TrainingSetup};

pub const EXAMPLE: &str =
    "Example (chr22 genes in K562 and GM12878 from luminome-regions with --expression):
  luminome-train expression --train genes.safetensors --holdout genes -o expr/ \\
      --preset small --head tss-region --loss poisson --steps 2000 --batch-size 16
  # from a pretrained encoder, GET's head, leave GM12878 out
  luminome-train expression --init pretrain/best.safetensors --train genes.safetensors \\
      --holdout cell-type --test-cell-type GM12878 --head tss-region -o expr_loco/
  luminome-predict --checkpoint expr/best.safetensors --dataset genes.safetensors --subset test \\
      -o test.predictions.tsv --metrics test.metrics.tsv
Writes expr/best.safetensors (highest dev Pearson), last.safetensors (+ state, for --resume) and
metrics.tsv (..., dev_loss, dev_pearson, dev_spearman). The split is stored in the checkpoint.";

/// The linear path (docs/expression.md, "The linear path").
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LinearPathArg {
    /// The transformer and its head alone.
    None,
    /// Started at the ridge solution and trained with the deep path.
    Joint,
    /// The ridge solution, kept; the deep path learns what it leaves.
    Fixed,
}

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
    /// checkpoint, its sizes and positions used; or start from a published GET region model
    /// (GETRegionFinetune or GETRegionPretrain: a .ckpt/.pth/.pt/.safetensors file, a folder or
    /// hf:ORG/NAME), whose encoder and head are then trained (docs/pretrained-models.md).
    #[arg(help_heading = "Inputs", long)]
    pub init: Option<PathBuf>,
    /// With --init a GET checkpoint without a config.json: its attention heads, which the
    /// tensors do not record [default: 12, the published models'].
    #[arg(long, requires = "init")]
    pub get_heads: Option<usize>,
    /// tss-region (GET's; the default: the spec's attention pooling does not find the TSS
    /// region from a few hundred genes, docs/results.md) or attention-pool (the spec).
    #[arg(long, value_enum, default_value = "tss-region")]
    pub head: HeadArg,
    /// Hidden width of the attention-pooling head's MLP [default: the encoder's width].
    #[arg(long)]
    pub mlp_hidden: Option<usize>,
    /// poisson (the spec; targets ≥ 0, predictions softplus) or mse.
    #[arg(long, value_enum, default_value = "poisson")]
    pub loss: ExpressionLoss,
    /// A linear model of the TSS region's features and the window's feature sums, started at
    /// the ridge solution (penalty by 5-fold CV on the training samples) and added to the
    /// head's output; the head's output layer starts at zero and the dev set is scored before
    /// the first step, so the kept checkpoint is never worse on dev than ridge.
    #[arg(long, value_enum, default_value = "joint")]
    pub linear_path: LinearPathArg,
    /// What the linear path reads: the TSS region's accessibility (and whether a region holds
    /// the TSS), all its features, or those and the window's feature sums.
    #[arg(long, value_enum, default_value = "tss-accessibility")]
    pub linear_inputs: LinearInputs,
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
        let mut linear_note = String::new();
        let mut init_kind = None;
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
                let get = self.read_get_init(&ds, device)?;
                init_kind = get.as_ref().map(|g| g.kind);
                let encoder = self.encoder_config(&ds, get.as_ref())?;
                let head = self.head_config(encoder.d_model, get.is_some())?;
                let config = ModelConfig::from(ExpressionConfig {
                    encoder,
                    head,
                    loss: self.loss,
                    linear_path: match self.linear_path {
                        LinearPathArg::None => None,
                        arg => Some(LinearPathConfig {
                            inputs: self.linear_inputs,
                            trainable: arg == LinearPathArg::Joint,
                        }),
                    },
                    // The expression model is a GETRegionFinetune whatever the checkpoint's class.
                    get: get.as_ref().map(|g| GetRegionConfig {
                        model: Some(GetRegionKind::Finetune),
                        output_dim: 2,
                        ..g.config.clone()
                    }),
                    holdout: data.holdout.clone(),
                });
                let b = BuiltModel::new(&config, device, t.seed)?;
                self.initialise(&b, get.as_ref(), &data, device)?;
                let model = b.get::<ExpressionConfig>()?.clone();
                if model.config.linear_path.is_some() {
                    linear_note = self.start_linear(&b, &model, &data, device)?;
                }
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
            "{n} parameters (d {} x {} layers, {} heads, positions {}, head {}, loss {}{}{linear_note}), {}",
            c.encoder.d_model,
            c.encoder.num_layers,
            c.encoder.num_heads,
            c.encoder.position.name(),
            c.head.name(),
            c.loss.name(),
            match (&self.init, init_kind) {
                (Some(_), Some(k)) => format!(
                    ", GET's encoder and head from --init ({} checkpoint)",
                    k.class_name()
                ),
                (Some(_), None) if t.resume.is_none() => ", encoder from --init".into(),
                _ => String::new(),
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
        let model_linear = model.config.linear_path;
        let task = ExpressionTask {
            model,
            data,
            device: device.clone(),
            eval_batch_size: t.eval_batch_size,
        };
        Ok(TrainingSetup {
            config,
            trainable: expression_trainable(&varmap, model_linear),
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

impl ExpressionArgs {
    /// The encoder: GET's (from `--init`), a region-pretraining checkpoint's, or sized by the
    /// flags; sizes given beside `--init` are refused.
    fn encoder_config(
        &self,
        ds: &RegionDataset,
        get: Option<&GetCheckpoint>,
    ) -> Result<RegionEncoderConfig> {
        Ok(match (&self.init, get) {
            (_, Some(g)) => {
                if self.encoder.sizes_given() {
                    bail!("--d-model, --layers, --heads and --ffn do not apply with --init: the encoder is {}'s", g.weights_path.display());
                }
                get_encoder(&g.config, ds)
            }
            (Some(init), None) => {
                let m = read_checkpoint_meta(init)?;
                let Some(pre) = m.model.get::<RegionPretrainConfig>() else {
                    bail!(
                        "{}: --init needs a masked-region pretraining checkpoint (kind region_pretrain, from luminome-train region-pretrain); this one is a {} (kind {})",
                        init.display(),
                        m.model.family(),
                        m.model.kind()
                    );
                };
                check_region_features(init, &m.feature_names.clone().unwrap_or_default(), ds)?;
                if self.encoder.sizes_given() {
                    bail!("--d-model, --layers, --heads and --ffn do not apply with --init: the encoder is {}'s", init.display());
                }
                pre.encoder.clone()
            }
            (None, _) => self.encoder.config(ds.n_features(), ds.n_regions())?,
        })
    }

    /// The head (`--head`; a GET checkpoint brings its own, reading the TSS region).
    fn head_config(&self, d_model: usize, from_get: bool) -> Result<ExpressionHead> {
        Ok(match self.head {
            HeadArg::AttentionPool if from_get => {
                bail!("--head attention-pool does not apply to a GET checkpoint: GET's own head reads the TSS region (leave --head out)")
            }
            HeadArg::AttentionPool => ExpressionHead::AttentionPool {
                mlp_hidden: self.mlp_hidden.unwrap_or(d_model),
            },
            HeadArg::TssRegion => {
                if self.mlp_hidden.is_some() {
                    bail!("--mlp-hidden is for --head attention-pool");
                }
                ExpressionHead::TssRegion
            }
        })
    }

    /// The built model's first weights: GET's, a pretrained encoder's, or the input
    /// standardisation fitted on the training samples.
    fn initialise(
        &self,
        b: &BuiltModel,
        get: Option<&GetCheckpoint>,
        data: &RegionData,
        device: &Device,
    ) -> Result<()> {
        match (&self.init, get) {
            (_, Some(g)) => load_get(&b.varmap, g)?,
            (Some(init), None) => {
                let (_, tensors) = read_safetensors(init, device)?;
                load_into(
                    &b.varmap,
                    &tensors,
                    init,
                    Some(&format!("{ENCODER_PREFIX}.")),
                )?;
            }
            (None, _) => {
                let (mean, scale) = feature_statistics(&data.train, &data.train_records)?;
                set_standardisation(&b.varmap, &format!("{ENCODER_PREFIX}."), &mean, &scale)?;
            }
        }
        Ok(())
    }

    /// Starts the linear path from a ridge fit (its head output zeroed); the log's note.
    fn start_linear(
        &self,
        b: &BuiltModel,
        model: &ExpressionModel,
        data: &RegionData,
        device: &Device,
    ) -> Result<String> {
        if self.linear_inputs == LinearInputs::TssAccessibility
            && data.train.feature_names().last().map(String::as_str) != Some("accessibility")
        {
            bail!("{}: --linear-inputs tss-accessibility reads the last feature, which is not 'accessibility' here (a luminome-regions dataset built with --accessibility has it last); choose another --linear-inputs", data.train.path().display());
        }
        let fit = start_linear_path(model, data, device)?;
        set_linear_path(&b.varmap, &fit)?;
        zero_head_output(&b.varmap, model.config.head, model.config.get.is_some())?;
        Ok(format!(
            ", linear path ({}) from ridge (penalty {}, {})",
            self.linear_inputs.name(),
            fit.penalty,
            fit.chosen_by
        ))
    }

    /// The GET checkpoint `--init` names (an `hf:` name fetched to its folder), read and checked
    /// against the dataset; `None` when `--init` is not one.
    fn read_get_init(&self, ds: &RegionDataset, device: &Device) -> Result<Option<GetCheckpoint>> {
        let Some(init) = &self.init else {
            return Ok(None);
        };
        let path = match init.to_str().filter(|s| s.starts_with("hf:")) {
            Some(name) => {
                let ck = luminome_cli::hub::open_checkpoint(name)?;
                ck.config_path()
                    .parent()
                    .context("internal: a checkpoint folder without a parent")?
                    .to_path_buf()
            }
            None => init.clone(),
        };
        if !get_region::is_get_checkpoint(&path) {
            if self.get_heads.is_some() {
                bail!(
                    "--get-heads is for a GET checkpoint; {} is not one",
                    init.display()
                );
            }
            return Ok(None);
        }
        let ck = GetCheckpoint::read(&path, self.get_heads, device)?;
        get_region::check_motif_count(&path, ck.config.num_motif, ds.path(), ds.n_features())?;
        let probe = ds.batch(&[])?;
        if probe.tss_slot.is_none() || probe.strand.is_none() {
            bail!(
                "{}: no tss_slot/strand tensors (written by an older luminome-regions); GET's head reads the gene's strand at its TSS region, so rebuild the dataset",
                ds.path().display()
            );
        }
        Ok(Some(ck))
    }
}

/// The encoder record of a GET model: its sizes, the dataset's slots (GET has no position
/// tensors, so any count runs; positions none), no dropout (GET's drop-path is not ported).
fn get_encoder(get: &GetRegionConfig, ds: &RegionDataset) -> RegionEncoderConfig {
    RegionEncoderConfig {
        n_features: get.num_motif,
        d_model: get.embed_dim,
        num_layers: get.num_layers,
        num_heads: get.num_heads,
        ffn_dim: get.mlp_dim(),
        dropout: 0.0,
        max_regions: ds.n_regions().max(get.num_regions),
        position: RegionPosition::None,
        layer_norm_eps: 1e-6,
        attention: Default::default(),
    }
}

/// Every parameter of GET's names from the checkpoint; a GETRegionPretrain checkpoint has no
/// `head_exp` (it keeps its seeded start) and its `mask_token` and `head_mask` are left unused.
/// Any other tensor of the checkpoint that the model does not take is an error.
fn load_get(varmap: &VarMap, ck: &GetCheckpoint) -> Result<()> {
    let pretrain = ck.kind == GetRegionKind::Pretrain;
    let data = varmap.data().lock().expect("var map lock");
    for (name, var) in data.iter() {
        if name.starts_with("head.") || (pretrain && name.starts_with("head_exp.")) {
            continue;
        }
        let t = ck.weights.get(name, var.dims())?;
        var.set(&t.to_dtype(var.dtype())?)?;
    }
    if pretrain {
        for (name, t) in ck.weights.tensors() {
            if name == "mask_token" || name.starts_with("head_mask.") {
                ck.weights.get(name, t.dims())?;
            }
        }
    }
    ck.weights.finish()
}

/// The ridge fit of the linear path on the training samples' summaries, the penalty chosen on
/// the dev samples when there are some. Its targets are the head's raw output: the expression
/// for MSE, softplus⁻¹ of it (values below 0.05 raised to 0.05, as softplus never reaches 0)
/// for the Poisson loss.
fn start_linear_path(
    model: &ExpressionModel,
    data: &RegionData,
    device: &Device,
) -> Result<RidgeFit> {
    let train = summaries(model, &data.train, &data.train_records, device, true)?;
    let softplus = |v: f64| if v > 20.0 { v } else { v.exp().ln_1p() };
    let identity = |v: f64| v;
    let output: &dyn Fn(f64) -> f64 = if model.config.softplus_output() {
        &softplus
    } else {
        &identity
    };
    let dev = match &data.dev {
        Some((ds, records)) => Some(RidgeDev {
            data: summaries(model, ds, records, device, false)?,
            output,
        }),
        None => None,
    };
    fit_ridge(&train, dev.as_ref())
}

/// The summaries of `records` and their targets: raw-output space when `as_targets` (see
/// above), the observed values otherwise.
fn summaries(
    model: &ExpressionModel,
    ds: &RegionDataset,
    records: &[usize],
    device: &Device,
    as_targets: bool,
) -> Result<RidgeData> {
    let (e, inputs) = (
        &model.config.encoder,
        model.config.linear_path.map(|l| l.inputs),
    );
    let inputs = inputs.context("internal: no linear path")?;
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for chunk in records.chunks(64) {
        let t = RegionTensors::new(
            ds,
            chunk,
            e.max_offset(),
            e.position == RegionPosition::TssRelative,
            device,
        )?;
        let s = linear_path::summary(&t.features, &t, inputs)?.to_vec2::<f32>()?;
        for (row, &target) in s.iter().zip(&super::task::targets(&t, ds)?) {
            x.extend(row.iter().map(|&v| f64::from(v)));
            let target = f64::from(target);
            y.push(if as_targets && model.config.softplus_output() {
                target.max(0.05).exp_m1().ln()
            } else {
                target
            });
        }
    }
    Ok(RidgeData {
        rows: y.len(),
        cols: inputs.width(e.n_features),
        x,
        y,
    })
}

/// The head's output layer at zero, so that at step 0 the model is the linear path alone.
fn zero_head_output(varmap: &VarMap, head: ExpressionHead, get: bool) -> Result<()> {
    let prefix = match (head, get) {
        (_, true) => "head_exp.head",
        (ExpressionHead::AttentionPool { .. }, false) => "head.mlp.down",
        (ExpressionHead::TssRegion, false) => "head.tss",
    };
    let data = varmap.data().lock().expect("var map lock");
    for part in ["weight", "bias"] {
        let name = format!("{prefix}.{part}");
        let var = data
            .get(&name)
            .with_context(|| format!("internal: no parameter {name}"))?;
        var.set(&var.as_tensor().zeros_like()?)?;
    }
    Ok(())
}

/// What the optimizer updates: all but the standardisation buffers, and not the linear path
/// when it is fixed.
fn expression_trainable(varmap: &VarMap, linear: Option<LinearPathConfig>) -> Vec<String> {
    let fixed = linear.is_some_and(|l| !l.trainable);
    trainable(parameter_names(varmap))
        .into_iter()
        .filter(|n| n != linear_path::SUMMARY_MEAN && n != linear_path::SUMMARY_SCALE)
        .filter(|n| !(fixed && (n == linear_path::WEIGHT || n == linear_path::BIAS)))
        .collect()
}
