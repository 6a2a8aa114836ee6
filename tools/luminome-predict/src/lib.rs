//! `luminome-predict`: runs a trained model over a dataset, in batches, and writes one TSV line
//! per record; with labels, metrics from `luminome-metrics`.
//!
//! - [`args`]: the command line.
//! - [`input`]: opening a classifier checkpoint and a token dataset with every check done before
//!   output starts (model kind, vocabulary, length, labels); shared with `luminome-importance`.
//! - [`predictor`]: the [`predictor::Predictor`] trait each model family implements and the
//!   dispatch on the checkpoint's model kind.
//! - [`classify`]: sequence classifiers.
//!
//! Outputs are written under temporary names and renamed when everything succeeded.

pub mod args;
pub mod classify;
pub mod input;
pub mod predictor;
pub mod threads;

use std::io::Write;

use anyhow::{bail, Result};
use luminome_engine::parse_device;
use luminome_io::atomic::{check_output_dir, AtomicWriter};

use crate::args::PredictArgs;
use crate::predictor::open_predictor;

/// A progress bar on stderr, drawn only when stderr is a terminal and not `quiet`.
pub fn progress_bar(len: u64, quiet: bool) -> indicatif::ProgressBar {
    if quiet {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} records ({per_sec})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar
}

/// Runs the command.
pub fn run(args: &PredictArgs) -> Result<()> {
    if args.batch_size == 0 {
        bail!("--batch-size must be at least 1");
    }
    threads::set_threads(args.runtime.threads);
    check_output_dir(&args.output)?;
    if let Some(m) = &args.metrics {
        check_output_dir(m)?;
    }
    let device = parse_device(&args.runtime.device)?;
    let mut predictor = open_predictor(&args.checkpoint, &args.dataset, device)?;
    if args.metrics.is_some() && !predictor.has_truth() {
        bail!(
            "{}: --metrics needs true labels, and this dataset has none (tokenize with the label column)",
            args.dataset.display()
        );
    }
    let mut out = AtomicWriter::create(&args.output)?;
    let mut header = vec!["record".to_string(), "name".to_string()];
    header.extend(predictor.columns());
    writeln!(out, "{}", header.join("\t"))?;
    let n = predictor.len();
    let bar = progress_bar(n as u64, args.runtime.quiet);
    let records: Vec<usize> = (0..n).collect();
    for chunk in records.chunks(args.batch_size) {
        for row in predictor.predict(chunk)? {
            writeln!(
                out,
                "{}\t{}\t{}",
                row.record,
                row.name,
                row.values.join("\t")
            )?;
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    let metrics = predictor.metrics()?;
    let metrics_file = match (&args.metrics, &metrics) {
        (Some(path), Some(rows)) => {
            let mut w = AtomicWriter::create(path)?;
            writeln!(w, "metric\tvalue")?;
            for (k, v) in rows {
                writeln!(w, "{k}\t{v}")?;
            }
            Some(w)
        }
        _ => None,
    };
    out.commit()?;
    if let Some(w) = metrics_file {
        w.commit()?;
    }
    if !args.runtime.quiet {
        eprintln!("luminome-predict: {n} records → {}", args.output.display());
        if let Some(rows) = metrics {
            for (k, v) in rows.iter().filter(|(k, _)| !k.starts_with("confusion_")) {
                eprintln!("  {k}\t{v}");
            }
            let confusion: Vec<String> = rows
                .iter()
                .filter(|(k, _)| k.starts_with("confusion_"))
                .map(|(k, v)| format!("{}={v}", k.trim_start_matches("confusion_")))
                .collect();
            eprintln!("  confusion\t{}", confusion.join(" "));
        }
    }
    Ok(())
}
