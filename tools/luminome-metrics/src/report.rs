//! All classification metrics at once, from true classes and class probabilities, as the rows
//! a metrics TSV holds.

use crate::ranking::{auroc, average_precision, one_vs_rest_macro};
use crate::{ConfusionMatrix, MetricsError};

/// Index of the largest value (the first one on ties): the predicted class.
pub fn argmax(row: &[f64]) -> usize {
    let mut best = 0;
    for (k, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = k;
        }
    }
    best
}

/// Metrics of one classifier on one labelled set. For two classes the positive class is 1;
/// for more, the threshold-free metrics are one-vs-rest macro means and the rates are macro
/// means over classes (see the crate documentation for every definition).
#[derive(Debug, Clone)]
pub struct ClassificationMetrics {
    pub n_classes: usize,
    pub n_examples: usize,
    pub confusion: ConfusionMatrix,
    pub accuracy: f64,
    /// `None` when a class has no positives or no negatives in the labels.
    pub auroc: Option<f64>,
    /// `None` when a class has no positives in the labels.
    pub auprc: Option<f64>,
    pub f1: f64,
    pub mcc: f64,
    pub sensitivity: f64,
    pub specificity: f64,
}

impl ClassificationMetrics {
    /// `labels[i]` is example i's true class; `probs` is row-major `[n, n_classes]`; the predicted
    /// class is the argmax of each row.
    pub fn compute(
        labels: &[usize],
        probs: &[f64],
        n_classes: usize,
    ) -> Result<Self, MetricsError> {
        if n_classes < 2 || labels.is_empty() {
            return Err(MetricsError::Empty);
        }
        if probs.len() != labels.len() * n_classes {
            return Err(MetricsError::LengthMismatch {
                labels: labels.len(),
                other: probs.len() / n_classes,
            });
        }
        let predicted: Vec<usize> = probs.chunks_exact(n_classes).map(argmax).collect();
        Self::from_predictions(labels, probs, &predicted, n_classes)
    }

    /// As [`ClassificationMetrics::compute`], two classes: class 1 is predicted when its
    /// probability is at least `threshold` (the argmax without one).
    pub fn compute_with_threshold(
        labels: &[usize],
        probs: &[f64],
        n_classes: usize,
        threshold: Option<f64>,
    ) -> Result<Self, MetricsError> {
        match threshold {
            Some(t) if n_classes == 2 && probs.len() == 2 * labels.len() => {
                let predicted: Vec<usize> = probs
                    .chunks_exact(2)
                    .map(|p| usize::from(p[1] >= t))
                    .collect();
                Self::from_predictions(labels, probs, &predicted, n_classes)
            }
            _ => Self::compute(labels, probs, n_classes),
        }
    }

    /// The metrics of given predicted classes (the threshold-free ones from `probs`).
    fn from_predictions(
        labels: &[usize],
        probs: &[f64],
        predicted: &[usize],
        n_classes: usize,
    ) -> Result<Self, MetricsError> {
        let confusion = ConfusionMatrix::from_predictions(labels, predicted, n_classes)?;
        let (auroc, auprc, f1, sensitivity, specificity) = if n_classes == 2 {
            let positive: Vec<bool> = labels.iter().map(|&l| l == 1).collect();
            let score: Vec<f64> = probs.iter().skip(1).step_by(2).copied().collect();
            (
                auroc(&positive, &score),
                average_precision(&positive, &score),
                confusion.f1(1),
                confusion.recall(1),
                confusion.recall(0),
            )
        } else {
            (
                one_vs_rest_macro(labels, probs, n_classes, auroc),
                one_vs_rest_macro(labels, probs, n_classes, average_precision),
                confusion.macro_f1(),
                confusion.macro_recall(),
                confusion.macro_specificity(),
            )
        };
        Ok(Self {
            n_classes,
            n_examples: labels.len(),
            accuracy: confusion.accuracy(),
            mcc: confusion.mcc(),
            confusion,
            auroc,
            auprc,
            f1,
            sensitivity,
            specificity,
        })
    }

    /// `(metric, value)` rows for a metrics TSV: values with 6 decimals, `NA` where undefined,
    /// then the confusion matrix as `confusion_true<t>_pred<p>` counts. Multi-class names carry
    /// their averaging (`f1_macro`, `auroc_ovr_macro`, ...).
    pub fn rows(&self) -> Vec<(String, String)> {
        let fmt = |v: f64| format!("{v:.6}");
        let opt = |v: Option<f64>| v.map(fmt).unwrap_or_else(|| "NA".into());
        let multi = self.n_classes > 2;
        let name =
            |binary: &str, multiclass: &str| if multi { multiclass } else { binary }.to_string();
        let mut rows = vec![
            ("n".to_string(), self.n_examples.to_string()),
            ("accuracy".into(), fmt(self.accuracy)),
            (name("auroc", "auroc_ovr_macro"), opt(self.auroc)),
            (name("auprc", "auprc_ovr_macro"), opt(self.auprc)),
            (name("f1", "f1_macro"), fmt(self.f1)),
            ("mcc".into(), fmt(self.mcc)),
            (
                name("sensitivity", "sensitivity_macro"),
                fmt(self.sensitivity),
            ),
            (
                name("specificity", "specificity_macro"),
                fmt(self.specificity),
            ),
        ];
        for t in 0..self.n_classes {
            for p in 0..self.n_classes {
                rows.push((
                    format!("confusion_true{t}_pred{p}"),
                    self.confusion.get(t, p).to_string(),
                ));
            }
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_report_uses_class_one_as_positive() {
        // p(class 1): 0.9 0.6 0.4 | 0.7 0.2 0.1 ; truth 1 1 1 | 0 0 0.
        let p1 = [0.9, 0.6, 0.4, 0.7, 0.2, 0.1];
        let probs: Vec<f64> = p1.iter().flat_map(|&p| [1.0 - p, p]).collect();
        let m = ClassificationMetrics::compute(&[1, 1, 1, 0, 0, 0], &probs, 2).unwrap();
        // Predictions 1 1 0 | 1 0 0 → TP 2, FN 1, FP 1, TN 2.
        assert_eq!(m.confusion.get(1, 1), 2);
        assert!((m.accuracy - 4.0 / 6.0).abs() < 1e-12);
        assert!((m.sensitivity - 2.0 / 3.0).abs() < 1e-12);
        assert!((m.specificity - 2.0 / 3.0).abs() < 1e-12);
        // Positive wins: 0.9 beats 3, 0.6 beats 2 (loses to 0.7), 0.4 beats 2 → 7/9.
        assert!((m.auroc.unwrap() - 7.0 / 9.0).abs() < 1e-12);
        // MCC (4 − 1) / sqrt(3·3·3·3) = 3/9.
        assert!((m.mcc - 1.0 / 3.0).abs() < 1e-12);
        let rows = m.rows();
        assert_eq!(rows[2], ("auroc".to_string(), "0.777778".to_string()));
        assert!(rows.contains(&("confusion_true0_pred1".to_string(), "1".to_string())));
    }

    #[test]
    fn multiclass_report_names_its_averaging_and_writes_na_when_undefined() {
        // Class 2 never occurs in the labels: AUROC/AUPRC one-vs-rest are undefined for it.
        let probs = [0.7, 0.2, 0.1, 0.1, 0.8, 0.1];
        let m = ClassificationMetrics::compute(&[0, 1], &probs, 3).unwrap();
        let rows = m.rows();
        assert!(rows.contains(&("auroc_ovr_macro".to_string(), "NA".to_string())));
        assert!(rows.contains(&("f1_macro".to_string(), "1.000000".to_string())));
        assert_eq!(
            rows.iter()
                .filter(|r| r.0.starts_with("confusion_"))
                .count(),
            9
        );
    }

    #[test]
    fn argmax_takes_the_first_of_tied_maxima() {
        assert_eq!(argmax(&[0.5, 0.5]), 0);
        assert_eq!(argmax(&[0.1, 0.3, 0.6]), 2);
    }

    #[test]
    fn mismatched_shapes_are_errors() {
        assert!(ClassificationMetrics::compute(&[0, 1], &[0.5, 0.5], 2).is_err());
        assert!(ClassificationMetrics::compute(&[], &[], 2).is_err());
    }
}
