//! Class probabilities from a model's logits: the one softmax behind every probability Luminome
//! reports (dev and test metrics during training, `luminome-predict`'s columns and metrics).

/// Softmax of one row of logits, computed in f64 with the maximum subtracted (so large logits
/// do not overflow).
pub fn softmax(logits: &[f32]) -> Vec<f64> {
    let max = logits
        .iter()
        .fold(f64::NEG_INFINITY, |m, &x| m.max(f64::from(x)));
    let exp: Vec<f64> = logits.iter().map(|&x| (f64::from(x) - max).exp()).collect();
    let sum: f64 = exp.iter().sum();
    exp.into_iter().map(|e| e / sum).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_sums_to_one_and_survives_large_logits() {
        // exp(1000) overflows; the shifted form gives 1 / (1 + e) and e / (1 + e).
        let p = softmax(&[1000.0, 1001.0]);
        let e = std::f64::consts::E;
        assert!(
            (p[0] - 1.0 / (1.0 + e)).abs() < 1e-12 && (p[1] - e / (1.0 + e)).abs() < 1e-12,
            "{p:?}"
        );
        let p = softmax(&[0.1, -2.0, 3.5]);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
