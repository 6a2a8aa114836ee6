//! Learning-rate schedule: linear warmup from 0 to the peak, then cosine decay to
//! `min_lr_ratio × peak` at the last step.

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WarmupCosine {
    pub peak_lr: f64,
    pub warmup_steps: u64,
    pub total_steps: u64,
    pub min_lr_ratio: f64,
}

impl WarmupCosine {
    /// Learning rate of optimizer step `step` (1-based).
    pub fn lr(&self, step: u64) -> f64 {
        if self.warmup_steps > 0 && step <= self.warmup_steps {
            return self.peak_lr * step as f64 / self.warmup_steps as f64;
        }
        let decay_steps = self.total_steps.saturating_sub(self.warmup_steps).max(1);
        let progress = ((step - self.warmup_steps.min(step)) as f64 / decay_steps as f64).min(1.0);
        let min_lr = self.peak_lr * self.min_lr_ratio;
        min_lr + (self.peak_lr - min_lr) * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warms_up_linearly_then_decays_to_the_floor() {
        let s = WarmupCosine {
            peak_lr: 1e-3,
            warmup_steps: 10,
            total_steps: 110,
            min_lr_ratio: 0.1,
        };
        assert!((s.lr(1) - 1e-4).abs() < 1e-12);
        assert!((s.lr(10) - 1e-3).abs() < 1e-12);
        // Half-way through the decay: the mean of peak and floor.
        assert!((s.lr(60) - 0.55e-3).abs() < 1e-12);
        assert!((s.lr(110) - 1e-4).abs() < 1e-12);
        assert!((s.lr(500) - 1e-4).abs() < 1e-12);
        assert!(s.lr(30) > s.lr(40));
    }
}
