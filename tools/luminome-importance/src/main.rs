use clap::Parser;

fn main() {
    let args = luminome_importance::args::ImportanceArgs::parse();
    if let Err(e) = luminome_importance::run(&args) {
        eprintln!("luminome-importance: error: {e:#}");
        std::process::exit(1);
    }
}
