//! `luminome-train`: trains every Luminome model family. Each subcommand's arguments and setup
//! live in its family's folder in the engine (`luminome_engine::models::<family>::setup`); this
//! crate lists them, one line each.

pub mod device_check;

use anyhow::Result;
use candle_core::Device;
use clap::{Parser, Subcommand};
use luminome_engine::models::tabular::TabularArgs;
use luminome_engine::models::Registered;
use luminome_engine::train::{run, TrainCommand, TrainingSetup};

#[derive(Parser, Debug)]
#[command(name = "luminome-train", version, about = "Train Luminome models")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Declares the subcommands, one line per family: name in the enum, its arguments' type, the
/// family's config (a registered family without a subcommand fails `tests/registry.rs`), the
/// function that runs it (the engine's generic step trainer, or the family's own) and what the
/// device check builds from it: `steps` (the `TrainCommand` setup), `no_steps` (a closed-form fit
/// with no device path) or a function giving the setup of the first of several runs.
macro_rules! train_commands {
    ($($variant:ident($args:ty) for $config:ty => $runner:path, $steps:ident,)+) => {
        #[derive(Subcommand, Debug)]
        pub enum Command {
            $($variant($args),)+
        }

        /// Runs the parsed command.
        pub fn run_command(command: &Command, command_line: &str) -> Result<()> {
            match command {
                $(Command::$variant(a) => $runner(a, command_line),)+
            }
        }

        impl Command {
            /// The `kind` of the family this subcommand trains.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Command::$variant(_) => <$config as Registered>::KIND,)+
                }
            }

            /// The setup of a family trained by optimizer steps (the first run's, for a
            /// command that makes several), nothing written; `None` for a closed-form fit.
            pub fn step_setup(&self, device: &Device) -> Option<Result<TrainingSetup>> {
                match self {
                    $(Command::$variant(a) => step_setup!($steps, a, device),)+
                }
            }
        }

        /// The `kind` of every family a subcommand trains.
        pub fn trained_kinds() -> Vec<&'static str> {
            vec![$(<$config as Registered>::KIND,)+]
        }

        /// The `kind` of every family fitted in closed form (no optimizer steps, no device path).
        pub fn closed_form_kinds() -> Vec<&'static str> {
            let mut kinds = Vec::new();
            $(if closed_form!($steps) {
                kinds.push(<$config as Registered>::KIND);
            })+
            kinds
        }
    };
}

macro_rules! step_setup {
    (steps, $args:expr, $device:expr) => {
        Some($args.setup($device))
    };
    (no_steps, $args:expr, $device:expr) => {{
        let _ = ($args, $device);
        None
    }};
    ($first_run:ident, $args:expr, $device:expr) => {
        Some($first_run($args, $device))
    };
}

macro_rules! closed_form {
    (no_steps) => {
        true
    };
    ($other:ident) => {
        false
    };
}

/// Tabular training plans its runs itself (folds, splits); its first run is what is checked.
fn tabular_first_run(args: &TabularArgs, device: &Device) -> Result<TrainingSetup> {
    luminome_engine::models::tabular::first_setup(args, device)
}

use luminome_engine::models::*;

train_commands! {
    Mlm(mlm::MlmArgs) for mlm::MlmConfig => run, steps,
    Classify(classifier::ClassifyArgs) for classifier::ClassifierConfig => run, steps,
    BagOfTokens(bag_of_tokens::BagOfTokensArgs) for bag_of_tokens::BagOfTokensConfig => run, steps,
    KmerLinear(kmer_linear::KmerLinearArgs) for kmer_linear::KmerLinearConfig => kmer_linear::run, no_steps,
    Bistrand(bistrand::BiStrandArgs) for bistrand::BiStrandConfig => run, steps,
    RegionPretrain(region_pretrain::RegionPretrainArgs) for region_pretrain::RegionPretrainConfig => run, steps,
    Expression(expression::ExpressionArgs) for expression::ExpressionConfig => run, steps,
    Tabular(tabular::TabularArgs) for tabular::TabularConfig => tabular::run, tabular_first_run,
    Dual(dual::DualArgs) for dual::DualConfig => run, steps,
}

pub fn run_cli(cli: Cli) -> Result<()> {
    run_command(&cli.command, &luminome_cli::command_line())
}
