use clap::Parser;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let args = luminome_mask_pairs::args::Args::parse();
    luminome_cli::run_main("luminome-mask-pairs", || {
        luminome_mask_pairs::run(&args).map(|_| ())
    })
}
