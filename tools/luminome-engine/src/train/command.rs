//! One training run of any family: the family's setup turns its arguments into a built model and
//! the task that trains it; everything else (threads, device, run folder, checkpoint metadata,
//! resume, the loop, the summary) is the same for every family and lives here.

use anyhow::{Context, Result};
use candle_core::Device;
use candle_nn::VarMap;

use super::args::{TrainArgs, TrainDefaults};
use super::state::read_state;
use super::task::TrainTask;
use super::trainer::{RunPaths, Trainer};
use crate::checkpoint::CheckpointMeta;
use crate::device::parse_device;
use crate::input::InputSpec;
use crate::models::ModelConfig;

/// A family's model, built (or loaded to resume) and ready to train, with its task.
pub struct TrainingSetup {
    /// The model's config, as checkpoints store it.
    pub config: ModelConfig,
    pub varmap: VarMap,
    pub task: Box<dyn TrainTask>,
    /// Parameters the optimizer updates, sorted (a frozen part is left out).
    pub trainable: Vec<String>,
    /// What the model reads, as checkpoints store it.
    pub input: InputSpec,
    /// Input files named in the checkpoints' metadata.
    pub sources: Vec<String>,
    /// The dev metric that selects the best checkpoint of a new run ("" without a dev set), and
    /// whether higher is better.
    pub metric: String,
    pub maximize: bool,
    /// What the run is, for the log ("adapter gated, 12345 parameters, ...").
    pub description: String,
    /// Defaults of the training flags the user did not give (small-data ones for small sets).
    pub train_defaults: TrainDefaults,
}

/// A `luminome-train` subcommand.
pub trait TrainCommand {
    /// The subcommand's name (`classify`).
    const NAME: &'static str;
    /// What is trained, for messages ("classifier").
    const WHAT: &'static str;

    fn train_args(&self) -> &TrainArgs;

    /// Opens and checks the data and builds the model and its task (for `--resume`, the model
    /// of the checkpoint). Runs before anything is written.
    fn setup(&self, device: &Device) -> Result<TrainingSetup>;
}

/// The files a training run writes in its folder.
pub const RUN_FILES: [&str; 6] = [
    "best.safetensors",
    "best.config.json",
    "last.safetensors",
    "last.config.json",
    "last.state.safetensors",
    "metrics.tsv",
];

/// Refuses a run folder whose files ([`RUN_FILES`] and `extra`) would replace one of the run's
/// inputs (`train --train run/best.safetensors -o run`).
pub fn check_run_outputs(dir: &std::path::Path, extra: &[&str], sources: &[String]) -> Result<()> {
    let outputs: Vec<std::path::PathBuf> =
        RUN_FILES.iter().chain(extra).map(|f| dir.join(f)).collect();
    let outputs: Vec<(&str, &std::path::Path)> =
        outputs.iter().map(|p| ("-o", p.as_path())).collect();
    let inputs: Vec<(&str, &std::path::Path)> = sources
        .iter()
        .map(|s| ("of this run,", std::path::Path::new(s.as_str())))
        .collect();
    luminome_io::atomic::check_outputs_distinct(&outputs, &inputs)
}

/// Runs a subcommand end to end.
pub fn run<C: TrainCommand + Sync>(cmd: &C, command_line: &str) -> Result<()> {
    let t = cmd.train_args();
    t.check()?;
    t.runtime.apply_threads();
    luminome_cli::on_pool(|| run_on_pool(cmd, command_line))
}

/// [`run`] from the thread pool on.
fn run_on_pool<C: TrainCommand + Sync>(cmd: &C, command_line: &str) -> Result<()> {
    let t = cmd.train_args();
    let device = parse_device(&t.runtime.device)?;
    let setup = cmd.setup(&device)?;
    // --resume continues last.safetensors in place, by design; every other input is protected.
    let inputs: Vec<String> = setup
        .sources
        .iter()
        .filter(|s| t.resume.as_deref() != Some(std::path::Path::new(s.as_str())))
        .cloned()
        .collect();
    check_run_outputs(&t.output, &[], &inputs)?;
    luminome_cli::prepare_output_dir(&t.output)?;
    let tool = format!("luminome-train {}", C::NAME);
    let meta = CheckpointMeta::new(
        setup.config.clone(),
        setup.input.clone(),
        setup.sources.clone(),
        &tool,
        command_line,
    );
    let train_config = match &t.resume {
        Some(r) => read_state(r, &Device::Cpu)?.0.config,
        None => t.train_config(&setup.metric, setup.maximize, &setup.train_defaults),
    };
    let metric = train_config.metric.clone();
    let trainer = Trainer {
        config: train_config,
        varmap: &setup.varmap,
        trainable: setup.trainable.clone(),
        meta,
        paths: RunPaths {
            dir: t.output.clone(),
        },
        stop_after: t.stop_after_steps,
        verbose: !t.runtime.quiet,
    };
    let quiet = t.runtime.quiet;
    if !quiet {
        eprintln!("{tool}: {}", setup.description);
    }
    let s = trainer
        .run(setup.task.as_ref(), t.resume.as_deref())
        .with_context(|| format!("{} training failed", C::WHAT))?;
    if !quiet {
        eprintln!(
            "done: {} steps in {:.1} s; best step {}{}{}{}",
            s.steps,
            s.seconds,
            s.best_step,
            match s.best_value {
                Some(v) => format!(" ({metric} {v:.6})"),
                None => String::new(),
            },
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
    setup.task.after_training(&trainer.paths, quiet)?;
    if !quiet {
        eprintln!("{}", where_and_next(C::NAME, &t.output, s.paused));
    }
    Ok(())
}

/// The run's last log line: the folder and the files it holds, and the command that uses them.
fn where_and_next(family: &str, dir: &std::path::Path, paused: bool) -> String {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let d = dir.display();
    let next = if paused {
        format!("luminome-train {family} ... --resume {d}/last.safetensors")
    } else {
        match family {
            "mlm" => format!("luminome-train classify --init {d}/best.safetensors ..."),
            "region-pretrain" => {
                format!("luminome-train expression --init {d}/best.safetensors ...")
            }
            _ => {
                format!("luminome-predict --checkpoint {d}/best.safetensors --dataset DATA -o OUT")
            }
        }
    };
    format!("outputs in {d}/: {}; next: {next}", files.join(", "))
}
