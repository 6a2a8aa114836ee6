//! Fitting the k-mer linear model with its regularisation (and optionally its upper k) chosen on
//! a dev set: the `luminome-train kmer-linear` fit, and the k-mer floor every classifier run
//! reports beside its own metrics.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use luminome_io::token_dataset::TokenDataset;
use rayon::prelude::*;

use super::config::{check_k_range, KmerLinearConfig};
use super::features::{row_bases, KmerLayout, SparseRows};
use super::fit::{LinearWeights, Problem};
use crate::train::classification::{dev_metrics, score};

/// The default grid of L2 penalties on standardised features, strongest first (half-decades
/// from 10 to 1e-4).
pub const DEFAULT_L2_GRID: [f64; 11] = [
    10.0, 3.0, 1.0, 3e-1, 1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4,
];

/// A k's regularisation path stops after this many penalties in a row that do not beat its best
/// dev value so far: weaker penalties take the most iterations and, past the optimum, only
/// overfit further.
pub const PATH_PATIENCE: usize = 3;

/// What is searched.
#[derive(Debug, Clone)]
pub struct KmerSearch {
    pub k_min: usize,
    pub k_max: usize,
    /// Also choose the upper k on dev, from k_min..=k_max.
    pub select_k: bool,
    /// Penalties to try, strongest first.
    pub l2: Vec<f64>,
    /// Dev metric that selects (dev_mcc, dev_accuracy, dev_auroc, dev_f1, dev_loss) and whether
    /// higher is better.
    pub metric: String,
    pub maximize: bool,
    pub max_iter: usize,
    pub tol: f64,
}

impl KmerSearch {
    pub fn check(&self) -> Result<()> {
        check_k_range(self.k_min, self.k_max)?;
        if self.l2.is_empty() || self.l2.iter().any(|v| !v.is_finite() || *v < 0.0) {
            bail!(
                "--l2 {:?}: expected one or more finite values >= 0",
                self.l2
            );
        }
        if self.max_iter == 0 || !(self.tol.is_finite() && self.tol > 0.0) {
            bail!("--max-iter must be at least 1 and --tol positive");
        }
        Ok(())
    }

    fn k_max_candidates(&self) -> Vec<usize> {
        if self.select_k {
            (self.k_min..=self.k_max).collect()
        } else {
            vec![self.k_max]
        }
    }
}

/// A labelled dataset as k-mer feature rows.
pub struct KmerRows {
    pub rows: SparseRows,
    pub classes: Vec<u32>,
}

/// The bases of every record of a token dataset.
pub fn dataset_bases(ds: &TokenDataset) -> Result<Vec<Vec<u8>>> {
    let tok = ds.tokenizer();
    if !tok.scheme.has_base_spans() {
        bail!(
            "{}: {} tokens do not say which bases they stand for; k-mer features need a nucleotide or k-mer tokenized dataset",
            ds.path().display(),
            tok.scheme
        );
    }
    let all: Vec<usize> = (0..ds.len()).collect();
    let mut out = Vec::with_capacity(ds.len());
    for chunk in all.chunks(4096) {
        let b = ds.batch(chunk)?;
        let l = b.max_length;
        for r in 0..b.batch {
            let ids = &b.input_ids[r * l..(r + 1) * l];
            let mask = &b.attention_mask[r * l..(r + 1) * l];
            out.push(row_bases(tok, ids, mask).unwrap_or_default());
        }
    }
    Ok(out)
}

impl KmerRows {
    /// Feature rows of `bases` (scales: the training set's mean positions per k).
    pub fn new(layout: &KmerLayout, bases: &[Vec<u8>], scale: &[f64], classes: Vec<u32>) -> Self {
        let rows: Vec<Vec<(u32, f32)>> = bases
            .par_iter()
            .map(|b| layout.features(b, scale))
            .collect();
        Self {
            rows: SparseRows::from_rows(rows),
            classes,
        }
    }
}

/// Mean counted k-mers per row, per k; 1 where a k never occurs (its features are all zero).
pub fn mean_positions(layout: &KmerLayout, bases: &[Vec<u8>]) -> Vec<f64> {
    let per: Vec<Vec<usize>> = bases.par_iter().map(|b| layout.positions(b)).collect();
    (0..=layout.k_max - layout.k_min)
        .map(|j| {
            let s: usize = per.iter().map(|p| p[j]).sum();
            if s == 0 {
                1.0
            } else {
                s as f64 / per.len().max(1) as f64
            }
        })
        .collect()
}

/// Probabilities `[N, C]` row-major of rows under `w`, using features below `limit`.
pub fn probabilities(rows: &SparseRows, w: &LinearWeights, limit: usize) -> Vec<f64> {
    (0..rows.rows())
        .into_par_iter()
        .flat_map_iter(|r| {
            let (idx, val) = rows.row(r, limit);
            let z = w.logits(idx, val);
            let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(move |v| v / s)
        })
        .collect()
}

/// One fitted point of the search.
#[derive(Debug, Clone)]
pub struct GridPoint {
    pub k_max: usize,
    pub l2: f64,
    pub iterations: usize,
    pub train_objective: f64,
    pub dev: BTreeMap<String, f64>,
}

/// The chosen model and the whole search.
pub struct KmerFit {
    pub config: KmerLinearConfig,
    pub weights: LinearWeights,
    pub grid: Vec<GridPoint>,
    /// Index of the chosen point in `grid`.
    pub chosen: usize,
}

/// Fits every (k_max, λ) of `search` on `train` (features divided by their training RMS; λ
/// penalises the weights of those standardised features) (warm-started along the λ path), scores each on
/// `dev` and keeps the best by the search's metric (ties: the earlier point — smaller k, stronger
/// penalty). `template` carries the tokenizer, classes and max length of the config.
pub fn fit_and_select(
    search: &KmerSearch,
    train: (&[Vec<u8>], &[u32]),
    dev: (&[Vec<u8>], &[u32]),
    template: KmerLinearConfig,
    mut progress: impl FnMut(&GridPoint),
) -> Result<KmerFit> {
    search.check()?;
    let layout = KmerLayout {
        k_min: search.k_min,
        k_max: search.k_max,
    };
    let scale = mean_positions(&layout, train.0);
    let c = template.num_classes;
    let mut tr = KmerRows::new(&layout, train.0, &scale, train.1.to_vec());
    let mut dv = KmerRows::new(&layout, dev.0, &scale, dev.1.to_vec());
    // Fitted on columns divided by their root mean square over the training set: the penalty
    // treats every k-mer alike whatever its k (1-mers have ~4^(k-1) times the counts of k-mers),
    // and L-BFGS converges in tens of iterations instead of hundreds. The weights are mapped
    // back to the unscaled features at the end, so the model reads plain k-mer features.
    let rms = tr.rows.column_rms(layout.len());
    tr.rows.divide_columns(&rms);
    dv.rows.divide_columns(&rms);
    let cols = tr.rows.transpose(layout.len());
    let mut grid = Vec::new();
    let mut best: Option<(usize, f64, LinearWeights)> = None;
    for k_max in search.k_max_candidates() {
        let features = KmerLayout {
            k_min: search.k_min,
            k_max,
        }
        .len();
        let problem = Problem {
            rows: &tr.rows,
            cols: &cols,
            classes: &tr.classes,
            num_classes: c,
            features,
        };
        let mut w = LinearWeights::zeros(features, c);
        let mut path_best: Option<f64> = None;
        let mut worse = 0;
        for &l2 in &search.l2 {
            if worse >= PATH_PATIENCE {
                break;
            }
            let (fitted, objective, iterations) =
                problem.minimise(&w, l2, search.tol, search.max_iter);
            w = fitted;
            let probs = probabilities(&dv.rows, &w, features);
            let (loss, m) = score(&probs, &dv.classes, c)?;
            let point = GridPoint {
                k_max,
                l2,
                iterations,
                train_objective: objective,
                dev: dev_metrics(loss, &m),
            };
            progress(&point);
            let v = point.dev[&search.metric];
            let improves = |b: f64| if search.maximize { v > b } else { v < b };
            if path_best.is_none_or(&improves) {
                path_best = Some(v);
                worse = 0;
            } else {
                worse += 1;
            }
            let better = match &best {
                None => true,
                Some((_, b, _)) => {
                    if search.maximize {
                        v > *b
                    } else {
                        v < *b
                    }
                }
            };
            grid.push(point);
            if better && v.is_finite() {
                best = Some((grid.len() - 1, v, w.clone()));
            }
        }
    }
    let Some((chosen, _, mut weights)) = best else {
        bail!("no k-mer model had a finite {}", search.metric);
    };
    for (f, row) in weights.weight.chunks_mut(c).enumerate() {
        row.iter_mut().for_each(|w| *w /= rms[f]);
    }
    let k_max = grid[chosen].k_max;
    let config = KmerLinearConfig {
        k_min: search.k_min,
        k_max,
        scale: scale[..=k_max - search.k_min].to_vec(),
        l2: grid[chosen].l2,
        ..template
    };
    Ok(KmerFit {
        config,
        weights,
        grid,
        chosen,
    })
}
