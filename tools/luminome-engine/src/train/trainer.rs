//! The training loop shared by every model family: micro-batches with gradient accumulation,
//! global-norm clipping, AdamW, warmup + cosine schedule, evaluation every N steps, early
//! stopping on a chosen dev metric, best/last checkpoints, a per-step TSV log, NaN stop, and
//! exact resume.
//!
//! Exact resume: every random choice is a pure function of (seed, position): the data order of
//! epoch e comes from (seed, e), the dropout and masking draws of micro-batch k of step s from
//! (seed, s, k). The saved state (step, epoch, cursor, optimizer moments, early-stopping
//! counters) is therefore all that is needed to continue the same sequence of numbers.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use candle_core::{Tensor, Var};
use candle_nn::VarMap;
use luminome_io::atomic::AtomicWriter;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::optim::{clip_grad_norm, AdamW, AdamWConfig};
use super::schedule::WarmupCosine;
use super::state::{
    promote_pending_state, read_matching_state, weights_checksum, write_state, TrainerState,
};
use super::task::TrainTask;
use crate::checkpoint::{pending_state_path, prepare_checkpoint, CheckpointMeta};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    pub batch_size: usize,
    pub grad_accum: usize,
    /// Optimizer steps in the whole run (the schedule's length).
    pub max_steps: u64,
    pub lr: f64,
    pub warmup_steps: u64,
    pub min_lr_ratio: f64,
    pub adamw: AdamWConfig,
    /// Global gradient-norm clip (0 = none).
    pub clip_norm: f64,
    pub eval_every: u64,
    /// Stop after this many evaluations without improvement (None: never).
    pub patience: Option<u64>,
    /// Also stop after this many evaluations without a lower dev loss (None: never): the
    /// overfitting signal, which a noisy metric such as MCC can hide. Absent from older states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_patience: Option<u64>,
    /// Metric that selects the best checkpoint and drives early stopping (e.g. `dev_mcc`).
    pub metric: String,
    pub maximize: bool,
    pub seed: u64,
}

/// Where a run writes: `<dir>/best.*`, `<dir>/last.*`, `<dir>/metrics.tsv`.
pub struct RunPaths {
    pub dir: PathBuf,
}

impl RunPaths {
    pub fn best(&self) -> PathBuf {
        self.dir.join("best.safetensors")
    }
    pub fn last(&self) -> PathBuf {
        self.dir.join("last.safetensors")
    }
    pub fn metrics(&self) -> PathBuf {
        self.dir.join("metrics.tsv")
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct TrainSummary {
    pub steps: u64,
    pub best_step: u64,
    pub best_value: Option<f64>,
    pub early_stopped: bool,
    /// Stopped by `stop_after` (resumable).
    pub paused: bool,
    pub seconds: f64,
}

fn mix(seed: u64, a: u64, b: u64) -> u64 {
    // SplitMix64 over the three numbers: independent-looking streams per (step, micro-batch).
    let mut z = seed ^ a.wrapping_mul(0x9E3779B97F4A7C15) ^ b.wrapping_mul(0xD1B54A32D192ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

/// The training-record order of epoch `epoch`.
pub fn epoch_order(n: usize, seed: u64, epoch: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(mix(seed, epoch, 0x5eed)));
    order
}

/// The training log's header: the fixed columns, then the task's metrics.
fn log_header(metric_names: &[String]) -> String {
    let mut h: Vec<String> = ["step", "epoch", "loss", "lr", "grad_norm", "examples_per_s"]
        .into_iter()
        .map(String::from)
        .collect();
    h.extend(metric_names.iter().cloned());
    h.join("\t")
}

/// One step's log row; `[loss, lr, grad_norm, examples_per_s]`, then the metrics when the step
/// evaluated (`NA` for one the evaluation lacks), empty cells when it did not.
fn log_row(
    state: &TrainerState,
    [loss, lr, grad_norm, rate]: [f64; 4],
    evaluated: bool,
    metrics: &BTreeMap<String, f64>,
    metric_names: &[String],
) -> String {
    let mut row = format!(
        "{}\t{}\t{loss:.6}\t{lr:.6e}\t{grad_norm:.4}\t{rate:.1}",
        state.step, state.epoch
    );
    for m in metric_names {
        match (evaluated, metrics.get(m)) {
            (true, Some(v)) => row.push_str(&format!("\t{v:.6}")),
            (true, None) => row.push_str("\tNA"),
            (false, _) => row.push('\t'),
        }
    }
    row
}

pub struct Trainer<'a> {
    pub config: TrainConfig,
    pub varmap: &'a VarMap,
    /// Names of the parameters the optimizer updates (a frozen encoder's are left out).
    pub trainable: Vec<String>,
    /// Metadata template of the checkpoints written (step and metrics are filled in).
    pub meta: CheckpointMeta,
    pub paths: RunPaths,
    /// Pause (with a resumable checkpoint) after this many optimizer steps.
    pub stop_after: Option<u64>,
    /// Progress lines on stderr.
    pub verbose: bool,
}

struct LogRow {
    text: String,
}

impl LogRow {
    /// The step in the row's first column.
    fn step(&self) -> Option<u64> {
        self.text.split('\t').next()?.parse().ok()
    }
}

impl Trainer<'_> {
    fn vars(&self) -> Result<Vec<(String, Var)>> {
        let data = self.varmap.data().lock().expect("var map lock");
        self.trainable
            .iter()
            .map(|n| {
                Ok((
                    n.clone(),
                    data.get(n)
                        .with_context(|| format!("internal: no parameter {n}"))?
                        .clone(),
                ))
            })
            .collect()
    }

    /// Runs (or resumes, from `resume` = a `last.safetensors` whose weights are already loaded
    /// into the var map) the training loop.
    pub fn run(&self, task: &dyn TrainTask, resume: Option<&Path>) -> Result<TrainSummary> {
        let cfg = &self.config;
        let metric_names = self.check_run(task)?;
        let n = task.train_len();
        let vars = self.vars()?;
        let var_ids: Vec<(String, Var)> = vars.clone();
        let mut opt = AdamW::new(vars, cfg.adamw)?;
        let schedule = WarmupCosine {
            peak_lr: cfg.lr,
            warmup_steps: cfg.warmup_steps,
            total_steps: cfg.max_steps,
            min_lr_ratio: cfg.min_lr_ratio,
        };
        let mut state = TrainerState::fresh(cfg);
        let mut log: Vec<LogRow> = Vec::new();
        if let Some(r) = resume {
            state = self.load_state(r, &mut opt)?;
            log = self.resumed_log(r, state.step)?;
        }
        let header = log_header(&metric_names);
        if resume.is_none() && task.evaluate_before_training() && !metric_names.is_empty() {
            self.evaluate_at_start(task, &metric_names, &header, &mut state, &mut log)?;
        }
        let start = Instant::now();
        let bar = luminome_cli::step_bar(cfg.max_steps, state.step, !self.verbose);
        let mut order = task.arrange_epoch(epoch_order(n, cfg.seed, state.epoch), cfg.batch_size);
        // A run stopped after saving the evaluation that ended it early has nothing left to do.
        let mut early_stopped = resume.is_some() && cfg.stops_early(&state);
        let mut paused = false;
        while !early_stopped && state.step < cfg.max_steps {
            if self.stop_after.is_some_and(|s| state.step >= s) {
                paused = true;
                break;
            }
            let t0 = Instant::now();
            let (loss, examples, mut acc) =
                self.accumulate(task, &mut state, &mut order, &var_ids, &header, &log)?;
            let grad_norm = clip_grad_norm(&mut acc, cfg.clip_norm)?;
            if !grad_norm.is_finite() {
                return Err(self.stop_on_nan(&header, &log, state.step + 1, "gradient norm"));
            }
            let lr = schedule.lr(state.step + 1);
            opt.step(&acc, lr)?;
            state.step += 1;
            state.optimizer_steps = opt.steps();
            let rate = examples as f64 / t0.elapsed().as_secs_f64().max(1e-9);
            let evaluate = state.step.is_multiple_of(cfg.eval_every) || state.step == cfg.max_steps;
            let metrics = if evaluate {
                task.evaluate()?
            } else {
                BTreeMap::new()
            };
            let row = log_row(
                &state,
                [loss, lr, grad_norm, rate],
                evaluate,
                &metrics,
                &metric_names,
            );
            log.push(LogRow { text: row });
            bar.set_position(state.step);
            bar.set_message(format!("loss {loss:.4}"));
            if self.verbose && (evaluate || state.step.is_multiple_of(50)) {
                let shown: Vec<String> =
                    metrics.iter().map(|(k, v)| format!("{k} {v:.4}")).collect();
                let line = format!(
                    "step {}/{} loss {loss:.4} lr {lr:.2e} {rate:.0} ex/s {}",
                    state.step,
                    cfg.max_steps,
                    shown.join(" ")
                );
                if bar.is_hidden() {
                    eprintln!("{line}");
                } else {
                    bar.println(line);
                }
            }
            if !evaluate && self.stop_after == Some(state.step) {
                // Pausing between evaluations: a resumable checkpoint, without an evaluation
                // that the uninterrupted run would not have made.
                self.write_log(&header, &log)?;
                self.save(&self.paths.last(), &state, &metrics, Some(&opt))?;
            }
            if evaluate {
                let no_metric = metric_names.is_empty();
                early_stopped =
                    self.after_evaluation(&mut state, &metrics, no_metric, &header, &log, &opt)?;
            }
        }
        bar.finish_and_clear();
        self.write_log(&header, &log)?;
        Ok(TrainSummary {
            steps: state.step,
            best_step: state.best_step,
            best_value: state.best_value,
            early_stopped,
            paused,
            seconds: start.elapsed().as_secs_f64(),
        })
    }

    /// Refuses a configuration or task the loop cannot run; the task's metric names.
    fn check_run(&self, task: &dyn TrainTask) -> Result<Vec<String>> {
        let cfg = &self.config;
        if cfg.batch_size == 0 || cfg.grad_accum == 0 || cfg.max_steps == 0 || cfg.eval_every == 0 {
            bail!("batch size, gradient accumulation, steps and eval interval must be positive");
        }
        if task.train_len() == 0 {
            bail!("the training set is empty");
        }
        let metric_names = task.metric_names();
        if !metric_names.is_empty() && !metric_names.contains(&cfg.metric) {
            bail!(
                "--metric {}: not a metric of this task (choose from {})",
                cfg.metric,
                metric_names.join(", ")
            );
        }
        Ok(metric_names)
    }

    /// One optimizer step's micro-batches, drawn from `order` at the state's cursor (a new
    /// epoch's order when it runs out): their mean loss, their examples and the accumulated
    /// gradients. A non-finite loss stops the run.
    fn accumulate(
        &self,
        task: &dyn TrainTask,
        state: &mut TrainerState,
        order: &mut Vec<usize>,
        var_ids: &[(String, Var)],
        header: &str,
        log: &[LogRow],
    ) -> Result<(f64, usize, HashMap<String, Tensor>)> {
        let cfg = &self.config;
        let n = task.train_len();
        let mut acc: HashMap<String, Tensor> = HashMap::new();
        let mut loss_sum = 0f64;
        let mut examples = 0usize;
        for micro in 0..cfg.grad_accum {
            if state.cursor >= n {
                state.epoch += 1;
                state.cursor = 0;
                *order = task.arrange_epoch(epoch_order(n, cfg.seed, state.epoch), cfg.batch_size);
            }
            let end = (state.cursor + cfg.batch_size).min(n);
            let records = &order[state.cursor..end];
            state.cursor = end;
            let loss = task.train_loss(records, mix(cfg.seed, state.step, micro as u64 + 1))?;
            let value = loss.to_dtype(candle_core::DType::F64)?.to_scalar::<f64>()?;
            if !value.is_finite() {
                return Err(self.stop_on_nan(header, log, state.step + 1, "loss"));
            }
            loss_sum += value;
            examples += records.len();
            let grads = (loss / cfg.grad_accum as f64)?.backward()?;
            for (name, var) in var_ids {
                if let Some(g) = grads.get(var.as_tensor()) {
                    let g = match acc.remove(name) {
                        Some(prev) => (prev + g)?,
                        None => g.clone(),
                    };
                    acc.insert(name.clone(), g);
                }
            }
        }
        Ok((loss_sum / cfg.grad_accum as f64, examples, acc))
    }

    /// After an evaluation: the early-stopping counters, then the best checkpoint (when it
    /// improved), the log and the last pair; whether the run stops early here.
    fn after_evaluation(
        &self,
        state: &mut TrainerState,
        metrics: &BTreeMap<String, f64>,
        no_metric: bool,
        header: &str,
        log: &[LogRow],
        opt: &AdamW,
    ) -> Result<bool> {
        let cfg = &self.config;
        let value = metrics.get(&cfg.metric).copied().filter(|v| v.is_finite());
        let improved = match (value, state.best_value) {
            (Some(v), Some(b)) => {
                if cfg.maximize {
                    v > b
                } else {
                    v < b
                }
            }
            (Some(_), None) => true,
            // No dev metric: the latest weights are the best we know.
            (None, _) => no_metric,
        };
        if improved {
            state.best_value = value;
            state.best_step = state.step;
            state.evals_since_best = 0;
        } else {
            state.evals_since_best += 1;
        }
        if let (Some(_), Some(&loss)) = (cfg.loss_patience, metrics.get("dev_loss")) {
            state.watch_dev_loss(loss);
        }
        // Best, log, then the last pair: a run killed at any point resumes from the last pair
        // it finished and rewrites the rest with the same bytes (the log is cut back to the
        // resumed step, a best of a later step is rewritten).
        if improved {
            self.save(&self.paths.best(), state, metrics, None)?;
        }
        self.write_log(header, log)?;
        self.save(&self.paths.last(), state, metrics, Some(opt))?;
        if cfg.loss_stalled(state) {
            if self.verbose {
                eprintln!(
                    "early stop at step {}: dev_loss has not improved for {} evaluations (best checkpoint: step {}, by {})",
                    state.step,
                    state.dev_loss_watch.map_or(0, |w| w.evals_since_best),
                    state.best_step,
                    cfg.metric
                );
            }
            return Ok(true);
        }
        if cfg.metric_stalled(state) {
            if self.verbose {
                eprintln!(
                    "early stop at step {}: {} has not improved for {} evaluations (best {} at step {})",
                    state.step,
                    cfg.metric,
                    state.evals_since_best,
                    state.best_value.map_or("none".to_string(), |v| format!("{v:.6}")),
                    state.best_step
                );
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// The error of a run the NaN guard stops, after leaving the run folder as it says: with a
    /// checkpoint written, that checkpoint and the log up to it (the curve that diverged);
    /// without one, nothing at all — a log alone is not a run, and the folder this run created
    /// is removed with the other leftovers on exit.
    fn stop_on_nan(&self, header: &str, log: &[LogRow], step: u64, what: &str) -> anyhow::Error {
        let last = self.paths.last();
        let dir = self.paths.dir.display();
        let kept = match crate::checkpoint::read_checkpoint_meta(&last) {
            Ok(m) => match self.write_log(header, log) {
                Ok(()) => format!(
                    "left in {dir}: the last good checkpoint {} (step {}) and metrics.tsv up to \
                     the last evaluation",
                    last.display(),
                    m.step
                ),
                Err(e) => return e,
            },
            Err(_) => format!("before any checkpoint, so nothing was written to {dir}"),
        };
        anyhow::anyhow!(
            "training stopped: the {what} became NaN or infinite at step {step}, {kept}. Try a \
             lower --lr, stronger --clip-norm or a longer --warmup"
        )
    }

    /// Step 0: the dev metrics of the weights as set up, logged and kept as the best so far
    /// (a family whose starting point is already a fitted model asks for this, so training can
    /// only improve on it).
    fn evaluate_at_start(
        &self,
        task: &dyn TrainTask,
        metric_names: &[String],
        header: &str,
        state: &mut TrainerState,
        log: &mut Vec<LogRow>,
    ) -> Result<()> {
        let metrics = task.evaluate()?;
        let mut row = String::from("0\t0\tNA\t0\tNA\tNA");
        for m in metric_names {
            match metrics.get(m) {
                Some(v) => row.push_str(&format!("\t{v:.6}")),
                None => row.push_str("\tNA"),
            }
        }
        log.push(LogRow { text: row });
        let value = metrics
            .get(&self.config.metric)
            .copied()
            .filter(|v| v.is_finite());
        if let Some(v) = value {
            state.best_value = Some(v);
            state.best_step = 0;
            self.save(&self.paths.best(), state, &metrics, None)?;
        }
        if self.verbose {
            let shown: Vec<String> = metrics.iter().map(|(k, v)| format!("{k} {v:.4}")).collect();
            eprintln!("step 0 (before training): {}", shown.join(" "));
        }
        self.write_log(header, log)
    }

    fn save(
        &self,
        dest: &Path,
        state: &TrainerState,
        metrics: &BTreeMap<String, f64>,
        opt: Option<&AdamW>,
    ) -> Result<()> {
        let mut meta = self.meta.clone();
        meta.step = state.step;
        meta.metrics = metrics.clone();
        let files = prepare_checkpoint(dest, &meta, self.varmap)?;
        let Some(opt) = opt else {
            return luminome_io::temps::commit_section(|| {
                files.into_iter().try_for_each(|f| f.commit())
            });
        };
        let state = TrainerState {
            weights_crc32: Some(weights_checksum(self.varmap)?),
            ..state.clone()
        };
        let state_file = write_state(&pending_state_path(dest), &state, opt)?;
        // The new state under its pending name, the weights, then the state into place, with no
        // SIGINT/SIGTERM in between. A SIGKILL at any point leaves a pair resume takes: the old
        // weights and state (a stale pending state is ignored), or the new weights and the
        // pending state (read_matching_state), or the new pair.
        luminome_io::temps::commit_section(|| {
            state_file.commit()?;
            files.into_iter().try_for_each(|f| f.commit())?;
            promote_pending_state(dest)
        })
    }

    fn load_state(&self, ckpt: &Path, opt: &mut AdamW) -> Result<TrainerState> {
        let ckpt_step = crate::checkpoint::read_checkpoint_meta(ckpt)?.step;
        let (state, tensors, sp) =
            read_matching_state(ckpt, ckpt_step, self.varmap, &self.varmap_device()?)?;
        // The state a run killed mid-commit left pending: finish that commit, so the folder
        // holds a plain pair again even when nothing is left to train.
        if sp == pending_state_path(ckpt) {
            promote_pending_state(ckpt)?;
        }
        opt.load_state(&tensors, state.optimizer_steps, &sp)?;
        Ok(state)
    }

    /// The log of the run `ckpt` (its step `step`) belongs to, up to that step: from this run's
    /// folder, else from the checkpoint's. A log that stops before the step is refused: the
    /// resumed run would lose the rows between.
    fn resumed_log(&self, ckpt: &Path, step: u64) -> Result<Vec<LogRow>> {
        let here = self.paths.metrics();
        let path = match here.exists() {
            true => here,
            false => ckpt.with_file_name("metrics.tsv"),
        };
        let log = read_log(&path, step).with_context(|| {
            format!("{}: cannot read the log of the resumed run", path.display())
        })?;
        let last = log.last().and_then(LogRow::step);
        if step > 0 && last != Some(step) {
            bail!(
                "{} ends at step {} but {} is the checkpoint of step {step}: the log and the checkpoint are not of the same point of the run, and resuming would lose the rows between",
                path.display(),
                last.map_or("0".to_string(), |s| s.to_string()),
                ckpt.display()
            );
        }
        Ok(log)
    }

    fn varmap_device(&self) -> Result<candle_core::Device> {
        let vars = self.varmap.all_vars();
        Ok(vars
            .first()
            .context("internal: the model has no parameters")?
            .device()
            .clone())
    }

    fn write_log(&self, header: &str, log: &[LogRow]) -> Result<()> {
        let mut w = AtomicWriter::create(self.paths.metrics())?;
        writeln!(w, "{header}")?;
        for r in log {
            writeln!(w, "{}", r.text)?;
        }
        w.commit()
    }
}

impl TrainConfig {
    /// Whether `--loss-patience` evaluations have passed without a lower dev loss.
    fn loss_stalled(&self, state: &TrainerState) -> bool {
        match (self.loss_patience, state.dev_loss_watch) {
            (Some(p), Some(w)) => w.evals_since_best >= p,
            _ => false,
        }
    }

    /// Whether `--patience` evaluations have passed without a better dev metric.
    fn metric_stalled(&self, state: &TrainerState) -> bool {
        self.patience.is_some_and(|p| state.evals_since_best >= p)
    }

    /// Whether the run saved in `state` had stopped early.
    fn stops_early(&self, state: &TrainerState) -> bool {
        self.loss_stalled(state) || self.metric_stalled(state)
    }
}

/// The log rows of an earlier run up to `step` (to continue its log on resume).
fn read_log(path: &Path, step: u64) -> Result<Vec<LogRow>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .skip(1)
        .map(|l| LogRow {
            text: l.to_string(),
        })
        .filter(|r| r.step().is_some_and(|s| s <= step))
        .collect())
}
