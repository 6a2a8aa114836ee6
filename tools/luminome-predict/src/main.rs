use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = luminome_predict::args::PredictArgs::parse();
    luminome_cli::run_main("luminome-predict", || luminome_predict::run(&args))
}
