use clap::Parser;

// Training allocates and frees many large, short-lived tensors every step; the system allocator
// returns them to the kernel and page-faults them back in, mimalloc keeps them (and with
// `keep_freed_memory`, keeps them when a step outlasts its purge delay).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    luminome_cli::keep_freed_memory();
    luminome_cli::candle_elementwise_on_caller();
    let cli = luminome_train::Cli::parse();
    luminome_cli::run_main("luminome-train", || luminome_train::run_cli(cli))
}
