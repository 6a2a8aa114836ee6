//! `luminome-train`: trains every Luminome model family. Each subcommand's arguments and setup
//! live in its family's folder in the engine (`luminome_engine::models::<family>::setup`); this
//! crate lists them, one line each.

use anyhow::Result;
use clap::{Parser, Subcommand};
use luminome_engine::train::run;

#[derive(Parser, Debug)]
#[command(name = "luminome-train", version, about = "Train Luminome models")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Declares the subcommands (one line per family: name in the enum, its arguments' type) and
/// the dispatch to the engine's generic run.
macro_rules! train_commands {
    ($($variant:ident($args:ty),)+) => {
        #[derive(Subcommand, Debug)]
        pub enum Command {
            $($variant($args),)+
        }

        /// Runs the parsed command.
        pub fn run_command(command: &Command, command_line: &str) -> Result<()> {
            match command {
                $(Command::$variant(a) => run(a, command_line),)+
            }
        }
    };
}

train_commands! {
    Mlm(luminome_engine::models::mlm::MlmArgs),
    Classify(luminome_engine::models::classifier::ClassifyArgs),
    BagOfTokens(luminome_engine::models::bag_of_tokens::BagOfTokensArgs),
    Bistrand(luminome_engine::models::bistrand::BiStrandArgs),
    RegionPretrain(luminome_engine::models::region_pretrain::RegionPretrainArgs),
    Expression(luminome_engine::models::expression::ExpressionArgs),
}

pub fn run_cli(cli: Cli) -> Result<()> {
    run_command(&cli.command, &luminome_cli::command_line())
}
