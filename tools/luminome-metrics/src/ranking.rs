//! Threshold-free metrics computed from scores: AUROC and average precision, binary and
//! one-vs-rest macro.

/// Indices of `scores` sorted ascending (NaN sorts last, by `f64::total_cmp`).
fn order_ascending(scores: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    idx
}

/// Area under the ROC curve for `positive[i]` with score `scores[i]`.
///
/// Computed as the Mann-Whitney U statistic from ranks, tied scores given their average rank,
/// so a tied positive/negative pair counts one half: `(R₊ − P(P+1)/2) / (P·N)`. This equals the
/// trapezoidal area under the ROC curve (sklearn's `roc_auc_score`). `None` when there are no
/// positives or no negatives. Panics if the slices differ in length (a programming error).
pub fn auroc(positive: &[bool], scores: &[f64]) -> Option<f64> {
    assert_eq!(
        positive.len(),
        scores.len(),
        "labels and scores differ in length"
    );
    let n_pos = positive.iter().filter(|&&p| p).count();
    let n_neg = positive.len() - n_pos;
    if n_pos == 0 || n_neg == 0 {
        return None;
    }
    let order = order_ascending(scores);
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their mean.
        let mean_rank = (i + 1 + j + 1) as f64 / 2.0;
        let pos_in_group = order[i..=j].iter().filter(|&&k| positive[k]).count();
        rank_sum_pos += mean_rank * pos_in_group as f64;
        i = j + 1;
    }
    let (p, n) = (n_pos as f64, n_neg as f64);
    Some((rank_sum_pos - p * (p + 1.0) / 2.0) / (p * n))
}

/// The score threshold that maximises Youden's J = sensitivity + specificity − 1 when scores
/// ≥ threshold are called positive, among the distinct scores; ties go to the threshold nearest
/// 0.5. `None` without both positives and negatives.
pub fn youden_threshold(positive: &[bool], scores: &[f64]) -> Option<f64> {
    let n_pos = positive.iter().filter(|&&p| p).count();
    let n_neg = positive.len() - n_pos;
    if n_pos == 0 || n_neg == 0 || scores.iter().any(|s| s.is_nan()) {
        return None;
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let (mut tp, mut fp) = (0usize, 0usize);
    let mut best: Option<(f64, f64)> = None; // (J, threshold)
    let mut i = 0;
    while i < order.len() {
        let s = scores[order[i]];
        while i < order.len() && scores[order[i]] == s {
            if positive[order[i]] {
                tp += 1;
            } else {
                fp += 1;
            }
            i += 1;
        }
        let j = tp as f64 / n_pos as f64 - fp as f64 / n_neg as f64;
        let better = match best {
            None => true,
            Some((bj, bt)) => {
                j > bj + 1e-12 || ((j - bj).abs() <= 1e-12 && (s - 0.5).abs() < (bt - 0.5).abs())
            }
        };
        if better {
            best = Some((j, s));
        }
    }
    best.map(|(_, t)| t)
}

/// Average precision (sklearn's `average_precision_score`): `Σ_n (R_n − R_{n−1}) P_n` over the
/// distinct score thresholds from highest to lowest, examples with equal scores entering
/// together; no interpolation. `None` when there are no positives.
pub fn average_precision(positive: &[bool], scores: &[f64]) -> Option<f64> {
    assert_eq!(
        positive.len(),
        scores.len(),
        "labels and scores differ in length"
    );
    let n_pos = positive.iter().filter(|&&p| p).count();
    if n_pos == 0 {
        return None;
    }
    let mut order = order_ascending(scores);
    order.reverse();
    let (mut tp, mut fp) = (0usize, 0usize);
    let mut prev_recall = 0.0;
    let mut ap = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        for &k in &order[i..=j] {
            if positive[k] {
                tp += 1;
            } else {
                fp += 1;
            }
        }
        let recall = tp as f64 / n_pos as f64;
        let precision = tp as f64 / (tp + fp) as f64;
        ap += (recall - prev_recall) * precision;
        prev_recall = recall;
        i = j + 1;
    }
    Some(ap)
}

/// One-vs-rest macro average of `metric` over classes `0..n_classes`: class `k` is positive,
/// all others negative, scored by column `k` of the row-major `probs` `[n, n_classes]`.
/// `None` if the metric is undefined for any class (sklearn refuses such input too).
pub fn one_vs_rest_macro(
    labels: &[usize],
    probs: &[f64],
    n_classes: usize,
    metric: fn(&[bool], &[f64]) -> Option<f64>,
) -> Option<f64> {
    assert_eq!(
        labels.len() * n_classes,
        probs.len(),
        "probs must be [n, n_classes]"
    );
    let mut sum = 0.0;
    let mut column = Vec::with_capacity(labels.len());
    let mut positive = Vec::with_capacity(labels.len());
    for k in 0..n_classes {
        column.clear();
        column.extend(probs.iter().skip(k).step_by(n_classes));
        positive.clear();
        positive.extend(labels.iter().map(|&l| l == k));
        sum += metric(&positive, &column)?;
    }
    Some(sum / n_classes as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn youden_threshold_by_hand() {
        // Scores 0.9 P, 0.8 N, 0.6 P, 0.3 P, 0.2 N. Calling ≥ 0.9: J = 1/3 − 0; ≥ 0.8: 1/3 − 1/2;
        // ≥ 0.6: 2/3 − 1/2; ≥ 0.3: 1 − 1/2 = 0.5 (the best); ≥ 0.2: 1 − 1 = 0.
        let pos = [true, false, true, true, false];
        let s = [0.9, 0.8, 0.6, 0.3, 0.2];
        assert_eq!(youden_threshold(&pos, &s), Some(0.3));
        // Separable: calling ≥ 0.6 (the lowest positive) is the one threshold with J = 1.
        let s = [0.9, 0.1, 0.7, 0.6, 0.2];
        assert_eq!(youden_threshold(&pos, &s), Some(0.6));
        assert_eq!(youden_threshold(&[true, true], &[0.1, 0.2]), None);
    }

    #[test]
    fn auroc_of_the_textbook_example() {
        // Pairs (pos, neg): (0.35 vs 0.1) win, (0.35 vs 0.4) loss, (0.8 vs both) wins → 3/4.
        let a = auroc(&[false, false, true, true], &[0.1, 0.4, 0.35, 0.8]).unwrap();
        assert!(close(a, 0.75));
    }

    #[test]
    fn auroc_counts_a_tied_pair_as_one_half() {
        // pos {0.5, 0.9}, neg {0.5, 0.1}: pairs 0.5, 1, 1, 1 → 3.5 / 4.
        let a = auroc(&[true, false, true, false], &[0.5, 0.5, 0.9, 0.1]).unwrap();
        assert!(close(a, 0.875));
        // All scores equal: every pair tied → 0.5.
        let a = auroc(&[true, false, true, false, false], &[0.3; 5]).unwrap();
        assert!(close(a, 0.5));
    }

    #[test]
    fn auroc_is_one_for_perfect_ranking_and_zero_for_reversed() {
        assert!(close(auroc(&[false, true], &[0.2, 0.7]).unwrap(), 1.0));
        assert!(close(auroc(&[true, false], &[0.2, 0.7]).unwrap(), 0.0));
    }

    #[test]
    fn auroc_is_undefined_with_one_class() {
        assert_eq!(auroc(&[true, true], &[0.1, 0.2]), None);
        assert_eq!(auroc(&[false, false], &[0.1, 0.2]), None);
    }

    #[test]
    fn average_precision_of_the_textbook_example() {
        // Highest first: 0.8 (+) R .5 P 1; 0.4 (−) R .5; 0.35 (+) R 1 P 2/3 → .5 + .5·2/3.
        let ap = average_precision(&[false, false, true, true], &[0.1, 0.4, 0.35, 0.8]).unwrap();
        assert!(close(ap, 0.5 + 1.0 / 3.0));
    }

    #[test]
    fn average_precision_takes_tied_scores_as_one_threshold() {
        // 0.9 (+) R .5 P 1; {0.5 (+), 0.5 (−)} together R 1 P 2/3; 0.1 (−) adds no recall.
        let ap = average_precision(&[true, false, true, false], &[0.5, 0.5, 0.9, 0.1]).unwrap();
        assert!(close(ap, 0.5 + 1.0 / 3.0));
        // Had the tie been broken positive-first the answer would be 1.0: the grouping matters.
        assert!(ap < 0.9);
    }

    #[test]
    fn average_precision_is_undefined_without_positives() {
        assert_eq!(average_precision(&[false, false], &[0.1, 0.2]), None);
    }

    #[test]
    fn one_vs_rest_macro_auroc_by_hand() {
        // 3 classes, 3 examples, each scored highest on its own class: every class AUROC 1.
        let probs = [0.8, 0.1, 0.1, 0.2, 0.7, 0.1, 0.3, 0.3, 0.4];
        let a = one_vs_rest_macro(&[0, 1, 2], &probs, 3, auroc).unwrap();
        assert!(close(a, 1.0));
        // Make class 2 rank badly: its positive (example 2) scores 0.1, its negatives 0.4 and
        // 0.1 → one loss and one tie → 0.25; classes 0 and 1 stay at 1 → (1 + 1 + 0.25) / 3.
        let probs = [0.5, 0.1, 0.4, 0.2, 0.7, 0.1, 0.4, 0.5, 0.1];
        let a = one_vs_rest_macro(&[0, 1, 2], &probs, 3, auroc).unwrap();
        assert!(close(a, 0.75), "{a}");
    }
}
