//! The f32 row kernels: softmax of a row (also with the padding bias added in the maximum's
//! pass) and its backward. Each row runs as eight running lanes (the sum of exponentials, the
//! backward's dot product; the maximum in four sets of them), combined in a fixed order at the
//! end (lanes 0..8, then the tail), with the engine's branch-free `exp_f32_fma`: loops the
//! compiler vectorises, cloned for AVX-512 and AVX2+FMA and chosen at run time. libm's `expf`,
//! one call per score, and a single running sum had made the softmax ~20 % of a training step
//! at L 512 (docs/benchmarks.md, 2026-11-25 evening). The order of operations is fixed by the
//! source and a fused multiply-add is exactly rounded wherever it runs, so every clone gives
//! the same bits. Against the f64 softmax the results agree to a few ulp (tests in the parent).
//!
//! multiversion's dispatcher calls a clone only after detecting its features at run time; the
//! unsafe it generates is that call (allowed where this module is declared).

use crate::nn::kernels::num_traits_float::exp_f32_fma;

const LANES: usize = 8;

/// e^z for z ≤ 0, exactly 0 below −87 where the exp clamps (to ~1e−38): a padded key
/// (score − 1e9) gets no probability at all, as with libm's exp. A NaN stays NaN (the
/// clamp would turn it into a number), so a diverged model's NaN reaches the output.
#[inline(always)]
fn exp_below_max(z: f32) -> f32 {
    let e = exp_f32_fma(z);
    // Two selects, no branch: the loop over a row vectorises.
    let e = if z < -87.0 { 0.0 } else { e };
    if z.is_nan() {
        z
    } else {
        e
    }
}

/// The maximum of a row, in four independent sets of lanes (a maximum is the same in any
/// order; one set was a chain of dependent instructions). With `bias`, the row becomes
/// row + bias in the same pass (rounded as candle's broadcast add rounds it).
#[inline(always)]
fn row_max(d: &mut [f32], bias: Option<&[f32]>) -> f32 {
    let mut lanes = [[f32::NEG_INFINITY; LANES]; 4];
    let mut chunks = d.chunks_exact_mut(4 * LANES);
    let mut at = 0;
    for c in &mut chunks {
        if let Some(b) = bias {
            for (v, &b) in c.iter_mut().zip(&b[at..at + 4 * LANES]) {
                *v += b;
            }
        }
        for (a, set) in lanes.iter_mut().enumerate() {
            for j in 0..LANES {
                set[j] = set[j].max(c[a * LANES + j]);
            }
        }
        at += 4 * LANES;
    }
    let rest = chunks.into_remainder();
    if let Some(b) = bias {
        for (v, &b) in rest.iter_mut().zip(&b[at..]) {
            *v += b;
        }
    }
    // Whole lanes of the remainder too: a row shorter than 32 (a table's 31 columns and
    // [CLS]) was all remainder, one dependent scalar chain.
    let mut tail = rest.chunks_exact(LANES);
    for c in &mut tail {
        for j in 0..LANES {
            lanes[0][j] = lanes[0][j].max(c[j]);
        }
    }
    let rest = tail.remainder();
    let mut set = lanes[0];
    for other in &lanes[1..] {
        for j in 0..LANES {
            set[j] = set[j].max(other[j]);
        }
    }
    let mut max = f32::NEG_INFINITY;
    for &v in set.iter().chain(rest.iter()) {
        max = max.max(v);
    }
    max
}

/// e^(x − max) of every element, divided by their sum: exponentials sixteen at a time,
/// each added to its lane of eight in order (lane j: elements j, j + 8, j + 16, …), the
/// lanes added 0..8, then the tail.
#[inline(always)]
fn exp_normalize(d: &mut [f32], max: f32) {
    let mut sums = [0f32; LANES];
    let mut chunks = d.chunks_exact_mut(2 * LANES);
    for c in &mut chunks {
        let mut e = [0f32; 2 * LANES];
        for j in 0..2 * LANES {
            e[j] = exp_below_max(c[j] - max);
        }
        for j in 0..LANES {
            sums[j] += e[j];
        }
        for j in 0..LANES {
            sums[j] += e[LANES + j];
        }
        c.copy_from_slice(&e);
    }
    let mut chunks = chunks.into_remainder().chunks_exact_mut(LANES);
    for c in &mut chunks {
        for j in 0..LANES {
            c[j] = exp_below_max(c[j] - max);
            sums[j] += c[j];
        }
    }
    let mut sum = sums.iter().fold(0f32, |s, &v| s + v);
    // The last < 8 exponentials as one lane-wide vector (padding lanes computed and dropped),
    // then added in order: the same values and sum as one at a time.
    let tail = chunks.into_remainder();
    let mut e = [0f32; LANES];
    e[..tail.len()].copy_from_slice(tail);
    for v in e.iter_mut() {
        *v = exp_below_max(*v - max);
    }
    for (o, &v) in tail.iter_mut().zip(&e) {
        *o = v;
        sum += v;
    }
    let inv = 1.0 / sum;
    for o in d.iter_mut() {
        *o *= inv;
    }
}

#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma"
))]
pub(crate) fn softmax_row(d: &mut [f32]) {
    let max = row_max(d, None);
    exp_normalize(d, max)
}

/// The softmax of `d + bias` (a row of the attention scores and the padding bias), in
/// place: the same numbers as adding the bias, then [`softmax_row`].
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma"
))]
pub(crate) fn softmax_row_biased(d: &mut [f32], bias: &[f32]) {
    let max = row_max(d, Some(bias));
    exp_normalize(d, max)
}

#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma"
))]
pub(crate) fn softmax_bwd_row(y: &[f32], g: &[f32], d: &mut [f32]) {
    let mut dots = [0f32; LANES];
    let (yc, gc) = (y.chunks_exact(LANES), g.chunks_exact(LANES));
    let (yr, gr) = (yc.remainder(), gc.remainder());
    for (a, b) in yc.zip(gc) {
        for j in 0..LANES {
            dots[j] += a[j] * b[j];
        }
    }
    let mut dot = dots.iter().fold(0f32, |s, &v| s + v);
    for (a, b) in yr.iter().zip(gr) {
        dot += a * b;
    }
    for ((o, &a), &b) in d.iter_mut().zip(y).zip(g) {
        *o = a * (b - dot);
    }
}
