use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = luminome_train::Cli::parse();
    match luminome_train::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("luminome-train: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
