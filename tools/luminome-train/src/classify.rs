//! `luminome-train classify`: sequence classification with one of the four adapters.

use std::path::Path;

use anyhow::{bail, Context, Result};
use clap::Args;
use luminome_engine::checkpoint::{
    load_into, read_checkpoint_meta, read_safetensors, state_path, CheckpointMeta,
};
use luminome_engine::model::{BuiltModel, Model};
use luminome_engine::tasks::{dataset_classes, ClassifyTask};
use luminome_engine::trainer::{RunPaths, TrainConfig, Trainer, TrainerState};
use luminome_engine::{parse_device, AdapterKind, Checkpoint, ClassifierConfig, ModelConfig};

use crate::args::{
    check_length, check_same_vocab, open_dataset, prepare_output, tool_version, EncoderArgs,
    TrainArgs,
};

pub const EXAMPLE: &str = "Example (fine-tune the DynamicGated adapter on a pretrained encoder):
  luminome-train classify --train train.safetensors --dev dev.safetensors -o gated/ \\
      --adapter gated --init mlm/best.safetensors --steps 3000 --eval-every 250 --metric dev_mcc
Writes gated/best.safetensors (best dev MCC), gated/last.safetensors (+ state, for --resume) and
gated/metrics.tsv (step, epoch, loss, lr, grad_norm, examples_per_s, dev_loss, dev_accuracy,
dev_auroc, dev_f1, dev_mcc). Labels: the training set's label values are the classes (or --classes).";

#[derive(Args, Debug)]
pub struct ClassifyArgs {
    #[command(flatten)]
    pub train: TrainArgs,
    #[command(flatten)]
    pub encoder: EncoderArgs,
    /// Adapter: cls (LinearCLS), mean (LinearMeanPool), max (LinearMaxPool) or gated
    /// (DynamicGated).
    #[arg(long)]
    pub adapter: AdapterKind,
    /// Initialise the encoder from a masked-LM checkpoint (its encoder settings are used).
    #[arg(long)]
    pub init: Option<std::path::PathBuf>,
    /// Train the adapter only; the encoder stays as initialised.
    #[arg(long)]
    pub freeze_encoder: bool,
    /// Label values that are the classes, comma-separated [default: those in the training set].
    #[arg(long, value_delimiter = ',')]
    pub classes: Option<Vec<i64>>,
    /// Test token dataset: after training, the best checkpoint is scored on it and the metrics
    /// written to <output>/test_metrics.tsv (metric, value).
    #[arg(long)]
    pub test: Option<std::path::PathBuf>,
    /// Dev metric that selects the best checkpoint and drives early stopping: dev_mcc,
    /// dev_accuracy, dev_auroc, dev_f1 (higher is better) or dev_loss (lower is better).
    #[arg(long, default_value = "dev_mcc")]
    pub metric: String,
}

/// The training settings stored in a run's state (a resumed run keeps them).
pub fn stored_train_config(ckpt: &Path) -> Result<TrainConfig> {
    let sp = state_path(ckpt);
    let (md, _) = read_safetensors(&sp, &candle_core::Device::Cpu).with_context(|| {
        format!(
            "{}: no readable training state beside the checkpoint",
            ckpt.display()
        )
    })?;
    let s: TrainerState =
        serde_json::from_str(md.get("luminome").map(String::as_str).unwrap_or(""))
            .with_context(|| format!("{}: unreadable training state", sp.display()))?;
    Ok(s.config)
}

pub fn run(a: ClassifyArgs, command_line: &str) -> Result<()> {
    crate::set_threads(a.train.threads);
    let t = &a.train;
    let device = parse_device(&t.device)?;
    let maximize = match a.metric.as_str() {
        "dev_mcc" | "dev_accuracy" | "dev_auroc" | "dev_f1" => true,
        "dev_loss" => false,
        m => bail!("--metric {m}: expected dev_mcc, dev_accuracy, dev_auroc, dev_f1 or dev_loss"),
    };
    let train = open_dataset(&t.train, "training")?;
    if !train.has_labels() {
        bail!(
            "{}: the training dataset has no labels; `classify` needs a labelled dataset (tokenize a sequence,label table)",
            t.train.display()
        );
    }
    let dev = t
        .dev
        .as_deref()
        .map(|p| open_dataset(p, "dev"))
        .transpose()?;
    if let Some(d) = &dev {
        check_same_vocab(&train, d)?;
        if !d.has_labels() {
            bail!("{}: the dev dataset has no labels", d.path().display());
        }
    }
    let test = a
        .test
        .as_deref()
        .map(|p| open_dataset(p, "test"))
        .transpose()?;
    if let Some(d) = &test {
        check_same_vocab(&train, d)?;
        if !d.has_labels() {
            bail!("{}: the test dataset has no labels", d.path().display());
        }
    }
    let (varmap, model, config) = match &t.resume {
        Some(r) => {
            let ck = Checkpoint::load(r, &device)?;
            ck.classifier()?;
            ck.meta.check_tokenizer(r, &t.train, train.tokenizer())?;
            (ck.varmap, ck.model, ck.meta.model)
        }
        None => {
            let label_values = match &a.classes {
                Some(c) => {
                    let mut c = c.clone();
                    c.sort();
                    c.dedup();
                    c
                }
                None => {
                    let mut v = train.meta().label_values.clone();
                    if v.is_empty() {
                        let all: Vec<usize> = (0..train.len()).collect();
                        v = train.batch(&all)?.labels.unwrap_or_default();
                        v.sort();
                        v.dedup();
                    }
                    v
                }
            };
            if label_values.len() < 2 {
                bail!(
                    "{}: classification needs at least two classes, the labels are {:?}",
                    t.train.display(),
                    label_values
                );
            }
            let encoder = match &a.init {
                Some(init) => {
                    let m = read_checkpoint_meta(init)?;
                    let ModelConfig::Mlm(mc) = &m.model else {
                        bail!(
                            "{}: --init needs a masked-LM checkpoint (kind mlm), this one is a {}",
                            init.display(),
                            m.model.kind()
                        );
                    };
                    m.check_tokenizer(init, &t.train, train.tokenizer())?;
                    let mut e = mc.encoder.clone();
                    e.dropout = a.encoder.dropout;
                    e
                }
                None => a.encoder.config(&train)?,
            };
            let config = ModelConfig::Classifier(ClassifierConfig {
                encoder,
                adapter: a.adapter,
                num_classes: label_values.len(),
                label_values,
            });
            let b = BuiltModel::new(&config, &device, t.seed)?;
            if let Some(init) = &a.init {
                let (_, tensors) = read_safetensors(init, &device)?;
                load_into(&b.varmap, &tensors, init, Some("encoder."))?;
            }
            (b.varmap, b.model, b.config)
        }
    };
    let Model::Classifier(model) = &model else {
        unreachable!("checked above")
    };
    let ModelConfig::Classifier(cc) = &config else {
        unreachable!("checked above")
    };
    if t.resume.is_some() && cc.adapter != a.adapter {
        bail!(
            "--adapter {} differs from the resumed checkpoint's adapter {}",
            a.adapter.name(),
            cc.adapter.name()
        );
    }
    check_length(&train, cc.encoder.max_length, "training set")?;
    let train_classes = dataset_classes(&train, &cc.label_values)?;
    let dev = match &dev {
        Some(d) => {
            check_length(d, cc.encoder.max_length, "dev set")?;
            Some((d, dataset_classes(d, &cc.label_values)?))
        }
        None => None,
    };
    let test_classes = match &test {
        Some(d) => {
            check_length(d, cc.encoder.max_length, "test set")?;
            Some(dataset_classes(d, &cc.label_values)?)
        }
        None => None,
    };
    let freeze = a.freeze_encoder;
    prepare_output(&t.output)?;
    let task = ClassifyTask {
        model,
        train: &train,
        train_classes,
        dev,
        device: device.clone(),
        freeze_encoder: freeze,
        eval_batch_size: t.eval_batch_size,
    };
    let mut trainable: Vec<String> = varmap
        .data()
        .lock()
        .expect("var map lock")
        .keys()
        .filter(|n| !freeze || n.starts_with("adapter."))
        .cloned()
        .collect();
    trainable.sort();
    let mut sources = vec![t.train.display().to_string()];
    sources.extend(t.dev.iter().map(|p| p.display().to_string()));
    sources.extend(a.init.iter().map(|p| p.display().to_string()));
    let meta = CheckpointMeta {
        kind: luminome_engine::checkpoint::CHECKPOINT_KIND.into(),
        format_version: luminome_engine::checkpoint::CHECKPOINT_VERSION,
        model: config.clone(),
        tokenizer: train.tokenizer().clone(),
        step: 0,
        metrics: Default::default(),
        sources,
        tool: "luminome-train classify".into(),
        tool_version: tool_version(),
        command_line: command_line.into(),
    };
    let train_config = match &t.resume {
        Some(r) => stored_train_config(r)?,
        None => t.train_config(if t.dev.is_some() { &a.metric } else { "" }, maximize),
    };
    let trainer = Trainer {
        config: train_config,
        varmap: &varmap,
        trainable,
        meta,
        paths: RunPaths {
            dir: t.output.clone(),
        },
        stop_after: t.stop_after_steps,
        verbose: !t.quiet,
    };
    if !t.quiet {
        let n: usize = varmap.all_vars().iter().map(|v| v.elem_count()).sum();
        eprintln!(
            "luminome-train classify: adapter {}, {n} parameters{}, {} training records, classes {:?}",
            cc.adapter.name(),
            if freeze { " (encoder frozen)" } else { "" },
            train.len(),
            cc.label_values
        );
    }
    let s = trainer
        .run(&task, t.resume.as_deref())
        .context("classifier training failed")?;
    if !t.quiet {
        eprintln!(
            "done: {} steps in {:.1} s; best step {} ({} {:?}){}{}",
            s.steps,
            s.seconds,
            s.best_step,
            a.metric,
            s.best_value,
            if s.early_stopped {
                "; early stopped"
            } else {
                ""
            },
            if s.paused {
                "; paused, continue with --resume"
            } else {
                ""
            }
        );
    }
    if let (Some(d), Some(classes)) = (&test, &test_classes) {
        write_test_metrics(
            &trainer.paths,
            d,
            classes,
            &device,
            t.eval_batch_size,
            t.quiet,
        )?;
    }
    Ok(())
}

/// Scores the run's best checkpoint on a test set; writes `test_metrics.tsv`.
fn write_test_metrics(
    paths: &RunPaths,
    ds: &luminome_io::token_dataset::TokenDataset,
    classes: &[u32],
    device: &candle_core::Device,
    batch_size: usize,
    quiet: bool,
) -> Result<()> {
    use std::io::Write;
    let best = if paths.best().exists() {
        paths.best()
    } else {
        paths.last()
    };
    let ck = Checkpoint::load(&best, device)?;
    let model = ck.classifier()?;
    let probs = luminome_engine::tasks::predict_probs(model, ds, batch_size, device)?;
    let labels: Vec<usize> = classes.iter().map(|&k| k as usize).collect();
    let m =
        luminome_metrics::ClassificationMetrics::compute(&labels, &probs, model.config.num_classes)
            .map_err(|e| {
                anyhow::anyhow!("{}: cannot compute test metrics: {e}", ds.path().display())
            })?;
    let dest = paths.dir.join("test_metrics.tsv");
    let mut w = luminome_io::atomic::AtomicWriter::create(&dest)?;
    writeln!(w, "metric\tvalue")?;
    writeln!(w, "checkpoint_step\t{}", ck.meta.step)?;
    for (k, v) in m.rows() {
        writeln!(w, "{k}\t{v}")?;
    }
    w.commit()?;
    if !quiet {
        eprintln!(
            "test ({} records, best checkpoint step {}): accuracy {:.4} auroc {} f1 {:.4} mcc {:.4}",
            labels.len(),
            ck.meta.step,
            m.accuracy,
            m.auroc.map(|v| format!("{v:.4}")).unwrap_or_else(|| "NA".into()),
            m.f1,
            m.mcc
        );
    }
    Ok(())
}
