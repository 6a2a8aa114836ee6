//! `luminome-train`: trains every Luminome model family. Each subcommand's arguments and setup
//! live in its family's folder in the engine (`luminome_engine::models::<family>::setup`); this
//! crate lists them, one line each.

pub mod device_check;

use anyhow::Result;
use clap::{Parser, Subcommand};
use luminome_engine::train::run;

#[derive(Parser, Debug)]
#[command(name = "luminome-train", version, about = "Train Luminome models")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Declares the subcommands (one line per family: name in the enum, its arguments' type, and the
/// function that runs it: the engine's generic step trainer, or the family's own fit).
macro_rules! train_commands {
    ($($variant:ident($args:ty) => $runner:path,)+) => {
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
    };
}

train_commands! {
    Mlm(luminome_engine::models::mlm::MlmArgs) => run,
    Classify(luminome_engine::models::classifier::ClassifyArgs) => run,
    BagOfTokens(luminome_engine::models::bag_of_tokens::BagOfTokensArgs) => run,
    KmerLinear(luminome_engine::models::kmer_linear::KmerLinearArgs) => luminome_engine::models::kmer_linear::run,
    Bistrand(luminome_engine::models::bistrand::BiStrandArgs) => run,
    RegionPretrain(luminome_engine::models::region_pretrain::RegionPretrainArgs) => run,
    Expression(luminome_engine::models::expression::ExpressionArgs) => run,
    Tabular(luminome_engine::models::tabular::TabularArgs) => luminome_engine::models::tabular::run,
    Dual(luminome_engine::models::dual::DualArgs) => run,
}

pub fn run_cli(cli: Cli) -> Result<()> {
    run_command(&cli.command, &luminome_cli::command_line())
}
