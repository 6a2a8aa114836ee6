//! The bag-of-tokens family: multinomial logistic regression on the token frequencies of a
//! sequence (logits = mean over real tokens of a learned per-token, per-class weight, plus a
//! bias). With k-mer tokens it is a k-mer-frequency linear model: a fast, transparent baseline,
//! and the worked example of docs/engine.md "Adding a model family": this folder plus one line
//! in each list the registry checks (the engine's registry, luminome-train, the device check,
//! luminome-predict, luminome-importance, the output fingerprint). It reuses the classification
//! task, input checks and predictor of `models/token/` through `TokenClassifier`.

pub mod config;
pub mod model;
pub mod setup;

use std::path::Path;

use anyhow::Result;
use candle_core::Device;

pub use config::BagOfTokensConfig;
pub use model::BagOfTokens;
pub use setup::BagOfTokensArgs;

use crate::models::token::ClassifierPredictor;
use crate::predict::{PredictFamily, Predictor};

impl PredictFamily for BagOfTokensConfig {
    const ENSEMBLES: bool = true;

    fn open_predictor(
        checkpoint: &Path,
        dataset: &Path,
        device: Device,
    ) -> Result<Box<dyn Predictor>> {
        Ok(Box::new(ClassifierPredictor::<Self>::open(
            checkpoint, dataset, device,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::checkpoint::read_checkpoint_meta;
    use crate::testing::{toy_motif_task, write_dataset};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BagOfTokensArgs,
    }

    #[test]
    fn trains_through_luminome_train_and_predicts_through_luminome_predict() {
        // The toy task: label 1 iff TATA was planted in A/C/G sequence, so the T frequency alone
        // separates the classes and a bag of single-base tokens can learn it exactly.
        let dir = tempfile::tempdir().unwrap();
        let path = |n: &str| dir.path().join(n).display().to_string();
        let (s, l) = toy_motif_task(128, 20, 1);
        write_dataset(Path::new(&path("train.safetensors")), &s, Some(&l), 24).unwrap();
        let (s, l) = toy_motif_task(64, 20, 2);
        write_dataset(Path::new(&path("dev.safetensors")), &s, Some(&l), 24).unwrap();
        let cli = Cli::parse_from([
            "luminome-train bag-of-tokens",
            "--train",
            &path("train.safetensors"),
            "--dev",
            &path("dev.safetensors"),
            "-o",
            &path("run"),
            "--steps",
            "100",
            "--eval-every",
            "25",
            "--lr",
            "0.5",
            "--warmup",
            "2",
            "--threads",
            "1",
            "--quiet",
        ]);
        crate::train::run(&cli.args, "test").unwrap();
        let best = dir.path().join("run/best.safetensors");
        let meta = read_checkpoint_meta(&best).unwrap();
        assert_eq!(meta.model.kind(), "bag_of_tokens");
        assert!(
            meta.metrics["dev_accuracy"] > 0.95,
            "dev accuracy {:?}",
            meta.metrics
        );
        let dev = dir.path().join("dev.safetensors");
        let mut p = BagOfTokensConfig::open_predictor(&best, &dev, Device::Cpu).unwrap();
        assert_eq!(p.columns(), ["label", "prob_0", "prob_1", "predicted"]);
        let rows = p.predict(&(0..p.len()).collect::<Vec<_>>()).unwrap();
        let correct = rows.iter().filter(|r| r.values[0] == r.values[3]).count();
        assert!(correct as f64 / rows.len() as f64 > 0.95, "{correct}");
        // A checkpoint of another family is refused by name.
        let other = ClassifierPredictor::<crate::models::classifier::ClassifierConfig>::open(
            &best,
            &dev,
            Device::Cpu,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(other.contains("bag-of-tokens classifier"), "{other}");
    }
}
