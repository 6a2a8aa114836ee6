//! `luminome-train`: trains Luminome models. Subcommands: `mlm` (masked-LM pretraining of the
//! encoder) and `classify` (sequence classification with one of four adapters).

pub mod args;
pub mod classify;
pub mod mlm;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "luminome-train",
    version,
    about = "Train Luminome models on token datasets"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Masked-LM pretraining of a transformer encoder (BERT: 15 % of tokens; 80 % [MASK],
    /// 10 % random, 10 % unchanged).
    #[command(after_long_help = mlm::EXAMPLE)]
    Mlm(mlm::MlmArgs),
    /// Sequence classification: encoder + LinearCLS / LinearMeanPool / LinearMaxPool /
    /// DynamicGated adapter, from scratch or from an MLM checkpoint.
    #[command(after_long_help = classify::EXAMPLE)]
    Classify(classify::ClassifyArgs),
}

/// Sets the thread count for rayon and candle's matrix multiplications (both read
/// RAYON_NUM_THREADS); must run before either starts its pool.
pub fn set_threads(threads: Option<usize>) {
    if let Some(n) = threads.filter(|&n| n > 0) {
        std::env::set_var("RAYON_NUM_THREADS", n.to_string());
        // The global pool may already exist (tests); then the environment variable still
        // governs candle's gemm.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global();
    }
}

pub fn run(cli: Cli) -> Result<()> {
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    match cli.command {
        Command::Mlm(a) => mlm::run(a, &command_line),
        Command::Classify(a) => classify::run(a, &command_line),
    }
}
