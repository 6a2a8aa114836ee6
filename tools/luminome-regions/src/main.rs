//! `luminome-regions`: parse the command line and run the pipeline (the logic is in the library).

use clap::Parser;
use luminome_regions::args::Args;
use luminome_regions::pipeline;

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    luminome_cli::set_threads(args.threads);
    pipeline::QUIET.store(args.quiet, std::sync::atomic::Ordering::Relaxed);
    if !args.gather.is_empty() {
        // The dataset records the command one run would have: this one without --gather PARTS.
        luminome_cli::record_command_without(luminome_cli::shard::is_gather_arg);
    }
    luminome_cli::run_main("luminome-regions", || {
        let cfg = args.into_config(luminome_cli::command_line())?;
        pipeline::run(&cfg)?;
        Ok(())
    })
}
