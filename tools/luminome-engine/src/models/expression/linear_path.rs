//! The linear path: what a user computes in one line, inside the model.
//!
//! Each sample's summary s, one of (`LinearInputs`)
//!
//!   tss-accessibility   [a_tss; 1{TSS in a region}]
//!   tss-region          [x_tss; 1{TSS in a region}]
//!   tss-region-window   [x_tss; Σ_i x_i; 1{TSS in a region}]
//!
//! (x_tss the raw features of the region holding the TSS, 0 when none does, a_tss its
//! accessibility — the last feature; Σ_i x_i the features summed over the window's real
//! regions), standardised with the training samples' mean and standard deviation, and
//! r_lin = wᵀs̃ + b. The model's output is r_lin + r_deep.
//!
//! Why: on ~500 training genes the transformer alone loses to the TSS region's accessibility
//! (docs/results.md). The linear path starts at the ridge regression on s (closed form; the
//! penalty with the best dev Pearson, or by 5-fold cross-validation on the training samples
//! when there is no dev set), the deep path's output layer starts at zero, and the trainer
//! scores the dev set before the first step, so the checkpoint kept is never worse on dev than
//! the linear model; the transformer only has to add to it.
//!
//! The summary is computed in the graph from the features tensor, so gradient attributions
//! (saliency, integrated gradients) cover both paths.

use anyhow::{bail, Context, Result};
use candle_core::{DType, Tensor, D};
use candle_nn::{VarBuilder, VarMap};
use nalgebra::{DMatrix, DVector, SymmetricEigen};
use serde::{Deserialize, Serialize};

use crate::models::region::RegionTensors;
use crate::nn::Linear;

/// What the linear path reads (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LinearInputs {
    /// The TSS region's accessibility (the last feature) and whether a region holds the TSS.
    TssAccessibility,
    /// Every feature of the TSS region, and the indicator.
    TssRegion,
    /// The TSS region's features, the window's feature sums, and the indicator.
    TssRegionWindow,
}

impl LinearInputs {
    pub fn name(self) -> &'static str {
        match self {
            Self::TssAccessibility => "tss-accessibility",
            Self::TssRegion => "tss-region",
            Self::TssRegionWindow => "tss-region-window",
        }
    }

    /// Summary width for `f` features.
    pub fn width(self, f: usize) -> usize {
        match self {
            Self::TssAccessibility => 2,
            Self::TssRegion => f + 1,
            Self::TssRegionWindow => 2 * f + 1,
        }
    }
}

/// The linear path's settings (stored in the checkpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinearPathConfig {
    pub inputs: LinearInputs,
    /// Whether training updates it (jointly with the deep path) or keeps the ridge solution.
    pub trainable: bool,
}

/// Names under `head.linear.`: the stored standardisation (never trained) and the layer.
pub const SUMMARY_MEAN: &str = "head.linear.summary_mean";
pub const SUMMARY_SCALE: &str = "head.linear.summary_scale";
pub const WEIGHT: &str = "head.linear.weight";
pub const BIAS: &str = "head.linear.bias";

/// Ridge penalties tried (on standardised inputs, per sample: λ in (ZᵀZ/n + λI)w = Zᵀy/n).
const PENALTIES: [f64; 13] = [
    1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0,
];
const FOLDS: usize = 5;

#[derive(Debug, Clone)]
pub struct LinearPath {
    mean: Tensor,
    scale: Tensor,
    linear: Linear,
    inputs: LinearInputs,
}

impl LinearPath {
    pub fn new(
        cfg: &LinearPathConfig,
        n_features: usize,
        vb: VarBuilder,
    ) -> candle_core::Result<Self> {
        let width = cfg.inputs.width(n_features);
        Ok(Self {
            mean: vb.get_with_hints(width, "summary_mean", candle_nn::Init::Const(0.0))?,
            scale: vb.get_with_hints(width, "summary_scale", candle_nn::Init::Const(1.0))?,
            linear: Linear::new(width, 1, vb)?,
            inputs: cfg.inputs,
        })
    }

    /// r_lin `[B]` of raw features `[B, N, F]`.
    pub fn forward(&self, features: &Tensor, t: &RegionTensors) -> candle_core::Result<Tensor> {
        let s = summary(features, t, self.inputs)?;
        let z = s.broadcast_sub(&self.mean)?.broadcast_mul(&self.scale)?;
        self.linear.forward(&z)?.squeeze(D::Minus1)
    }
}

/// The summary `[B, inputs.width(F)]` of raw features `[B, N, F]`: a `[B, 2, N]` selector (the
/// TSS region's one-hot row, the region mask) times the features, and the TSS indicator.
pub fn summary(
    features: &Tensor,
    t: &RegionTensors,
    inputs: LinearInputs,
) -> candle_core::Result<Tensor> {
    let (b, n, f) = features.dims3()?;
    let mut select = vec![0f32; b * 2 * n];
    let mut in_region = vec![0f32; b];
    for (r, &tss) in t.host.tss_index.iter().enumerate() {
        if tss >= 0 && (tss as usize) < n {
            select[r * 2 * n + tss as usize] = 1.0;
            in_region[r] = 1.0;
        }
        for (i, &m) in t.host.region_mask[r * n..(r + 1) * n].iter().enumerate() {
            select[r * 2 * n + n + i] = f32::from(m != 0);
        }
    }
    let select = Tensor::from_vec(select, (b, 2, n), features.device())?;
    let sums = crate::nn::matmul::device_matmul(&select, &features.contiguous()?)?;
    let flag = Tensor::from_vec(in_region, (b, 1), features.device())?;
    let tss = sums.narrow(1, 0, 1)?.reshape((b, f))?;
    match inputs {
        LinearInputs::TssAccessibility => Tensor::cat(&[tss.narrow(1, f - 1, 1)?, flag], 1),
        LinearInputs::TssRegion => Tensor::cat(&[tss, flag], 1),
        LinearInputs::TssRegionWindow => Tensor::cat(&[sums.reshape((b, 2 * f))?, flag], 1),
    }
}

/// Samples' summaries (f64, row-major `[n, p]`) and the ridge targets.
pub struct RidgeData {
    pub rows: usize,
    pub cols: usize,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

/// The dev samples a penalty is chosen on: their summaries and observed values, and the
/// model's output transform (softplus for the Poisson loss), since Pearson is taken on ŷ.
pub struct RidgeDev<'a> {
    pub data: RidgeData,
    pub output: &'a dyn Fn(f64) -> f64,
}

/// The fitted path in the standardised space the model reads.
#[derive(Debug)]
pub struct RidgeFit {
    pub mean: Vec<f32>,
    pub scale: Vec<f32>,
    pub weight: Vec<f32>,
    pub bias: f32,
    pub penalty: f64,
    /// How the penalty was chosen, and its score.
    pub chosen_by: String,
}

/// Ridge regression of `y` on the standardised columns of `x`, the penalty chosen by the
/// highest dev Pearson (ties: the larger penalty) when `dev` is given, else by the lowest mean
/// squared error over `FOLDS` contiguous folds (scikit-learn's `RidgeCV(cv=5)` without
/// shuffling), then fitted on every row.
pub fn fit_ridge(d: &RidgeData, dev: Option<&RidgeDev>) -> Result<RidgeFit> {
    // Cross-validation needs two rows per fold; a penalty chosen on dev, two rows in all.
    let needed = if dev.is_some() { 2 } else { 2 * FOLDS };
    if d.rows < needed {
        bail!(
            "the linear path needs at least {needed} training samples{}, got {} (train without it: --linear-path none)",
            if dev.is_some() { "" } else { " to choose its penalty by 5-fold cross-validation without a dev set" },
            d.rows
        );
    }
    let all: Vec<usize> = (0..d.rows).collect();
    let fit = RidgeSolver::new(d, &all);
    let (best, chosen_by) = match dev {
        Some(dev) => {
            let score: Vec<f64> = PENALTIES
                .iter()
                .map(|&lambda| {
                    let (w, b) = fit.solve(lambda);
                    let pred: Vec<f64> = (0..dev.data.rows)
                        .map(|i| (dev.output)(fit.predict(&dev.data, i, &w, b)))
                        .collect();
                    luminome_metrics::regression::pearson(&dev.data.y, &pred).unwrap_or(-1.0)
                })
                .collect();
            // `max_by` keeps the last of equal maxima: ties go to the larger penalty.
            let best = (0..PENALTIES.len())
                .max_by(|&a, &b| score[a].total_cmp(&score[b]))
                .context("no penalty")?;
            (best, format!("dev Pearson {:.4}", score[best]))
        }
        None => {
            let cv = cross_validated_mse(d);
            let best = (0..PENALTIES.len())
                .min_by(|&a, &b| cv[a].total_cmp(&cv[b]))
                .context("no penalty")?;
            (best, format!("5-fold CV MSE {:.4}", cv[best]))
        }
    };
    let (w, b) = fit.solve(PENALTIES[best]);
    Ok(RidgeFit {
        mean: fit.mean.iter().map(|&v| v as f32).collect(),
        scale: fit.scale.iter().map(|&v| v as f32).collect(),
        weight: w.iter().map(|&v| v as f32).collect(),
        bias: b as f32,
        penalty: PENALTIES[best],
        chosen_by,
    })
}

/// Mean squared error of each penalty over contiguous folds of the rows.
fn cross_validated_mse(d: &RidgeData) -> Vec<f64> {
    let mut cv = vec![0f64; PENALTIES.len()];
    for fold in 0..FOLDS {
        let (lo, hi) = (fold * d.rows / FOLDS, (fold + 1) * d.rows / FOLDS);
        let train: Vec<usize> = (0..d.rows).filter(|&i| i < lo || i >= hi).collect();
        let fit = RidgeSolver::new(d, &train);
        for (k, &lambda) in PENALTIES.iter().enumerate() {
            let (w, b) = fit.solve(lambda);
            for i in lo..hi {
                let e = fit.predict(d, i, &w, b) - d.y[i];
                cv[k] += e * e / d.rows as f64;
            }
        }
    }
    cv
}

/// The eigendecomposition of one row set's standardised Gram matrix, so that every penalty
/// costs one product: w = V diag(1 / (e + λ)) Vᵀ Zᵀy / n.
struct RidgeSolver {
    mean: Vec<f64>,
    scale: Vec<f64>,
    y_mean: f64,
    eigen: SymmetricEigen<f64, nalgebra::Dyn>,
    /// Vᵀ Zᵀ(y − ȳ) / n.
    projected: DVector<f64>,
}

impl RidgeSolver {
    fn new(d: &RidgeData, rows: &[usize]) -> Self {
        let (n, p) = (rows.len(), d.cols);
        let mut mean = vec![0f64; p];
        let mut sq = vec![0f64; p];
        for &i in rows {
            for (j, &v) in d.x[i * p..(i + 1) * p].iter().enumerate() {
                mean[j] += v / n as f64;
                sq[j] += v * v / n as f64;
            }
        }
        // A constant column gets scale 1 (it is then 0 after centring and takes no weight).
        let scale: Vec<f64> = (0..p)
            .map(|j| {
                let var = (sq[j] - mean[j] * mean[j]).max(0.0);
                if var > 1e-12 {
                    1.0 / var.sqrt()
                } else {
                    1.0
                }
            })
            .collect();
        let z = DMatrix::from_fn(n, p, |r, j| (d.x[rows[r] * p + j] - mean[j]) * scale[j]);
        let y_mean = rows.iter().map(|&i| d.y[i]).sum::<f64>() / n as f64;
        let yc = DVector::from_fn(n, |r, _| d.y[rows[r]] - y_mean);
        let gram = (z.transpose() * &z) / n as f64;
        let zy = (z.transpose() * yc) / n as f64;
        let eigen = SymmetricEigen::new(gram);
        let projected = eigen.eigenvectors.transpose() * zy;
        Self {
            mean,
            scale,
            y_mean,
            eigen,
            projected,
        }
    }

    fn solve(&self, lambda: f64) -> (DVector<f64>, f64) {
        let shrunk = DVector::from_fn(self.projected.len(), |k, _| {
            self.projected[k] / (self.eigen.eigenvalues[k].max(0.0) + lambda)
        });
        (&self.eigen.eigenvectors * shrunk, self.y_mean)
    }

    fn predict(&self, d: &RidgeData, i: usize, w: &DVector<f64>, b: f64) -> f64 {
        let p = d.cols;
        b + (0..p)
            .map(|j| (d.x[i * p + j] - self.mean[j]) * self.scale[j] * w[j])
            .sum::<f64>()
    }
}

/// Writes a fit into the model's `head.linear.*` variables.
pub fn set_linear_path(varmap: &VarMap, fit: &RidgeFit) -> Result<()> {
    let data = varmap.data().lock().expect("var map lock");
    let p = fit.weight.len();
    let values: [(&str, Vec<f32>, Vec<usize>); 4] = [
        (SUMMARY_MEAN, fit.mean.clone(), vec![p]),
        (SUMMARY_SCALE, fit.scale.clone(), vec![p]),
        (WEIGHT, fit.weight.clone(), vec![1, p]),
        (BIAS, vec![fit.bias], vec![1]),
    ];
    for (name, v, shape) in values {
        let var = data
            .get(name)
            .with_context(|| format!("internal: no parameter {name}"))?;
        var.set(&Tensor::from_vec(v, shape, var.device())?.to_dtype(DType::F32)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ridge_recovers_a_linear_rule_and_prefers_a_small_penalty_on_clean_data() {
        // y = 2 x0 − x1 + 3 on 60 rows; x2 is noise-free but irrelevant, x3 constant.
        let rows = 60;
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..rows {
            let (a, b, c) = ((i % 7) as f64, ((i * 5) % 11) as f64, ((i * 3) % 5) as f64);
            x.extend([a, b, c, 1.0]);
            y.push(2.0 * a - b + 3.0);
        }
        let data = RidgeData {
            rows,
            cols: 4,
            x: x.clone(),
            y: y.clone(),
        };
        let fit = fit_ridge(&data, None).unwrap();
        assert!(fit.penalty <= 1e-2, "penalty {}", fit.penalty);
        for i in 0..rows {
            let pred: f64 = f64::from(fit.bias)
                + (0..4)
                    .map(|j| {
                        (x[i * 4 + j] - f64::from(fit.mean[j]))
                            * f64::from(fit.scale[j])
                            * f64::from(fit.weight[j])
                    })
                    .sum::<f64>();
            assert!((pred - y[i]).abs() < 0.05, "row {i}: {pred} vs {}", y[i]);
        }
        assert!(
            fit.weight[3].abs() < 1e-9,
            "a constant column takes no weight"
        );
    }

    #[test]
    fn the_dev_set_chooses_a_penalty_that_carries_over() {
        // Training: x1 = x0 plus a tiny wiggle that y follows 50-fold, so an unpenalised fit
        // leans on the difference x1 − x0. On dev that difference is large and unrelated to y:
        // only a penalty that removes the difference direction predicts dev.
        let wiggle = |i: usize| (((i * 7919) % 13) as f64 - 6.0) * 1e-3;
        let mut train = RidgeData {
            rows: 40,
            cols: 2,
            x: vec![],
            y: vec![],
        };
        for i in 0..40 {
            let a = (i % 8) as f64;
            train.x.extend([a, a + wiggle(i)]);
            train.y.push(a + 50.0 * wiggle(i));
        }
        let mut dev = RidgeData {
            rows: 20,
            cols: 2,
            x: vec![],
            y: vec![],
        };
        for i in 0..20 {
            let a = (i % 5) as f64;
            dev.x.extend([a, a + if i % 2 == 0 { 1.0 } else { -1.0 }]);
            dev.y.push(a);
        }
        let identity = |v: f64| v;
        let dev = RidgeDev {
            data: dev,
            output: &identity,
        };
        let fit = fit_ridge(&train, Some(&dev)).unwrap();
        assert!(
            fit.chosen_by.starts_with("dev Pearson"),
            "{}",
            fit.chosen_by
        );
        assert!(fit.penalty >= 1e-2, "penalty {}", fit.penalty);
        let pearson: f64 = fit.chosen_by["dev Pearson ".len()..].parse().unwrap();
        assert!(pearson > 0.9, "{}", fit.chosen_by);
    }

    #[test]
    fn too_few_samples_are_refused() {
        let d = RidgeData {
            rows: 4,
            cols: 1,
            x: vec![1.0, 2.0, 3.0, 4.0],
            y: vec![1.0, 2.0, 3.0, 4.0],
        };
        let e = fit_ridge(&d, None).unwrap_err().to_string();
        assert!(
            e.contains("at least 10 training samples") && e.contains("--linear-path none"),
            "{e}"
        );
    }
}
