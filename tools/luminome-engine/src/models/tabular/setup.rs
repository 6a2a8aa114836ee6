//! `luminome-train tabular`: a classifier of the rows of a feature table, trained once (with a
//! validation table or rows held out of the training table, and an optional test table) or by
//! stratified k-fold cross-validation. Each run is the engine's step trainer; this command
//! plans the runs, fits each run's schema on its training rows only, and scores the test rows
//! with the best checkpoint.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::Device;
use luminome_io::table::FeatureTable;
use luminome_metrics::ClassificationMetrics;

use super::args::{ClassWeights, ThresholdRule};
use super::config::TabularConfig;
use super::model::TabularModel;
use super::outputs::{write_cv, write_metric_rows, write_predictions, TestResult};
use super::schema::{check_unique_ids, table_classes, EncodedRows, TabularSchema};
use super::split::{by_class, stratified_folds, stratified_split};
use super::task::{balanced_weights, predict_probs, TabularTask};
use crate::checkpoint::{save_checkpoint, Checkpoint, CheckpointMeta};
use crate::device::parse_device;
use crate::input::InputSpec;
use crate::models::{BuiltModel, ModelConfig};
use crate::train::trainer::{RunPaths, Trainer};
use crate::train::{TrainDefaults, TrainingSetup};

pub use super::args::{TabularArgs, EXAMPLE};
pub use super::outputs::predicted_class;

/// One training run: which rows train, validate and test it.
struct RunPlan {
    dir: PathBuf,
    name: String,
    train: Vec<usize>,
    val: (usize, Vec<usize>),
    test: Option<(usize, Vec<usize>)>,
}

/// Opens a table and checks its ids.
fn open_table(path: &Path, id: Option<&str>) -> Result<FeatureTable> {
    let t = FeatureTable::read(path, None)?;
    if let Some(id) = id {
        check_unique_ids(&t, id)?;
    }
    Ok(t)
}

/// Runs `luminome-train tabular`.
pub fn run(args: &TabularArgs, command_line: &str) -> Result<()> {
    args.check()?;
    args.runtime.apply_threads();
    let device = parse_device(&args.runtime.device)?;
    let Prepared {
        tables,
        classes,
        plans,
        schemas,
    } = prepare(args, args.runtime.quiet)?;
    let mut inputs = vec![args.train.display().to_string()];
    inputs.extend(
        args.dev
            .iter()
            .chain(&args.test)
            .map(|p| p.display().to_string()),
    );
    crate::train::command::check_run_outputs(
        &args.output,
        &[
            "test_predictions.tsv",
            "test_metrics.tsv",
            "cv_metrics.tsv",
            "cv_predictions.tsv",
        ],
        &inputs,
    )?;
    luminome_cli::prepare_output_dir(&args.output)?;
    let mut results = Vec::new();
    for (p, schema) in plans.iter().zip(schemas) {
        results.push(train_one(args, p, schema, &tables, &device, command_line)?);
    }
    if let Some(k) = args.folds {
        write_cv(args, k, tables[0].len(), &classes, &results)?;
    }
    Ok(())
}

/// The tables, classes, runs and each run's schema of `luminome-train tabular`: every check
/// that needs no output, before anything is written.
struct Prepared {
    tables: Vec<FeatureTable>,
    classes: Vec<String>,
    plans: Vec<RunPlan>,
    schemas: Vec<TabularSchema>,
}

fn prepare(args: &TabularArgs, quiet: bool) -> Result<Prepared> {
    let opts = args.schema_options();
    let mut tables = vec![open_table(&args.train, args.id.as_deref())?];
    let classes = table_classes(&tables[0], &args.label, args.classes.as_deref())?;
    let n_classes = classes.len();
    if args.threshold == ThresholdRule::Youden && n_classes != 2 {
        bail!("--threshold youden is for two classes; the labels have {n_classes}");
    }
    let train_classes = labels_of(&tables[0], &args.label, &classes)?;
    let plans = match args.folds {
        Some(k) => fold_plans(args, k, &train_classes, n_classes)?,
        None => vec![split_plan(args, &train_classes, n_classes, &mut tables)?],
    };
    for p in &plans {
        if p.train.is_empty() || p.val.1.is_empty() {
            bail!(
                "{}: too few rows to train and validate ({} training, {} validation)",
                args.train.display(),
                p.train.len(),
                p.val.1.len()
            );
        }
        let present = by_class(&p.train, &train_classes, n_classes);
        if present.iter().any(Vec::is_empty) {
            bail!(
                "{}: {}: a class has no training rows",
                args.train.display(),
                p.name
            );
        }
    }
    // Every schema fits before anything is written: a column that is all missing in one
    // fold's training rows fails the command, not its third fold.
    let mut schemas = Vec::new();
    for p in &plans {
        let (schema, notes) = TabularSchema::fit(&tables[0], &p.train, &opts, classes.clone())?;
        if !quiet && schemas.is_empty() {
            for n in &notes {
                eprintln!("luminome-train tabular: note: {n}");
            }
        }
        schemas.push(schema);
    }
    // The validation and test tables must encode (columns present, numbers where the model
    // reads numbers, known labels) before anything is written.
    for t in &tables[1..] {
        schemas[0].encode(t, &(0..t.len()).collect::<Vec<_>>())?;
    }
    Ok(Prepared {
        tables,
        classes,
        plans,
        schemas,
    })
}

/// Each row's class (its index in `classes`); a label outside them is refused with its row.
fn labels_of(t: &FeatureTable, label: &str, classes: &[String]) -> Result<Vec<u32>> {
    let col = t.require(label, "label")?;
    t.column(col)
        .iter()
        .enumerate()
        .map(|(r, v)| {
            v.as_ref()
                .and_then(|v| classes.iter().position(|c| c == v))
                .map(|k| k as u32)
                .ok_or_else(|| {
                    t.error_at(
                        r,
                        format!(
                            "label {} is not one of the classes ({})",
                            v.as_deref().unwrap_or("(missing)"),
                            classes.join(", ")
                        ),
                    )
                    .into()
                })
        })
        .collect()
}

/// `--folds k`: stratified folds of the training table, each fold's model trained on the other
/// folds less a stratified validation share.
fn fold_plans(
    args: &TabularArgs,
    k: usize,
    train_classes: &[u32],
    n_classes: usize,
) -> Result<Vec<RunPlan>> {
    let all: Vec<usize> = (0..train_classes.len()).collect();
    let smallest = by_class(&all, train_classes, n_classes)
        .iter()
        .map(Vec::len)
        .min()
        .unwrap_or(0);
    if k > all.len() || smallest < 2 {
        bail!(
            "{}: --folds {k} needs at least {k} rows and two of every class (the smallest class has {smallest})",
            args.train.display()
        );
    }
    let mut plans = Vec::new();
    for (f, test) in stratified_folds(train_classes, n_classes, k, args.seed)
        .into_iter()
        .enumerate()
    {
        let rest: Vec<usize> = all
            .iter()
            .copied()
            .filter(|r| test.binary_search(r).is_err())
            .collect();
        let (train, val) = stratified_split(
            &rest,
            train_classes,
            n_classes,
            args.val_fraction,
            args.seed.wrapping_add(f as u64),
        );
        plans.push(RunPlan {
            dir: args.output.join(format!("fold-{}", f + 1)),
            name: format!("fold {}/{k}", f + 1),
            train,
            val: (0, val),
            test: Some((0, test)),
        });
    }
    Ok(plans)
}

/// One model: validation rows from `--dev` or a stratified share of the training table, the
/// `--test` table scored at the end (tables opened here are pushed onto `tables`).
fn split_plan(
    args: &TabularArgs,
    train_classes: &[u32],
    n_classes: usize,
    tables: &mut Vec<FeatureTable>,
) -> Result<RunPlan> {
    let all: Vec<usize> = (0..train_classes.len()).collect();
    let (train, val) = match &args.dev {
        Some(dev) => {
            let t = open_table(dev, args.id.as_deref())?;
            let rows = (0..t.len()).collect();
            tables.push(t);
            (all, (tables.len() - 1, rows))
        }
        None => {
            let (keep, held) =
                stratified_split(&all, train_classes, n_classes, args.val_fraction, args.seed);
            (keep, (0, held))
        }
    };
    let test = match &args.test {
        Some(p) => {
            let t = open_table(p, args.id.as_deref())?;
            let rows = (0..t.len()).collect();
            tables.push(t);
            Some((tables.len() - 1, rows))
        }
        None => None,
    };
    Ok(RunPlan {
        dir: args.output.clone(),
        name: "model".into(),
        train,
        val,
        test,
    })
}

/// The model (seeded by `--seed`) and training task of one run.
fn plan_task(
    args: &TabularArgs,
    plan: &RunPlan,
    schema: TabularSchema,
    tables: &[FeatureTable],
    device: &Device,
) -> Result<(TabularConfig, BuiltModel, TabularTask)> {
    let n_classes = schema.classes.len();
    let config = TabularConfig {
        schema,
        arch: args.arch(),
        threshold: None,
    };
    let built = BuiltModel::new(&ModelConfig::from(config.clone()), device, args.seed)?;
    let train = config.schema.encode(&tables[0], &plan.train)?;
    let val = config.schema.encode(&tables[plan.val.0], &plan.val.1)?;
    let task = TabularTask {
        model: built.get::<TabularConfig>()?.clone(),
        class_weights: match args.class_weights {
            ClassWeights::None => None,
            ClassWeights::Balanced => Some(balanced_weights(
                train.classes.as_deref().context("internal: no labels")?,
                n_classes,
            )),
        },
        train,
        dev: Some(val),
        device: device.clone(),
        eval_batch_size: args.eval_batch_size,
    };
    Ok((config, built, task))
}

/// What a tabular model reads: the table's columns, by name.
fn table_input(config: &TabularConfig) -> InputSpec {
    InputSpec::Table(
        config
            .schema
            .columns
            .iter()
            .map(|c| c.name.clone())
            .collect(),
    )
}

/// The first run's model and task, built as `run` builds them and nothing written: what the
/// device check (`luminome-train`'s `device_check`) compares on two devices.
pub fn first_setup(args: &TabularArgs, device: &Device) -> Result<TrainingSetup> {
    args.check()?;
    let Prepared {
        tables,
        plans,
        mut schemas,
        ..
    } = prepare(args, true)?;
    let (config, built, task) = plan_task(args, &plans[0], schemas.remove(0), &tables, device)?;
    let train_config = args.train_config();
    Ok(TrainingSetup {
        config: built.config.clone(),
        trainable: built.parameter_names(),
        varmap: built.varmap,
        task: Box::new(task),
        input: table_input(&config),
        sources: vec![args.train.display().to_string()],
        metric: train_config.metric,
        maximize: train_config.maximize,
        description: config.arch.name().into(),
        train_defaults: TrainDefaults::STANDARD,
    })
}

fn train_one(
    args: &TabularArgs,
    plan: &RunPlan,
    schema: TabularSchema,
    tables: &[FeatureTable],
    device: &Device,
    command_line: &str,
) -> Result<Option<TestResult>> {
    let quiet = args.runtime.quiet;
    let (config, built, task) = plan_task(args, plan, schema, tables, device)?;
    let model_config = built.config.clone();
    let mut sources = vec![args.train.display().to_string()];
    sources.extend(
        args.dev
            .iter()
            .chain(&args.test)
            .map(|p| p.display().to_string()),
    );
    let tool = "luminome-train tabular";
    let meta = CheckpointMeta::new(
        model_config,
        table_input(&config),
        sources,
        tool,
        command_line,
    );
    luminome_cli::prepare_output_dir(&plan.dir)?;
    if !quiet {
        eprintln!(
            "{tool}: {}: {} over {} columns, {} parameters; {} training rows, {} validation rows{}",
            plan.name,
            config.arch.name(),
            config.schema.columns.len(),
            built.num_parameters(),
            plan.train.len(),
            plan.val.1.len(),
            plan.test
                .as_ref()
                .map(|t| format!(", {} test rows", t.1.len()))
                .unwrap_or_default()
        );
    }
    let trainer = Trainer {
        config: args.train_config(),
        varmap: &built.varmap,
        trainable: built.parameter_names(),
        meta,
        paths: RunPaths {
            dir: plan.dir.clone(),
        },
        stop_after: None,
        verbose: false,
    };
    let s = trainer
        .run(&task, None)
        .context("tabular training failed")?;
    if !quiet {
        eprintln!(
            "  {} steps in {:.1} s; best step {} ({} {:.4}){}",
            s.steps,
            s.seconds,
            s.best_step,
            trainer.config.metric,
            s.best_value.unwrap_or(f64::NAN),
            if s.early_stopped {
                "; early stopped"
            } else {
                ""
            }
        );
    }
    // The best checkpoint, with the decision threshold chosen on the validation rows.
    let best_path = trainer.paths.best();
    let mut best = Checkpoint::load(&best_path, device)?;
    let model = best.get::<TabularConfig>()?.clone();
    if args.threshold == ThresholdRule::Youden {
        let val = task.dev.as_ref().context("internal: no validation rows")?;
        let t = youden_threshold(&model, val, args.eval_batch_size, device)?;
        let mut cfg = model.config.clone();
        cfg.threshold = Some(t);
        best.meta.model = ModelConfig::from(cfg);
        save_checkpoint(&best_path, &best.meta, &best.varmap)?;
        if !quiet {
            eprintln!(
                "  decision threshold P({}) ≥ {t:.4} (Youden's J on the validation rows)",
                model.config.schema.classes[1]
            );
        }
    }
    let threshold = best.get::<TabularConfig>()?.config.threshold;
    match &plan.test {
        Some((table, rows)) => {
            let test = (&tables[*table], rows.as_slice());
            test_result(args, plan, &model, threshold, test, device).map(Some)
        }
        None => Ok(None),
    }
}

/// The cut on P(positive) that maximises Youden's J on the validation rows `val`.
fn youden_threshold(
    model: &TabularModel,
    val: &EncodedRows,
    batch: usize,
    device: &Device,
) -> Result<f64> {
    let probs = predict_probs(model, val, batch, device)?;
    let positive: Vec<bool> = val
        .classes
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|&c| c == 1)
        .collect();
    let score: Vec<f64> = probs.iter().skip(1).step_by(2).copied().collect();
    luminome_metrics::youden_threshold(&positive, &score)
        .context("the validation rows need both classes to choose a threshold")
}

/// Scores the plan's test rows (`rows` of `table`) with the best model and writes their
/// predictions and metrics into the run folder.
fn test_result(
    args: &TabularArgs,
    plan: &RunPlan,
    model: &TabularModel,
    threshold: Option<f64>,
    (table, rows): (&FeatureTable, &[usize]),
    device: &Device,
) -> Result<TestResult> {
    let quiet = args.runtime.quiet;
    let n_classes = model.config.schema.classes.len();
    let test = model.config.schema.encode(table, rows)?;
    if let (Some(note), false) = (test.unknown_note(), quiet) {
        eprintln!("  test rows: {note}");
    }
    let probs = predict_probs(model, &test, args.eval_batch_size, device)?;
    let classes = test
        .classes
        .clone()
        .context("internal: test rows without labels")?;
    let labels: Vec<usize> = classes.iter().map(|&c| c as usize).collect();
    let metrics =
        ClassificationMetrics::compute_with_threshold(&labels, &probs, n_classes, threshold)
            .map_err(|e| anyhow::anyhow!("cannot compute the test metrics: {e}"))?;
    let result = TestResult {
        rows: rows.to_vec(),
        ids: test.ids.clone(),
        classes,
        probs,
        threshold,
        metrics,
    };
    write_predictions(
        &plan.dir.join("test_predictions.tsv"),
        &model.config.schema.classes,
        &[(None, &result)],
    )?;
    write_metric_rows(&plan.dir.join("test_metrics.tsv"), &result.metrics.rows())?;
    if !quiet {
        eprintln!(
            "  test: accuracy {:.4}, sensitivity {:.4}, specificity {:.4}, MCC {:.4}, AUROC {}",
            result.metrics.accuracy,
            result.metrics.sensitivity,
            result.metrics.specificity,
            result.metrics.mcc,
            result
                .metrics
                .auroc
                .map(|v| format!("{v:.4}"))
                .unwrap_or("NA".into())
        );
    }
    Ok(result)
}
