use clap::Parser;
use luminome_tokenize::args::{run, Args};

// Rows are allocated on the reading thread and freed on the writing one; glibc's allocator
// trims and re-faults its heap on that pattern, mimalloc does not.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    luminome_cli::run_main("luminome-tokenize", || run(&args).map(|_| ()))
}
