//! The training loop: a small model learns a toy task, a resumed run reproduces the
//! uninterrupted one exactly, and a NaN loss stops training with the last good checkpoint kept.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::Path;

use candle_core::{Device, Tensor};
use luminome_engine::backbones::{BackboneConfig, EncoderConfig, PositionEncoding};
use luminome_engine::checkpoint::{read_checkpoint_meta, CheckpointMeta};
use luminome_engine::input::InputSpec;
use luminome_engine::models::classifier::{AdapterKind, Classifier, ClassifierConfig};
use luminome_engine::models::mlm::MlmConfig;
use luminome_engine::models::token::{ClassifierTask, LabelledSet};
use luminome_engine::models::{BuiltModel, ModelConfig};
use luminome_engine::testing::{nucleotide_tokenizer, toy_motif_task, write_dataset};
use luminome_engine::train::{AdamWConfig, RunPaths, TrainConfig, TrainTask, Trainer};
use luminome_engine::Checkpoint;
use luminome_io::token_dataset::TokenDataset;

fn config(adapter: AdapterKind, dropout: f64) -> ModelConfig {
    ModelConfig::Classifier(ClassifierConfig {
        backbone: BackboneConfig::Transformer(EncoderConfig {
            vocab_size: 10,
            d_model: 32,
            num_layers: 2,
            num_heads: 4,
            ffn_dim: 64,
            dropout,
            max_length: 24,
            position: PositionEncoding::Learned,
            layer_norm_eps: 1e-5,
            pad_id: 0,
            attention: Default::default(),
        }),
        adapter,
        num_classes: 2,
        label_values: vec![0, 1],
        rc_average: None,
        gate_score_scale: None,
    })
}

fn train_config(steps: u64, seed: u64) -> TrainConfig {
    TrainConfig {
        batch_size: 16,
        grad_accum: 2,
        max_steps: steps,
        lr: 3e-3,
        warmup_steps: 5,
        min_lr_ratio: 0.1,
        adamw: AdamWConfig::default(),
        clip_norm: 1.0,
        eval_every: 3,
        patience: None,
        loss_patience: None,
        metric: "dev_accuracy".into(),
        maximize: true,
        seed,
    }
}

fn meta(config: &ModelConfig) -> CheckpointMeta {
    CheckpointMeta::new(
        config.clone(),
        InputSpec::Tokens(nucleotide_tokenizer()),
        vec![],
        "test",
        "",
    )
}

/// Writes train.safetensors (`n_train` records) and dev.safetensors of the toy task into `dir`.
fn datasets(dir: &Path, n_train: usize) {
    let (seqs, labels) = toy_motif_task(n_train, 20, 7);
    write_dataset(&dir.join("train.safetensors"), &seqs, Some(&labels), 24).unwrap();
    let (seqs, labels) = toy_motif_task(64, 20, 8);
    write_dataset(&dir.join("dev.safetensors"), &seqs, Some(&labels), 24).unwrap();
}

/// The classification task on the datasets in `dir`.
fn task(model: &Classifier, dir: &Path) -> ClassifierTask<ClassifierConfig> {
    let set = |name: &str| {
        LabelledSet::new(TokenDataset::open(&dir.join(name)).unwrap(), &[0, 1]).unwrap()
    };
    ClassifierTask {
        model: model.clone(),
        train: set("train.safetensors"),
        dev: Some(set("dev.safetensors")),
        test: None,
        device: Device::Cpu,
        eval_batch_size: 64,
        baseline: None,
        rc_augment: None,
    }
}

fn all_names(b: &BuiltModel) -> Vec<String> {
    b.parameter_names()
}

#[test]
fn a_small_model_learns_the_toy_task() {
    let dir = tempfile::tempdir().unwrap();
    datasets(dir.path(), 256);
    let cfg = config(AdapterKind::Gated, 0.0);
    let built = BuiltModel::new(&cfg, &Device::Cpu, 1).unwrap();
    let model = built.get::<ClassifierConfig>().unwrap();
    let mut tc = train_config(60, 1);
    tc.eval_every = 30;
    let trainer = Trainer {
        config: tc,
        varmap: &built.varmap,
        trainable: all_names(&built),
        meta: meta(&cfg),
        paths: RunPaths {
            dir: dir.path().to_path_buf(),
        },
        stop_after: None,
        verbose: false,
    };
    let t = task(model, dir.path());
    trainer.run(&t, None).unwrap();
    let m = t.evaluate().unwrap();
    assert!(
        m["dev_loss"] < 0.2,
        "dev loss {} did not fall below 0.2",
        m["dev_loss"]
    );
    assert!(
        m["dev_accuracy"] > 0.95,
        "dev accuracy {}",
        m["dev_accuracy"]
    );
    let log = std::fs::read_to_string(dir.path().join("metrics.tsv")).unwrap();
    let first: f64 = log
        .lines()
        .nth(1)
        .unwrap()
        .split('\t')
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        first > 0.5,
        "the first logged loss ({first}) should be near ln 2"
    );
    assert_eq!(
        log.lines().next().unwrap(),
        "step\tepoch\tloss\tlr\tgrad_norm\texamples_per_s\tdev_loss\tdev_accuracy\tdev_auroc\tdev_f1\tdev_mcc"
    );
    assert_eq!(log.lines().count(), 61);
    // The best checkpoint rebuilds the model from its own metadata.
    let best = Checkpoint::load(&dir.path().join("best.safetensors"), &Device::Cpu).unwrap();
    assert_eq!(best.meta.model, cfg);
    assert!(best.get::<ClassifierConfig>().is_ok() && best.get::<MlmConfig>().is_err());
}

fn weights(varmap: &candle_nn::VarMap) -> Vec<(String, Vec<f32>)> {
    luminome_engine::checkpoint::varmap_tensors(varmap)
        .into_iter()
        .map(|(n, t)| (n, t.flatten_all().unwrap().to_vec1().unwrap()))
        .collect()
}

/// The log without the examples/s column (wall-clock dependent).
fn log_numbers(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut f: Vec<&str> = l.split('\t').collect();
            f.remove(5);
            f.join("\t")
        })
        .collect()
}

#[test]
fn resuming_reproduces_the_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    // 40 records, 16 per micro-batch, 2 micro-batches per step: epochs end mid-step.
    datasets(dir.path(), 40);
    let cfg = config(AdapterKind::Mean, 0.2);
    let run = |out: &Path, stop_after: Option<u64>, resume: bool| {
        std::fs::create_dir_all(out).unwrap();
        let (varmap, model) = if resume {
            let ck = Checkpoint::load(&out.join("last.safetensors"), &Device::Cpu).unwrap();
            let model = ck.get::<ClassifierConfig>().unwrap().clone();
            (ck.varmap, model)
        } else {
            let b = BuiltModel::new(&cfg, &Device::Cpu, 5).unwrap();
            let model = b.get::<ClassifierConfig>().unwrap().clone();
            (b.varmap, model)
        };
        let mut names: Vec<String> = varmap.data().lock().unwrap().keys().cloned().collect();
        names.sort();
        let trainer = Trainer {
            config: train_config(8, 5),
            varmap: &varmap,
            trainable: names,
            meta: meta(&cfg),
            paths: RunPaths {
                dir: out.to_path_buf(),
            },
            stop_after,
            verbose: false,
        };
        let resume_from = out.join("last.safetensors");
        trainer
            .run(
                &task(&model, dir.path()),
                resume.then_some(resume_from.as_path()),
            )
            .unwrap();
        weights(&varmap)
    };
    let straight = run(&dir.path().join("straight"), None, false);
    let first_half = run(&dir.path().join("resumed"), Some(4), false);
    assert_ne!(first_half, straight);
    assert_eq!(
        read_checkpoint_meta(&dir.path().join("resumed/last.safetensors"))
            .unwrap()
            .step,
        4
    );
    let resumed = run(&dir.path().join("resumed"), None, true);
    assert_eq!(
        resumed, straight,
        "resumed weights differ from the uninterrupted run"
    );
    assert_eq!(
        log_numbers(&dir.path().join("resumed/metrics.tsv")),
        log_numbers(&dir.path().join("straight/metrics.tsv"))
    );
}

/// Delegates to a real task but returns a NaN loss from the `nan_at`-th call on.
struct NanAfter {
    inner: ClassifierTask<ClassifierConfig>,
    calls: Cell<u64>,
    nan_at: u64,
}

impl TrainTask for NanAfter {
    fn train_len(&self) -> usize {
        self.inner.train_len()
    }
    fn train_loss(&self, records: &[usize], seed: u64) -> anyhow::Result<Tensor> {
        self.calls.set(self.calls.get() + 1);
        let loss = self.inner.train_loss(records, seed)?;
        Ok(if self.calls.get() >= self.nan_at {
            (loss * f64::NAN)?
        } else {
            loss
        })
    }
    fn metric_names(&self) -> Vec<String> {
        self.inner.metric_names()
    }
    fn evaluate(&self) -> anyhow::Result<BTreeMap<String, f64>> {
        self.inner.evaluate()
    }
}

#[test]
fn nan_loss_stops_with_a_clear_message_and_keeps_the_last_good_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    datasets(dir.path(), 64);
    let cfg = config(AdapterKind::Cls, 0.0);
    let built = BuiltModel::new(&cfg, &Device::Cpu, 2).unwrap();
    let model = built.get::<ClassifierConfig>().unwrap();
    let trainer = Trainer {
        config: train_config(10, 2),
        varmap: &built.varmap,
        trainable: all_names(&built),
        meta: meta(&cfg),
        paths: RunPaths {
            dir: dir.path().to_path_buf(),
        },
        stop_after: None,
        verbose: false,
    };
    // 2 micro-batches per step: call 9 is step 5.
    let t = NanAfter {
        inner: task(model, dir.path()),
        calls: Cell::new(0),
        nan_at: 9,
    };
    let err = trainer.run(&t, None).unwrap_err().to_string();
    assert!(
        err.contains("NaN") && err.contains("step 5") && err.contains("last.safetensors (step 3)"),
        "{err}"
    );
    let last = Checkpoint::load(&dir.path().join("last.safetensors"), &Device::Cpu).unwrap();
    assert_eq!(last.meta.step, 3);
    let log = std::fs::read_to_string(dir.path().join("metrics.tsv")).unwrap();
    assert_eq!(log.lines().count(), 5, "header + 4 good steps");
}
