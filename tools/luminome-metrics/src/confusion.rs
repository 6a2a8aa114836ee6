//! The confusion matrix and every metric that depends only on hard predictions.

use crate::MetricsError;

/// Counts of (true class, predicted class) pairs: `counts[t * n_classes + p]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfusionMatrix {
    n_classes: usize,
    counts: Vec<u64>,
}

/// `num / den`, or 0 when `den` is 0 (sklearn's `zero_division=0`).
fn ratio(num: f64, den: f64) -> f64 {
    if den == 0.0 {
        0.0
    } else {
        num / den
    }
}

impl ConfusionMatrix {
    pub fn new(n_classes: usize) -> Self {
        Self {
            n_classes,
            counts: vec![0; n_classes * n_classes],
        }
    }

    /// Builds the matrix from true and predicted class indices.
    pub fn from_predictions(
        truth: &[usize],
        predicted: &[usize],
        n_classes: usize,
    ) -> Result<Self, MetricsError> {
        if truth.len() != predicted.len() {
            return Err(MetricsError::LengthMismatch {
                labels: truth.len(),
                other: predicted.len(),
            });
        }
        let mut m = Self::new(n_classes);
        for (i, (&t, &p)) in truth.iter().zip(predicted).enumerate() {
            m.add(i, t, p)?;
        }
        Ok(m)
    }

    /// Adds one example (`index` is only used in the error message).
    pub fn add(
        &mut self,
        index: usize,
        truth: usize,
        predicted: usize,
    ) -> Result<(), MetricsError> {
        for class in [truth, predicted] {
            if class >= self.n_classes {
                return Err(MetricsError::ClassOutOfRange {
                    index,
                    class,
                    n_classes: self.n_classes,
                });
            }
        }
        self.counts[truth * self.n_classes + predicted] += 1;
        Ok(())
    }

    pub fn n_classes(&self) -> usize {
        self.n_classes
    }

    /// Examples of true class `truth` predicted as `predicted`.
    pub fn get(&self, truth: usize, predicted: usize) -> u64 {
        self.counts[truth * self.n_classes + predicted]
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn correct(&self) -> u64 {
        (0..self.n_classes).map(|k| self.get(k, k)).sum()
    }

    /// Examples whose true class is `k` (row sum).
    pub fn true_count(&self, k: usize) -> u64 {
        (0..self.n_classes).map(|p| self.get(k, p)).sum()
    }

    /// Examples predicted as `k` (column sum).
    pub fn predicted_count(&self, k: usize) -> u64 {
        (0..self.n_classes).map(|t| self.get(t, k)).sum()
    }

    pub fn accuracy(&self) -> f64 {
        ratio(self.correct() as f64, self.total() as f64)
    }

    /// Recall of class `k` (sensitivity when `k` is the positive class); 0 if `k` never occurs.
    pub fn recall(&self, k: usize) -> f64 {
        ratio(self.get(k, k) as f64, self.true_count(k) as f64)
    }

    /// Precision of class `k`; 0 if `k` is never predicted.
    pub fn precision(&self, k: usize) -> f64 {
        ratio(self.get(k, k) as f64, self.predicted_count(k) as f64)
    }

    /// Specificity of class `k` one-vs-rest: true negatives / all examples not of class `k`.
    pub fn specificity(&self, k: usize) -> f64 {
        let negatives = self.total() - self.true_count(k);
        let false_positives = self.predicted_count(k) - self.get(k, k);
        ratio((negatives - false_positives) as f64, negatives as f64)
    }

    /// F1 of class `k`: harmonic mean of precision and recall, 0 when both are 0.
    pub fn f1(&self, k: usize) -> f64 {
        // 2TP / (2TP + FP + FN) is the same number and has no 0/0 when TP = 0 but FP or FN > 0.
        let tp = self.get(k, k) as f64;
        let fp = self.predicted_count(k) as f64 - tp;
        let fn_ = self.true_count(k) as f64 - tp;
        ratio(2.0 * tp, 2.0 * tp + fp + fn_)
    }

    /// Classes that occur in the truth or in the predictions (sklearn's label set).
    fn present_classes(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.n_classes).filter(|&k| self.true_count(k) + self.predicted_count(k) > 0)
    }

    /// Unweighted mean of per-class F1 over the classes present in truth or predictions.
    pub fn macro_f1(&self) -> f64 {
        let f: Vec<f64> = self.present_classes().map(|k| self.f1(k)).collect();
        ratio(f.iter().sum(), f.len() as f64)
    }

    /// Unweighted mean of per-class recall (= balanced accuracy) over the present classes.
    pub fn macro_recall(&self) -> f64 {
        let r: Vec<f64> = self.present_classes().map(|k| self.recall(k)).collect();
        ratio(r.iter().sum(), r.len() as f64)
    }

    /// Unweighted mean of per-class one-vs-rest specificity over the present classes.
    pub fn macro_specificity(&self) -> f64 {
        let s: Vec<f64> = self
            .present_classes()
            .map(|k| self.specificity(k))
            .collect();
        ratio(s.iter().sum(), s.len() as f64)
    }

    /// Matthews correlation coefficient; Gorodkin's R_K for more than two classes:
    /// `(c·s − Σ p_k t_k) / sqrt((s² − Σ p_k²)(s² − Σ t_k²))` with c correct, s total, t_k and
    /// p_k the true and predicted counts of class k. 0 when the denominator is 0 (all examples
    /// in one true class or all predicted as one class).
    pub fn mcc(&self) -> f64 {
        let s = self.total() as f64;
        let c = self.correct() as f64;
        let (mut pt, mut pp, mut tt) = (0.0, 0.0, 0.0);
        for k in 0..self.n_classes {
            let t = self.true_count(k) as f64;
            let p = self.predicted_count(k) as f64;
            pt += p * t;
            pp += p * p;
            tt += t * t;
        }
        let den = ((s * s - pp) * (s * s - tt)).sqrt();
        ratio(c * s - pt, den)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Binary example worked by hand: truth 1,1,1,1,0,0,0,0,0,0; predictions
    /// 1,1,1,0,1,1,0,0,0,0 → TP 3, FN 1, FP 2, TN 4.
    fn worked_binary() -> ConfusionMatrix {
        let truth = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0];
        let pred = [1, 1, 1, 0, 1, 1, 0, 0, 0, 0];
        ConfusionMatrix::from_predictions(&truth, &pred, 2).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn binary_counts_and_rates_match_the_hand_worked_example() {
        let m = worked_binary();
        assert_eq!(
            (m.get(1, 1), m.get(1, 0), m.get(0, 1), m.get(0, 0)),
            (3, 1, 2, 4)
        );
        assert!(close(m.accuracy(), 0.7)); // (3 + 4) / 10
        assert!(close(m.recall(1), 0.75)); // sensitivity 3 / 4
        assert!(close(m.specificity(1), 4.0 / 6.0)); // TN 4 / negatives 6
        assert!(close(m.recall(0), 4.0 / 6.0)); // specificity = recall of class 0
        assert!(close(m.precision(1), 0.6)); // 3 / 5
        assert!(close(m.f1(1), 2.0 * 0.6 * 0.75 / (0.6 + 0.75))); // 2/3
        assert!(close(m.f1(1), 2.0 / 3.0));
    }

    #[test]
    fn binary_mcc_matches_matthews_formula_by_hand() {
        // (TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (12 − 2) / sqrt(5·4·6·5) = 10/sqrt(600)
        let m = worked_binary();
        assert!(close(m.mcc(), 10.0 / 600f64.sqrt()), "{}", m.mcc());
    }

    #[test]
    fn mcc_is_zero_when_undefined() {
        // Everything predicted as class 1: the predicted-negative column is empty.
        let m = ConfusionMatrix::from_predictions(&[0, 1, 1, 0], &[1, 1, 1, 1], 2).unwrap();
        assert_eq!(m.mcc(), 0.0);
        // Only one true class.
        let m = ConfusionMatrix::from_predictions(&[1, 1, 1], &[1, 0, 1], 2).unwrap();
        assert_eq!(m.mcc(), 0.0);
    }

    #[test]
    fn perfect_and_inverted_predictions_give_mcc_plus_and_minus_one() {
        let m = ConfusionMatrix::from_predictions(&[0, 1, 0, 1], &[0, 1, 0, 1], 2).unwrap();
        assert!(close(m.mcc(), 1.0));
        let m = ConfusionMatrix::from_predictions(&[0, 1, 0, 1], &[1, 0, 1, 0], 2).unwrap();
        assert!(close(m.mcc(), -1.0));
    }

    /// Three classes worked by hand. truth 0,0,0,1,1,1,2,2,2 ; pred 0,0,1,1,1,2,2,0,2
    /// confusion rows (true) × cols (pred): [2 1 0] [0 2 1] [1 0 2].
    #[test]
    fn multiclass_f1_and_gorodkin_mcc_match_hand_computation() {
        let truth = [0, 0, 0, 1, 1, 1, 2, 2, 2];
        let pred = [0, 0, 1, 1, 1, 2, 2, 0, 2];
        let m = ConfusionMatrix::from_predictions(&truth, &pred, 3).unwrap();
        assert_eq!([m.get(0, 0), m.get(0, 1), m.get(0, 2)], [2, 1, 0]);
        assert_eq!([m.get(1, 0), m.get(1, 1), m.get(1, 2)], [0, 2, 1]);
        assert_eq!([m.get(2, 0), m.get(2, 1), m.get(2, 2)], [1, 0, 2]);
        // Every class: TP 2, FP 1, FN 1 → F1 = 4/6 = 2/3; macro 2/3.
        assert!(close(m.macro_f1(), 2.0 / 3.0));
        // c = 6, s = 9, t_k = p_k = 3: (6·9 − 27) / sqrt((81 − 27)(81 − 27)) = 27/54 = 0.5.
        assert!(close(m.mcc(), 0.5));
        assert!(close(m.accuracy(), 6.0 / 9.0));
        // One-vs-rest specificity per class: negatives 6, FP 1 → 5/6.
        assert!(close(m.macro_specificity(), 5.0 / 6.0));
        assert!(close(m.macro_recall(), 2.0 / 3.0));
    }

    #[test]
    fn macro_f1_skips_classes_absent_from_truth_and_predictions() {
        // Class 2 never occurs: macro over classes 0 and 1 only (sklearn's label set).
        let m = ConfusionMatrix::from_predictions(&[0, 1], &[0, 1], 3).unwrap();
        assert!(close(m.macro_f1(), 1.0));
    }

    #[test]
    fn out_of_range_class_is_an_error() {
        let e = ConfusionMatrix::from_predictions(&[0, 3], &[0, 1], 2).unwrap_err();
        assert_eq!(
            e,
            MetricsError::ClassOutOfRange {
                index: 1,
                class: 3,
                n_classes: 2
            }
        );
    }
}
