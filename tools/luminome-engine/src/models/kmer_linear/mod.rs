//! The k-mer linear family: L2-regularised (multinomial) logistic regression on the k-mer
//! frequencies of a sequence, k over a range, the penalty chosen on dev — the floor any deep
//! classifier of short sequences has to clear. Features are read back from the dataset's
//! nucleotide or k-mer tokens, so it trains on the same files as `classify`; `luminome-predict`
//! runs it as a token classifier and `luminome-importance` spreads its k-mer weights onto bases.
//! See docs/kmer-floor.md.

mod baseline;
pub mod config;
pub mod features;
pub mod fit;
pub mod model;
pub mod select;
pub mod setup;

use std::path::Path;

use anyhow::Result;
use candle_core::Device;

pub use config::KmerLinearConfig;
pub use model::KmerLinear;
pub use select::KmerSearch;
pub use setup::{run, KmerFloor, KmerFloorArgs, KmerLinearArgs};

use crate::models::token::ClassifierPredictor;
use crate::predict::{PredictFamily, Predictor};

impl PredictFamily for KmerLinearConfig {
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
    use luminome_io::token_dataset::{
        IndexRow, TokenDatasetWriter, TokenDatasetWriterOptions, TokenRow, TokenizerInfo,
    };

    use super::*;
    use crate::checkpoint::Checkpoint;
    use crate::input::batch_tensors;
    use crate::models::token::TokenClassifier;
    use crate::testing::{toy_motif_task, write_dataset};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: KmerLinearArgs,
    }

    /// A 3-mer dataset (ids are arbitrary k-mers): only its vocabulary matters here.
    fn write_kmer_dataset(dest: &Path) {
        let tok = TokenizerInfo::kmer(3, 3, true, true);
        let mut w = TokenDatasetWriter::new(TokenDatasetWriterOptions {
            dest: dest.to_path_buf(),
            tokenizer: tok,
            max_length: Some(8),
            has_labels: true,
            has_soft_mask: false,
            shard_records: None,
            rc: "none".into(),
            sources: vec![],
            tool: "test".into(),
            tool_version: "0".into(),
            command_line: String::new(),
        })
        .unwrap();
        for i in 0..4u32 {
            let ids = [1, 5 + i, 6 + i, 7, 2, 0, 0, 0];
            w.push(TokenRow {
                ids: &ids,
                soft_mask: None,
                label: Some(i64::from(i % 2)),
                index: IndexRow {
                    record: u64::from(i),
                    shard: 0,
                    name: format!("r{i}"),
                    interval: None,
                    seq_length: 9,
                    window_offset: 0,
                    window_length: 9,
                    strand: '+',
                },
            })
            .unwrap();
        }
        w.finish().unwrap();
    }

    #[test]
    fn fits_the_motif_task_predicts_and_explains_it_exactly() {
        // Label 1 iff TATA was planted: the 4-mer TATA (and T-rich k-mers) carry the signal.
        let dir = tempfile::tempdir().unwrap();
        let path = |n: &str| dir.path().join(n).display().to_string();
        let (s, l) = toy_motif_task(160, 24, 1);
        write_dataset(Path::new(&path("train.safetensors")), &s, Some(&l), 28).unwrap();
        let (s, l) = toy_motif_task(64, 24, 2);
        write_dataset(Path::new(&path("dev.safetensors")), &s, Some(&l), 28).unwrap();
        let cli = Cli::parse_from([
            "luminome-train kmer-linear",
            "--train",
            &path("train.safetensors"),
            "--dev",
            &path("dev.safetensors"),
            "--test",
            &path("dev.safetensors"),
            "-o",
            &path("run"),
            "--k",
            "1-4",
            "--select-k",
            "--quiet",
        ]);
        run(&cli.args, "test").unwrap();
        let best = dir.path().join("run/best.safetensors");
        let ck = Checkpoint::load(&best, &Device::Cpu).unwrap();
        assert_eq!(ck.meta.model.kind(), "kmer_linear");
        assert!(
            ck.meta.metrics["dev_accuracy"] > 0.9,
            "{:?}",
            ck.meta.metrics
        );
        // metrics.tsv: one line per grid point, exactly one chosen.
        let grid = crate::testing::tsv_rows(&dir.path().join("run/metrics.tsv"));
        assert!(grid.len() >= 4);
        assert_eq!(grid.iter().filter(|r| r["chosen"] == "1").count(), 1);
        // The predictor reads the checkpoint like any token classifier.
        let dev = dir.path().join("dev.safetensors");
        let mut p = KmerLinearConfig::open_predictor(&best, &dev, Device::Cpu).unwrap();
        let rows = p.predict(&(0..p.len()).collect::<Vec<_>>()).unwrap();
        let correct = rows.iter().filter(|r| r.values[0] == r.values[3]).count();
        assert!(correct as f64 / rows.len() as f64 > 0.9, "{correct}");
        // Base contributions add up to the centred logit of the class, less the bias.
        let model = ck.get::<KmerLinearConfig>().unwrap();
        let ds = luminome_io::token_dataset::TokenDataset::open(&dev).unwrap();
        let t = batch_tensors(&ds.batch(&[0, 1, 2]).unwrap(), &Device::Cpu).unwrap();
        let logits = model.logits(&t.ids, &t.mask, None).unwrap();
        let logits = logits.to_vec2::<f32>().unwrap();
        let (_, bias) = model.weights().unwrap();
        for (r, bases) in model.bases(&t.ids, &t.mask).unwrap().iter().enumerate() {
            let contrib: f32 = model.base_contributions(bases, 1).unwrap().iter().sum();
            let half = (logits[r][1] - logits[r][0]) / 2.0;
            let half_bias = (bias[1] - bias[0]) / 2.0;
            assert!(
                (contrib + half_bias - half).abs() < 1e-4,
                "{contrib} {half}"
            );
        }
        // A dataset tokenized otherwise is refused, naming both files.
        write_kmer_dataset(&dir.path().join("kmer3.safetensors"));
        let e = KmerLinearConfig::open_predictor(
            &best,
            &dir.path().join("kmer3.safetensors"),
            Device::Cpu,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains("kmer3.safetensors")
                && e.contains("best.safetensors")
                && e.contains("tokenized differently"),
            "{e}"
        );
    }

    #[test]
    fn k_ranges_outside_one_to_eight_are_refused() {
        for bad in ["9", "0-3", "5-3", "", "1-x", "2-9"] {
            let e = bad.parse::<setup::KRange>().err().unwrap().to_string();
            assert!(e.contains("--k"), "{bad}: {e}");
        }
        assert_eq!("3".parse::<setup::KRange>().unwrap(), setup::KRange(3, 3));
        assert_eq!("1-8".parse::<setup::KRange>().unwrap(), setup::KRange(1, 8));
    }
}
