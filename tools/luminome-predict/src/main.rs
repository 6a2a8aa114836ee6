use clap::Parser;

// Inference allocates and frees the same large activations every batch: mimalloc keeps them
// for reuse (with `keep_freed_memory`, past its purge delay too); the system allocator maps
// and unmaps them, and the kernel zeroes every page again.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    luminome_cli::keep_freed_memory();
    luminome_cli::candle_elementwise_on_caller();
    let args = luminome_predict::args::PredictArgs::parse();
    luminome_cli::run_main("luminome-predict", || luminome_predict::run(&args))
}
