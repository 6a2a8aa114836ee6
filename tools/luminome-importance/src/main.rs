use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = luminome_importance::args::ImportanceArgs::parse();
    luminome_cli::run_main("luminome-importance", || luminome_importance::run(&args))
}
