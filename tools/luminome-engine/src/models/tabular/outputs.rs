//! What a tabular run writes besides its checkpoints: test predictions and metrics, and the
//! cross-validation tables.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use luminome_io::atomic::AtomicWriter;
use luminome_metrics::ClassificationMetrics;

use super::args::TabularArgs;

/// What one run produced on its test rows.
pub(super) struct TestResult {
    /// Rows of the table (the order predictions are written in).
    pub rows: Vec<usize>,
    pub ids: Vec<String>,
    pub classes: Vec<u32>,
    pub probs: Vec<f64>,
    /// The decision threshold of the model that predicted them.
    pub threshold: Option<f64>,
    pub metrics: ClassificationMetrics,
}

/// The predicted class of one row of probabilities.
pub fn predicted_class(probs: &[f64], threshold: Option<f64>) -> usize {
    match threshold {
        Some(t) if probs.len() == 2 => usize::from(probs[1] >= t),
        _ => luminome_metrics::argmax(probs),
    }
}

/// Writes predictions: sample, [fold], label, prob_<class>…, predicted.
pub(super) fn write_predictions(
    path: &Path,
    classes: &[String],
    parts: &[(Option<usize>, &TestResult)],
) -> Result<()> {
    let c = classes.len();
    let mut w = AtomicWriter::create(path)?;
    let with_fold = parts.iter().any(|(f, _)| f.is_some());
    let mut header = vec!["sample".to_string()];
    if with_fold {
        header.push("fold".into());
    }
    header.push("label".into());
    header.extend(classes.iter().map(|k| format!("prob_{k}")));
    header.push("predicted".into());
    writeln!(w, "{}", header.join("\t"))?;
    let mut lines: Vec<(usize, String)> = Vec::new();
    for (fold, r) in parts {
        for i in 0..r.ids.len() {
            let p = &r.probs[i * c..(i + 1) * c];
            let mut cells = vec![r.ids[i].clone()];
            if let Some(f) = fold {
                cells.push((f + 1).to_string());
            }
            cells.push(classes[r.classes[i] as usize].clone());
            cells.extend(p.iter().map(|v| format!("{v:.6}")));
            cells.push(classes[predicted_class(p, r.threshold)].clone());
            lines.push((r.rows[i], cells.join("\t")));
        }
    }
    lines.sort_by_key(|(row, _)| *row);
    for (_, l) in lines {
        writeln!(w, "{l}")?;
    }
    w.commit()
}

pub(super) fn write_metric_rows(path: &Path, rows: &[(String, String)]) -> Result<()> {
    let mut w = AtomicWriter::create(path)?;
    writeln!(w, "metric\tvalue")?;
    for (k, v) in rows {
        writeln!(w, "{k}\t{v}")?;
    }
    w.commit()
}

/// The metrics each fold reports and their mean ± sd.
const CV_METRICS: [&str; 7] = [
    "accuracy",
    "sensitivity",
    "specificity",
    "auroc",
    "f1",
    "mcc",
    "auprc",
];

fn cv_value(m: &ClassificationMetrics, name: &str) -> f64 {
    match name {
        "accuracy" => m.accuracy,
        "sensitivity" => m.sensitivity,
        "specificity" => m.specificity,
        "auroc" => m.auroc.unwrap_or(f64::NAN),
        "auprc" => m.auprc.unwrap_or(f64::NAN),
        "f1" => m.f1,
        _ => m.mcc,
    }
}

/// `cv_metrics.tsv` (fold, metric columns; then mean and sample sd over folds, `n_rows` the
/// table's rows) and
/// `cv_predictions.tsv` (every row, by the fold model that did not train on it).
pub(super) fn write_cv(
    args: &TabularArgs,
    k: usize,
    n_rows: usize,
    classes: &[String],
    results: &[Option<TestResult>],
) -> Result<()> {
    let results: Vec<&TestResult> = results.iter().flatten().collect();
    let mut w = AtomicWriter::create(args.output.join("cv_metrics.tsv"))?;
    writeln!(w, "fold\tn\t{}", CV_METRICS.join("\t"))?;
    for (f, r) in results.iter().enumerate() {
        let v: Vec<String> = CV_METRICS
            .iter()
            .map(|m| format!("{:.6}", cv_value(&r.metrics, m)))
            .collect();
        writeln!(w, "{}\t{}\t{}", f + 1, r.metrics.n_examples, v.join("\t"))?;
    }
    // (mean, sample sd) over the folds of each metric.
    let summary: Vec<(f64, f64)> = CV_METRICS
        .iter()
        .map(|m| {
            let v: Vec<f64> = results.iter().map(|r| cv_value(&r.metrics, m)).collect();
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let sd = if v.len() > 1 {
                (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
            } else {
                f64::NAN
            };
            (mean, sd)
        })
        .collect();
    let column = |pick: fn(&(f64, f64)) -> f64| -> String {
        summary
            .iter()
            .map(|s| format!("{:.6}", pick(s)))
            .collect::<Vec<_>>()
            .join("\t")
    };
    writeln!(w, "mean\t{n_rows}\t{}", column(|s| s.0))?;
    writeln!(w, "sd\t{n_rows}\t{}", column(|s| s.1))?;
    let parts: Vec<(Option<usize>, &TestResult)> = results
        .iter()
        .enumerate()
        .map(|(f, r)| (Some(f), *r))
        .collect();
    write_predictions(&args.output.join("cv_predictions.tsv"), classes, &parts)?;
    w.commit()?;
    if !args.runtime.quiet {
        eprintln!(
            "luminome-train tabular: {k}-fold CV: {} → {}",
            CV_METRICS
                .iter()
                .zip(&summary)
                .map(|(m, (mean, sd))| format!("{m} {mean:.4} ± {sd:.4}"))
                .collect::<Vec<_>>()
                .join(", "),
            args.output.join("cv_metrics.tsv").display()
        );
    }
    Ok(())
}
