//! `luminome-train region-pretrain`: masked-region pretraining, from arguments to a built model
//! and its task.

use anyhow::{bail, Result};
use candle_core::Device;
use clap::Args;

use super::config::{PretrainLoss, PretrainTarget, RegionPretrainConfig};
use super::task::RegionPretrainTask;
use crate::checkpoint::Checkpoint;
use crate::input::InputSpec;
use crate::models::region::data::{feature_statistics, set_standardisation, trainable};
use crate::models::region::{HoldoutArgs, RegionData, RegionEncoderArgs, ENCODER_PREFIX};
use crate::models::{parameter_names, BuiltModel, ModelConfig};
use crate::train::{TrainArgs, TrainCommand, TrainingSetup};

pub const EXAMPLE: &str = "Example (chr22 tiled every 100 kb in two cell types, then expression):
  luminome-regions --reference chr22.fa.gz --accessibility K562=k562.bw --accessibility GM12878=gm.bw \\
      --motifs motifs.meme --motif-clusters clusters.csv --tile-step 100000 -o tiles.safetensors
  luminome-train region-pretrain --train tiles.safetensors --holdout genes -o pretrain/ \\
      --preset small --steps 2000 --batch-size 16 --seed 1
  luminome-train expression --init pretrain/best.safetensors --train genes.safetensors \\
      --holdout genes -o expression/
Writes pretrain/best.safetensors (lowest dev loss), last.safetensors (+ state, for --resume) and
metrics.tsv (..., dev_loss, dev_r2: the masked features' R² against predicting the training mean).
With --target accessibility only the masked regions' accessibility is hidden (their motifs stay
visible) and reconstructed; dev_r2 is then that of the masked accessibility.";

/// Masked-region pretraining of the region encoder: a fraction of each sample's regions
/// replaced by a learnable mask vector, reconstructed by a linear decoder (MSE or BCE).
#[derive(Args, Debug)]
#[command(after_long_help = EXAMPLE)]
pub struct RegionPretrainArgs {
    #[command(flatten)]
    pub train: TrainArgs,
    #[command(flatten)]
    pub encoder: RegionEncoderArgs,
    #[command(flatten)]
    pub holdout: HoldoutArgs,
    /// Fraction of each sample's regions masked (at least one).
    #[arg(long, default_value_t = 0.5)]
    pub mask_fraction: f64,
    /// mse (the standardised features) or bce (features > 0, for binarised inputs).
    #[arg(long, value_enum, default_value = "mse")]
    pub loss: PretrainLoss,
    /// What the masked regions hide and the decoder reconstructs: all (every feature; the
    /// default) or accessibility (the last feature only, from the region's own motifs and its
    /// neighbours; MSE). Default: all, or the resumed run's.
    #[arg(long, value_enum)]
    pub target: Option<PretrainTarget>,
    /// Leave out samples with no region in their window (default: refuse them).
    #[arg(long)]
    pub skip_empty_samples: bool,
    /// Dev samples scored per evaluation (the first ones).
    #[arg(long, default_value_t = 2048)]
    pub eval_records: usize,
}

impl TrainCommand for RegionPretrainArgs {
    const NAME: &'static str = "region-pretrain";
    const WHAT: &'static str = "masked-region pretraining";

    fn train_args(&self) -> &TrainArgs {
        &self.train
    }

    fn setup(&self, device: &Device) -> Result<TrainingSetup> {
        let t = &self.train;
        if !(self.mask_fraction > 0.0 && self.mask_fraction < 1.0) {
            bail!(
                "--mask-fraction must be in (0, 1), got {}",
                self.mask_fraction
            );
        }
        let data = RegionData::open(
            &t.train,
            t.dev.as_deref(),
            &self.holdout,
            self.skip_empty_samples,
        )?;
        let ds = &data.train;
        let (varmap, model, config) = match &t.resume {
            Some(r) => {
                let ck = Checkpoint::load(r, device)?;
                let model = ck.get::<RegionPretrainConfig>()?.clone();
                crate::input::check_region_features(
                    r,
                    &ck.meta.feature_names.clone().unwrap_or_default(),
                    ds,
                )?;
                if model.config.holdout != data.holdout {
                    bail!("{}: the run held out other samples; resume with the run's --holdout settings", r.display());
                }
                if let Some(target) = self.target {
                    if target != model.config.target {
                        bail!(
                            "{}: the run reconstructs --target {}; resume it with that target",
                            r.display(),
                            model.config.target.name()
                        );
                    }
                }
                (ck.varmap, model, ck.meta.model)
            }
            None => {
                let config = ModelConfig::from(RegionPretrainConfig {
                    encoder: self.encoder.config(ds.n_features(), ds.n_regions())?,
                    loss: self.loss,
                    target: self.target.unwrap_or_default(),
                    holdout: data.holdout.clone(),
                });
                let b = BuiltModel::new(&config, device, t.seed)?;
                let (mean, scale) = feature_statistics(ds, &data.train_records)?;
                set_standardisation(&b.varmap, &format!("{ENCODER_PREFIX}."), &mean, &scale)?;
                let model = b.get::<RegionPretrainConfig>()?.clone();
                (b.varmap, model, b.config)
            }
        };
        let e = &model.config.encoder;
        if ds.n_regions() > e.max_regions {
            bail!(
                "{}: {} region slots, more than the model's {}",
                ds.path().display(),
                ds.n_regions(),
                e.max_regions
            );
        }
        let n: usize = varmap.all_vars().iter().map(|v| v.elem_count()).sum();
        let description = format!(
            "{n} parameters (d {} x {} layers, {} heads, positions {}), {}",
            e.d_model,
            e.num_layers,
            e.num_heads,
            e.position.name(),
            data.describe()
        );
        let input = InputSpec::RegionFeatures(ds.feature_names().to_vec());
        let metric = if data.dev.is_some() { "dev_loss" } else { "" };
        let task = RegionPretrainTask {
            model,
            data,
            mask_fraction: self.mask_fraction,
            device: device.clone(),
            eval_batch_size: t.eval_batch_size,
            eval_records: self.eval_records,
        };
        Ok(TrainingSetup {
            config,
            trainable: trainable(parameter_names(&varmap)),
            varmap,
            task: Box::new(task),
            input,
            sources: t.sources(),
            metric: metric.into(),
            maximize: false,
            description,
            train_defaults: crate::train::TrainDefaults::STANDARD,
        })
    }
}
