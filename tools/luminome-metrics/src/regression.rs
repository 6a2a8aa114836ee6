//! Regression metrics for expression models: Pearson and Spearman correlation, R² and the mean
//! Poisson deviance, defined as scipy / scikit-learn define them so numbers can be checked
//! against them:
//!
//! - **Pearson** r = cov(y, ŷ) / (sd(y) sd(ŷ)) (`scipy.stats.pearsonr`); `None` when either side
//!   is constant or there are fewer than two values.
//! - **Spearman** ρ = Pearson of the ranks, ties given their average rank
//!   (`scipy.stats.spearmanr`).
//! - **R²** = 1 − Σ(y − ŷ)² / Σ(y − ȳ)² (`sklearn.metrics.r2_score`; can be negative); `None`
//!   when y is constant.
//! - **Poisson deviance** = mean of 2 (y ln(y / ŷ) − (y − ŷ)), with y ln y = 0 at y = 0
//!   (`sklearn.metrics.mean_poisson_deviance`); `None` unless every ŷ > 0 and every y ≥ 0.

/// Metrics of predictions against truth.
#[derive(Debug, Clone, PartialEq)]
pub struct RegressionMetrics {
    pub n: usize,
    pub pearson: Option<f64>,
    pub spearman: Option<f64>,
    pub r2: Option<f64>,
    pub poisson_deviance: Option<f64>,
    pub mse: Option<f64>,
}

impl RegressionMetrics {
    /// Panics if the slices differ in length (a programming error).
    pub fn compute(truth: &[f64], predicted: &[f64]) -> Self {
        assert_eq!(
            truth.len(),
            predicted.len(),
            "truth and predictions differ in length"
        );
        let n = truth.len();
        let mse = (n > 0).then(|| {
            truth
                .iter()
                .zip(predicted)
                .map(|(y, p)| (y - p) * (y - p))
                .sum::<f64>()
                / n as f64
        });
        Self {
            n,
            pearson: pearson(truth, predicted),
            spearman: pearson(&ranks(truth), &ranks(predicted)),
            r2: r2(truth, predicted),
            poisson_deviance: poisson_deviance(truth, predicted),
            mse,
        }
    }

    /// `(metric, value)` rows with `prefix` before each name; undefined values as `NA`.
    pub fn rows(&self, prefix: &str) -> Vec<(String, String)> {
        let f = |v: Option<f64>| v.map_or_else(|| "NA".to_string(), |x| format!("{x:.6}"));
        vec![
            (format!("{prefix}n"), self.n.to_string()),
            (format!("{prefix}pearson"), f(self.pearson)),
            (format!("{prefix}spearman"), f(self.spearman)),
            (format!("{prefix}r2"), f(self.r2)),
            (
                format!("{prefix}poisson_deviance"),
                f(self.poisson_deviance),
            ),
            (format!("{prefix}mse"), f(self.mse)),
        ]
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Pearson correlation; `None` for fewer than two values or a constant side.
pub fn pearson(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || a.len() != b.len() {
        return None;
    }
    let (ma, mb) = (mean(a), mean(b));
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        let (dx, dy) = (x - ma, y - mb);
        sab += dx * dy;
        saa += dx * dx;
        sbb += dy * dy;
    }
    (saa > 0.0 && sbb > 0.0).then(|| (sab / (saa * sbb).sqrt()).clamp(-1.0, 1.0))
}

/// Ranks 1..n, ties given their average rank.
pub fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut out = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let r = (i + j + 2) as f64 / 2.0;
        for &k in &idx[i..=j] {
            out[k] = r;
        }
        i = j + 1;
    }
    out
}

/// Spearman rank correlation.
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    pearson(&ranks(a), &ranks(b))
}

/// Coefficient of determination of `predicted` for `truth`.
pub fn r2(truth: &[f64], predicted: &[f64]) -> Option<f64> {
    if truth.is_empty() {
        return None;
    }
    let m = mean(truth);
    let ss_tot: f64 = truth.iter().map(|y| (y - m) * (y - m)).sum();
    let ss_res: f64 = truth
        .iter()
        .zip(predicted)
        .map(|(y, p)| (y - p) * (y - p))
        .sum();
    (ss_tot > 0.0).then(|| 1.0 - ss_res / ss_tot)
}

/// Mean Poisson deviance; `None` unless every prediction is positive and every truth ≥ 0.
pub fn poisson_deviance(truth: &[f64], predicted: &[f64]) -> Option<f64> {
    if truth.is_empty()
        || predicted.iter().any(|&p| p <= 0.0 || !p.is_finite())
        || truth.iter().any(|&y| y < 0.0)
    {
        return None;
    }
    let total: f64 = truth
        .iter()
        .zip(predicted)
        .map(|(&y, &p)| {
            let ylogy = if y > 0.0 { y * (y / p).ln() } else { 0.0 };
            2.0 * (ylogy - (y - p))
        })
        .sum();
    Some(total / truth.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Values from scipy 1.17.1 / scikit-learn 1.9.1:
    //   y = [1, 2, 3, 4, 5], p = [1.5, 1.5, 3.5, 3.0, 6.0]
    //   pearsonr(y, p) = 0.8970755406025991, spearmanr(y, p) = 0.8720815992723809,
    //   r2_score(y, p) = 0.725, mean_poisson_deviance(y, p) = 0.17862700126038905,
    //   mean_squared_error(y, p) = 0.55
    const Y: [f64; 5] = [1.0, 2.0, 3.0, 4.0, 5.0];
    const P: [f64; 5] = [1.5, 1.5, 3.5, 3.0, 6.0];

    #[test]
    fn metrics_match_scipy_and_sklearn_on_a_hand_example() {
        let m = RegressionMetrics::compute(&Y, &P);
        assert!((m.pearson.unwrap() - 0.8970755406025991).abs() < 1e-12);
        assert!((m.spearman.unwrap() - 0.8720815992723809).abs() < 1e-12);
        assert!((m.r2.unwrap() - 0.725).abs() < 1e-12);
        assert!((m.poisson_deviance.unwrap() - 0.17862700126038905).abs() < 1e-12);
        assert!((m.mse.unwrap() - 0.55).abs() < 1e-12);
        assert_eq!(m.n, 5);
    }

    #[test]
    fn undefined_cases_are_none() {
        assert_eq!(pearson(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(pearson(&[1.0], &[2.0]), None);
        assert_eq!(r2(&[2.0, 2.0], &[1.0, 3.0]), None);
        assert_eq!(poisson_deviance(&[1.0, 2.0], &[0.0, 1.0]), None);
        assert_eq!(poisson_deviance(&[-1.0, 2.0], &[1.0, 1.0]), None);
        // y = 0 contributes 2 ŷ.
        assert!((poisson_deviance(&[0.0], &[0.5]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
        assert_eq!(
            RegressionMetrics::compute(&[1.0], &[2.0]).rows("k_")[1],
            ("k_pearson".to_string(), "NA".to_string())
        );
    }
}
