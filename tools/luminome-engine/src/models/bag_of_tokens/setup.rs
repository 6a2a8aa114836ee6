//! `luminome-train bag-of-tokens`: from arguments (or a checkpoint to resume) to a built model
//! and the classification task.

use anyhow::Result;
use candle_core::Device;
use clap::Args;

use super::config::BagOfTokensConfig;
use crate::checkpoint::Checkpoint;
use crate::input::InputSpec;
use crate::models::token::{Baseline, ClassificationArgs, ClassificationData};
use crate::models::{parameter_names, BuiltModel, ModelConfig};
use crate::train::{TrainArgs, TrainCommand, TrainingSetup};

pub const EXAMPLE: &str = "Example (a k-mer frequency baseline for a promoter task):
  luminome-tokenize train.csv --scheme kmer -k 6 -o train6.safetensors
  luminome-tokenize dev.csv --scheme kmer -k 6 -o dev6.safetensors
  luminome-train bag-of-tokens --train train6.safetensors --dev dev6.safetensors -o bag6/ \\
      --steps 2000 --lr 0.05 --weight-decay 0.0001
Writes bag6/best.safetensors, bag6/last.safetensors and bag6/metrics.tsv as `classify` does;
luminome-predict runs the checkpoints.";

/// Logistic regression on token frequencies: a fast linear baseline (with k-mer tokens, a k-mer
/// model) that predict runs like any classifier.
#[derive(Args, Debug)]
#[command(after_long_help = EXAMPLE)]
pub struct BagOfTokensArgs {
    #[command(flatten)]
    pub train: TrainArgs,
    #[command(flatten)]
    pub classification: ClassificationArgs,
    #[command(flatten)]
    pub floor: crate::models::kmer_linear::KmerFloorArgs,
}

impl TrainCommand for BagOfTokensArgs {
    const NAME: &'static str = "bag-of-tokens";
    const WHAT: &'static str = "bag-of-tokens classifier";

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
        let (varmap, model, config) = match &t.resume {
            Some(r) => {
                let ck = Checkpoint::load(r, device)?;
                let model = ck.get::<BagOfTokensConfig>()?.clone();
                ck.meta
                    .check_tokenizer(r, &t.train, data.train.tokenizer())?;
                (ck.varmap, model, ck.meta.model)
            }
            None => {
                let label_values = data.label_values(self.classification.classes.as_deref())?;
                let config = ModelConfig::from(BagOfTokensConfig {
                    vocab_size: data.train.tokenizer().vocab_size(),
                    max_length: data.train.max_length(),
                    num_classes: label_values.len(),
                    label_values,
                });
                let b = BuiltModel::new(&config, device, t.seed)?;
                let model = b.get::<BagOfTokensConfig>()?.clone();
                (b.varmap, model, b.config)
            }
        };
        let description = format!(
            "{} parameters, {} training records, classes {:?}",
            varmap
                .all_vars()
                .iter()
                .map(|v| v.elem_count())
                .sum::<usize>(),
            data.train.len(),
            model.config.label_values
        );
        let input = InputSpec::Tokens(data.train.tokenizer().clone());
        let floor = self.floor.search(&self.classification)?;
        let baseline = floor.map(|s| Box::new(s) as Box<dyn Baseline>);
        let task =
            data.into_task::<BagOfTokensConfig>(model, device, t.eval_batch_size, baseline)?;
        Ok(TrainingSetup {
            config,
            trainable: parameter_names(&varmap),
            varmap,
            task: Box::new(task),
            input,
            sources: t.sources(),
            metric: if t.dev.is_some() {
                self.classification.metric.clone()
            } else {
                String::new()
            },
            maximize,
            description,
            train_defaults: crate::train::TrainDefaults::STANDARD,
        })
    }
}
