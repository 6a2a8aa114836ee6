//! The dev metrics of every classification task (token classifiers, tabular models, the k-mer
//! floor's penalty search): cross-entropy and `luminome_metrics::ClassificationMetrics`, under
//! the names training logs and `--metric` use.

use std::collections::BTreeMap;

use anyhow::Result;
use luminome_metrics::ClassificationMetrics;

/// Cross-entropy and metrics of probabilities against classes.
pub fn score(
    probs: &[f64],
    classes: &[u32],
    num_classes: usize,
) -> Result<(f64, ClassificationMetrics)> {
    let labels: Vec<usize> = classes.iter().map(|&k| k as usize).collect();
    let loss = labels
        .iter()
        .enumerate()
        .map(|(i, &k)| -(probs[i * num_classes + k].max(1e-12)).ln())
        .sum::<f64>()
        / labels.len().max(1) as f64;
    let m = ClassificationMetrics::compute(&labels, probs, num_classes)
        .map_err(|e| anyhow::anyhow!("cannot compute metrics: {e}"))?;
    Ok((loss, m))
}

/// The names [`dev_metrics`] gives, in log-column order.
pub fn dev_metric_names() -> Vec<String> {
    ["dev_loss", "dev_accuracy", "dev_auroc", "dev_f1", "dev_mcc"]
        .map(String::from)
        .to_vec()
}

/// The dev metrics of a classification, by the names training runs use.
pub fn dev_metrics(loss: f64, m: &ClassificationMetrics) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    out.insert("dev_loss".into(), loss);
    out.insert("dev_accuracy".into(), m.accuracy);
    out.insert("dev_auroc".into(), m.auroc.unwrap_or(f64::NAN));
    out.insert("dev_f1".into(), m.f1);
    out.insert("dev_mcc".into(), m.mcc);
    out
}
