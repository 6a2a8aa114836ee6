//! L2-regularised multinomial logistic regression on sparse rows, fitted by L-BFGS.
//!
//! Objective: f(W, b) = (1/N) Σ_i −log softmax(x_i W + b)[y_i] + (λ/2) ‖W‖² (the bias is not
//! penalised). Two classes are fitted as two softmax columns; the penalty on both columns makes
//! this the usual binary L2 logistic regression on the difference of the columns with λ/2.
//!
//! Deterministic for any thread count: per-row work runs in parallel but every sum is taken in a
//! fixed order (the gradient through the column-compressed matrix, one feature at a time).

use rayon::prelude::*;

use super::features::SparseRows;

/// A training problem: rows compressed both ways and each row's class.
pub struct Problem<'a> {
    pub rows: &'a SparseRows,
    pub cols: &'a SparseRows,
    pub classes: &'a [u32],
    pub num_classes: usize,
    /// Features in use: the first `features` (a smaller k range is a prefix of the layout).
    pub features: usize,
}

/// Weights `[features, classes]` row-major and the bias `[classes]`.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearWeights {
    pub weight: Vec<f64>,
    pub bias: Vec<f64>,
    pub num_classes: usize,
}

impl LinearWeights {
    pub fn zeros(features: usize, num_classes: usize) -> Self {
        Self {
            weight: vec![0.0; features * num_classes],
            bias: vec![0.0; num_classes],
            num_classes,
        }
    }

    /// Logits of one sparse row.
    pub fn logits(&self, idx: &[u32], val: &[f32]) -> Vec<f64> {
        let mut z = vec![0.0; self.num_classes];
        self.logits_into(idx, val, &mut z);
        z
    }

    /// Logits of one sparse row into `z` (`[classes]`).
    pub fn logits_into(&self, idx: &[u32], val: &[f32], z: &mut [f64]) {
        let c = self.num_classes;
        z.copy_from_slice(&self.bias);
        for (&f, &v) in idx.iter().zip(val) {
            let w = &self.weight[f as usize * c..(f as usize + 1) * c];
            for k in 0..c {
                z[k] += f64::from(v) * w[k];
            }
        }
    }

    fn flat(&self) -> Vec<f64> {
        let mut v = self.weight.clone();
        v.extend(&self.bias);
        v
    }

    fn from_flat(v: &[f64], features: usize, num_classes: usize) -> Self {
        let n = features * num_classes;
        Self {
            weight: v[..n].to_vec(),
            bias: v[n..].to_vec(),
            num_classes,
        }
    }
}

/// Log-softmax probabilities of logits (in place: returns softmax, and −log p[y]).
fn softmax_loss(z: &mut [f64], y: usize) -> f64 {
    let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut s = 0.0;
    for v in z.iter_mut() {
        *v = (*v - m).exp();
        s += *v;
    }
    let loss = -((z[y] / s).max(f64::MIN_POSITIVE)).ln();
    for v in z.iter_mut() {
        *v /= s;
    }
    loss
}

impl Problem<'_> {
    /// Objective and gradient at `theta` (flattened weights then bias).
    pub fn value_and_gradient(&self, theta: &[f64], l2: f64) -> (f64, Vec<f64>) {
        let c = self.num_classes;
        let w = LinearWeights::from_flat(theta, self.features, c);
        let n = self.rows.rows();
        // Residuals p − onehot(y), row-major [N, C], and per-row losses (summed in row order).
        let mut resid = vec![0f64; n * c];
        let mut losses = vec![0f64; n];
        resid
            .par_chunks_mut(c)
            .zip(losses.par_iter_mut())
            .enumerate()
            .with_min_len(256)
            .for_each(|(r, (z, loss))| {
                let (idx, val) = self.rows.row(r, self.features);
                w.logits_into(idx, val, z);
                let y = self.classes[r] as usize;
                *loss = softmax_loss(z, y);
                z[y] -= 1.0;
            });
        let inv_n = 1.0 / n as f64;
        let loss: f64 = losses.iter().sum::<f64>() * inv_n;
        let mut grad = vec![0.0; theta.len()];
        let (gw, gb) = grad.split_at_mut(self.features * c);
        gw.par_chunks_mut(c).enumerate().for_each(|(f, g)| {
            let (rows, vals) = self.cols.row(f, usize::MAX);
            for (&r, &v) in rows.iter().zip(vals) {
                let res = &resid[r as usize * c..(r as usize + 1) * c];
                for (gk, rk) in g.iter_mut().zip(res) {
                    *gk += f64::from(v) * rk;
                }
            }
            for (gk, wk) in g.iter_mut().zip(&w.weight[f * c..(f + 1) * c]) {
                *gk = *gk * inv_n + l2 * wk;
            }
        });
        for res in resid.chunks(c) {
            for (gk, rk) in gb.iter_mut().zip(res) {
                *gk += rk;
            }
        }
        for g in gb.iter_mut() {
            *g *= inv_n;
        }
        let penalty = 0.5 * l2 * w.weight.iter().map(|v| v * v).sum::<f64>();
        (loss + penalty, grad)
    }

    /// Minimises the objective from `start` by L-BFGS (memory 10, backtracking Armijo line
    /// search) until the largest gradient entry is below `tol`, the objective stops moving
    /// (relative change < 1e-10) or `max_iter` iterations. Returns the weights, the objective and
    /// the iterations taken.
    pub fn minimise(
        &self,
        start: &LinearWeights,
        l2: f64,
        tol: f64,
        max_iter: usize,
    ) -> (LinearWeights, f64, usize) {
        const MEMORY: usize = 10;
        let mut x = start.flat();
        let (mut f, mut g) = self.value_and_gradient(&x, l2);
        let mut s_hist: Vec<Vec<f64>> = Vec::new();
        let mut y_hist: Vec<Vec<f64>> = Vec::new();
        let mut iter = 0;
        while iter < max_iter {
            if g.iter().fold(0.0f64, |m, v| m.max(v.abs())) < tol {
                break;
            }
            iter += 1;
            // Two-loop recursion: d = −H g.
            let mut q = g.clone();
            let mut alpha = vec![0.0; s_hist.len()];
            for i in (0..s_hist.len()).rev() {
                let rho = 1.0 / dot(&y_hist[i], &s_hist[i]);
                alpha[i] = rho * dot(&s_hist[i], &q);
                axpy(-alpha[i], &y_hist[i], &mut q);
            }
            let gamma = match (s_hist.last(), y_hist.last()) {
                (Some(s), Some(y)) => dot(s, y) / dot(y, y),
                _ => 1.0 / dot(&g, &g).sqrt().max(1e-12),
            };
            q.iter_mut().for_each(|v| *v *= gamma);
            for i in 0..s_hist.len() {
                let rho = 1.0 / dot(&y_hist[i], &s_hist[i]);
                let beta = rho * dot(&y_hist[i], &q);
                axpy(alpha[i] - beta, &s_hist[i], &mut q);
            }
            let mut d: Vec<f64> = q.iter().map(|v| -v).collect();
            let mut slope = dot(&g, &d);
            if slope >= 0.0 {
                // Not a descent direction (curvature lost): restart from steepest descent.
                s_hist.clear();
                y_hist.clear();
                let scale = 1.0 / dot(&g, &g).sqrt().max(1e-12);
                d = g.iter().map(|v| -v * scale).collect();
                slope = dot(&g, &d);
            }
            let mut step = 1.0;
            let (mut x_new, mut f_new, mut g_new);
            loop {
                x_new = x.clone();
                axpy(step, &d, &mut x_new);
                (f_new, g_new) = self.value_and_gradient(&x_new, l2);
                if f_new <= f + 1e-4 * step * slope || step < 1e-12 {
                    break;
                }
                step *= 0.5;
            }
            let s: Vec<f64> = x_new.iter().zip(&x).map(|(a, b)| a - b).collect();
            let y: Vec<f64> = g_new.iter().zip(&g).map(|(a, b)| a - b).collect();
            if dot(&s, &y) > 1e-12 {
                if s_hist.len() == MEMORY {
                    s_hist.remove(0);
                    y_hist.remove(0);
                }
                s_hist.push(s);
                y_hist.push(y);
            }
            let moved = (f - f_new).abs() <= 1e-10 * f.abs().max(1.0);
            x = x_new;
            f = f_new;
            g = g_new;
            if moved {
                break;
            }
        }
        (
            LinearWeights::from_flat(&x, self.features, self.num_classes),
            f,
            iter,
        )
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    for (v, &u) in y.iter_mut().zip(x) {
        *v += a * u;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> (SparseRows, Vec<u32>) {
        // Feature 0 votes class 1, feature 1 votes class 0, feature 2 is noise; not separable.
        let rows = vec![
            vec![(0, 1.0), (2, 0.5)],
            vec![(0, 2.0)],
            vec![(1, 1.0), (2, 1.0)],
            vec![(1, 1.5)],
            vec![(0, 1.0), (1, 1.0)],
            vec![(2, 2.0)],
        ];
        (SparseRows::from_rows(rows), vec![1, 1, 0, 0, 0, 1])
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let (x, y) = toy();
        let xt = x.transpose(3);
        let p = Problem {
            rows: &x,
            cols: &xt,
            classes: &y,
            num_classes: 2,
            features: 3,
        };
        let theta: Vec<f64> = (0..8).map(|i| 0.1 * i as f64 - 0.3).collect();
        let (_, g) = p.value_and_gradient(&theta, 0.2);
        for i in 0..theta.len() {
            let mut a = theta.clone();
            let mut b = theta.clone();
            a[i] += 1e-6;
            b[i] -= 1e-6;
            let fd = (p.value_and_gradient(&a, 0.2).0 - p.value_and_gradient(&b, 0.2).0) / 2e-6;
            assert!((fd - g[i]).abs() < 1e-7, "{i}: {fd} vs {}", g[i]);
        }
    }

    #[test]
    fn lbfgs_reaches_the_optimum_and_regularisation_shrinks_weights() {
        let (x, y) = toy();
        let xt = x.transpose(3);
        let p = Problem {
            rows: &x,
            cols: &xt,
            classes: &y,
            num_classes: 2,
            features: 3,
        };
        let zero = LinearWeights::zeros(3, 2);
        let (f0, _) = p.value_and_gradient(&zero.flat(), 0.1);
        let (w, f, _) = p.minimise(&zero, 0.1, 1e-9, 500);
        let (_, g) = p.value_and_gradient(&w.flat(), 0.1);
        assert!(f < f0 - 0.05, "{f} vs {f0}");
        assert!(g.iter().all(|v| v.abs() < 1e-6), "{g:?}");
        // Feature 0 favours class 1 over class 0.
        assert!(w.weight[1] - w.weight[0] > 0.5, "{:?}", w.weight);
        let (strong, _, _) = p.minimise(&zero, 10.0, 1e-9, 500);
        let norm = |w: &LinearWeights| w.weight.iter().map(|v| v * v).sum::<f64>();
        assert!(norm(&strong) < norm(&w) / 10.0);
        // Only the first feature: a prefix of the layout.
        let p1 = Problem { features: 1, ..p };
        let (w1, _, _) = p1.minimise(&LinearWeights::zeros(1, 2), 0.1, 1e-9, 500);
        assert_eq!(w1.weight.len(), 2);
    }
}
