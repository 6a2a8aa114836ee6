use clap::Parser;
use luminome_tokenize::cli::{run, Args};

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("luminome-tokenize: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
