use clap::Parser;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let args = luminome_mask_pairs::args::Args::parse();
    match luminome_mask_pairs::run(&args) {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("luminome-mask-pairs: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
