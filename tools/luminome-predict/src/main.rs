use clap::Parser;

fn main() {
    let args = luminome_predict::args::PredictArgs::parse();
    if let Err(e) = luminome_predict::run(&args) {
        eprintln!("luminome-predict: error: {e:#}");
        std::process::exit(1);
    }
}
