//! `luminome-regions`: parse the command line and run the pipeline (the logic is in the library).

use clap::Parser;
use luminome_regions::args::Args;
use luminome_regions::pipeline;

fn main() {
    let args = Args::parse();
    luminome_cli::set_threads(args.threads);
    let result = (|| -> anyhow::Result<()> {
        let cfg = args.into_config(luminome_cli::command_line())?;
        pipeline::run(&cfg)?;
        Ok(())
    })();
    if let Err(e) = result {
        eprintln!("luminome-regions: error: {e:#}");
        std::process::exit(1);
    }
}
