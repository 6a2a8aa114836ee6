//! `luminome-regions`: parse the command line and run the pipeline (the logic is in the library).

use clap::Parser;
use luminome_regions::cli::Args;
use luminome_regions::pipeline;

fn main() {
    let args = Args::parse();
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let threads = args.threads;
    let result = (|| -> anyhow::Result<()> {
        let mut pool = rayon::ThreadPoolBuilder::new();
        if let Some(t) = threads {
            pool = pool.num_threads(t.max(1));
        }
        pool.build_global()?;
        let cfg = args.into_config(command_line)?;
        pipeline::run(&cfg)?;
        Ok(())
    })();
    if let Err(e) = result {
        eprintln!("luminome-regions: error: {e:#}");
        std::process::exit(1);
    }
}
