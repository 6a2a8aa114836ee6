//! The selective scan's per-block CPU kernels: the forward recurrence over a block of channels,
//! and the backward pass that recomputes its states (see the parent module for the equations).

use candle_core::{Layout, Result};

use crate::nn::kernels::num_traits_float::Float;

/// Channels per parallel block.
const BLOCK: usize = 64;

/// Sizes of one call.
#[derive(Clone, Copy)]
pub(super) struct Dims {
    pub(super) b: usize,
    pub(super) l: usize,
    pub(super) e: usize,
    pub(super) n: usize,
    /// Scan from the last position to the first.
    reverse: bool,
}

impl Dims {
    pub(super) fn of(l1: &Layout, l2: &Layout, reverse: bool) -> Result<Self> {
        let (&[_, b, l, e], &[_, _, n2]) = (l1.dims(), l2.dims()) else {
            candle_core::bail!(
                "selective scan: unexpected shapes {:?} {:?}",
                l1.dims(),
                l2.dims()
            )
        };
        Ok(Self {
            b,
            l,
            e,
            n: n2 / 2,
            reverse,
        })
    }

    /// Whether the scan runs from the last position to the first.
    #[cfg(feature = "cuda")]
    pub(super) fn is_reverse(&self) -> bool {
        self.reverse
    }

    /// The position of scan step `step`.
    #[inline(always)]
    fn position(&self, step: usize) -> usize {
        if self.reverse {
            self.l - 1 - step
        } else {
            step
        }
    }

    pub(super) fn blocks(&self) -> Vec<(usize, usize, usize)> {
        let mut v = Vec::new();
        for row in 0..self.b {
            for e0 in (0..self.e).step_by(BLOCK) {
                v.push((row, e0, (e0 + BLOCK).min(self.e)));
            }
        }
        v
    }
}

/// A block's A transposed to state-major `[N][w]`, so the loops run over contiguous channels.
fn block_a<T: Float>(ad: &[T], e0: usize, e1: usize, n: usize) -> Vec<T> {
    let w = e1 - e0;
    let mut at = vec![T::zero(); n * w];
    for (k, ei) in (e0..e1).enumerate() {
        for j in 0..n {
            at[j * w + k] = ad[ei * (n + 1) + j];
        }
    }
    at
}

// The loops over a block's channels, as functions of their slices: the `&mut` parameters tell
// the compiler the slices do not overlap (it keeps that when inlining), so every loop vectorises
// without runtime overlap checks.

/// h ← exp(Δ·A)·h + Δx·B;  y += C·h  (one state, every channel of the block).
#[inline(always)]
fn state_step<T: Float>(h: &mut [T], y: &mut [T], dr: &[T], a: &[T], dvx: &[T], b: T, c: T) {
    for k in 0..h.len() {
        h[k] = (dr[k] * a[k]).fast_exp() * h[k] + dvx[k] * b;
        y[k] = y[k] + c * h[k];
    }
}

/// The recomputed state of one position and its decays.
#[inline(always)]
fn state_recompute<T: Float>(
    cur: &mut [T],
    dec: &mut [T],
    prev: &[T],
    dr: &[T],
    a: &[T],
    dvx: &[T],
    b: T,
) {
    for k in 0..cur.len() {
        let d = (dr[k] * a[k]).fast_exp();
        dec[k] = d;
        cur[k] = d * prev[k] + dvx[k] * b;
    }
}

/// One state's backward step at one position, every channel of the block.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn state_backward<T: Float>(
    dh: &mut [T],
    next: &mut [T],
    ddelta: &mut [T],
    da: &mut [T],
    dx: &mut [T],
    (dy, decay, h_prev): (&[T], &[T], &[T]),
    (a, dr, xr): (&[T], &[T], &[T]),
    (b, c): (T, T),
) {
    for k in 0..dh.len() {
        dh[k] = dy[k] * c + next[k];
        let g_prev = dh[k] * decay[k] * h_prev[k];
        ddelta[k] = ddelta[k] + g_prev * a[k] + dh[k] * b * xr[k];
        da[k] = da[k] + g_prev * dr[k];
        dx[k] = dx[k] + dh[k] * dr[k] * b;
        next[k] = dh[k] * decay[k];
    }
}

/// Forward of one block of channels `e0..e1` of batch row `row`: y `[L, w]`, w = e1 − e0.
/// States are kept state-major (`h[j][k]`): every inner loop runs over the block's contiguous
/// channels with no dependency between iterations, so it vectorises (with the polynomial exp);
/// the recurrence runs over t.
#[inline(always)]
fn forward_block<T: Float>(
    dims: Dims,
    (row, e0, e1): (usize, usize, usize),
    x: &[T],
    delta: &[T],
    bc: &[T],
    ad: &[T],
) -> Vec<T> {
    let Dims { l, e, n, .. } = dims;
    let w = e1 - e0;
    let at = block_a(ad, e0, e1, n);
    let dvec: Vec<T> = (e0..e1).map(|ei| ad[ei * (n + 1) + n]).collect();
    let mut h = vec![T::zero(); n * w];
    let mut dvx = vec![T::zero(); w];
    let mut y = vec![T::zero(); l * w];
    for step in 0..l {
        let t = dims.position(step);
        let base = (row * l + t) * e;
        let (xr, dr) = (&x[base + e0..base + e1], &delta[base + e0..base + e1]);
        let bct = &bc[(row * l + t) * 2 * n..(row * l + t + 1) * 2 * n];
        let (bt, ct) = bct.split_at(n);
        let yt = &mut y[t * w..(t + 1) * w];
        for k in 0..w {
            dvx[k] = dr[k] * xr[k];
            yt[k] = dvec[k] * xr[k];
        }
        for j in 0..n {
            state_step(
                &mut h[j * w..(j + 1) * w],
                yt,
                dr,
                &at[j * w..(j + 1) * w],
                &dvx,
                bt[j],
                ct[j],
            );
        }
    }
    y
}

/// Gradients of one block: dx, dΔ `[L, w]`, dB‖dC `[L, 2N]` (this block's share), dA‖dD `[w, N+1]`.
pub(super) struct BlockGrads<T> {
    pub(super) dx: Vec<T>,
    pub(super) ddelta: Vec<T>,
    pub(super) dbc: Vec<T>,
    pub(super) dad: Vec<T>,
}

/// Σ_k v[k], in lanes of 8 (so the loop vectorises) then across the lanes.
#[inline(always)]
fn lane_sum<T: Float>(terms: impl Fn(usize) -> T, w: usize) -> T {
    let mut lanes = [T::zero(); 8];
    let full = w / 8 * 8;
    for c in (0..full).step_by(8) {
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = *lane + terms(c + i);
        }
    }
    let mut s = T::zero();
    for k in full..w {
        s = s + terms(k);
    }
    lanes.iter().fold(s, |a, &b| a + b)
}

#[inline(always)]
fn backward_block<T: Float>(
    dims: Dims,
    (row, e0, e1): (usize, usize, usize),
    x: &[T],
    delta: &[T],
    dy: &[T],
    bc: &[T],
    ad: &[T],
) -> BlockGrads<T> {
    let Dims { l, e, n, .. } = dims;
    let w = e1 - e0;
    let at = block_a(ad, e0, e1, n);
    let dvec: Vec<T> = (e0..e1).map(|ei| ad[ei * (n + 1) + n]).collect();
    // States h_t and decays exp(Δ_t A) of every position, state-major (recomputed; the block is
    // sized to stay in cache).
    let mut hs = vec![T::zero(); l * n * w];
    let mut decays = vec![T::zero(); l * n * w];
    let mut dvx = vec![T::zero(); w];
    let zeros = vec![T::zero(); n * w];
    for step in 0..l {
        let t = dims.position(step);
        let base = (row * l + t) * e;
        let (xr, dr) = (&x[base + e0..base + e1], &delta[base + e0..base + e1]);
        let bt = &bc[(row * l + t) * 2 * n..(row * l + t) * 2 * n + n];
        for k in 0..w {
            dvx[k] = dr[k] * xr[k];
        }
        // The states of t − 1 and t as separate slices, so the loop below has no aliasing to
        // rule out and vectorises.
        let (done, rest) = hs.split_at_mut(step * n * w);
        let prev_states = if step > 0 {
            &done[(step - 1) * n * w..]
        } else {
            &zeros[..]
        };
        let cur = &mut rest[..n * w];
        let dec = &mut decays[step * n * w..(step + 1) * n * w];
        for (j, &bj) in bt.iter().enumerate() {
            let r = j * w..(j + 1) * w;
            state_recompute(
                &mut cur[r.clone()],
                &mut dec[r.clone()],
                &prev_states[r.clone()],
                dr,
                &at[r],
                &dvx,
                bj,
            );
        }
    }
    let mut g = BlockGrads {
        dx: vec![T::zero(); l * w],
        ddelta: vec![T::zero(); l * w],
        dbc: vec![T::zero(); l * 2 * n],
        dad: vec![T::zero(); w * (n + 1)],
    };
    // dA in state-major order while accumulating; transposed into dA‖dD at the end.
    let mut da = vec![T::zero(); n * w];
    let mut dd = vec![T::zero(); w];
    let mut next = vec![T::zero(); n * w];
    let mut dh = vec![T::zero(); w];
    for step in (0..l).rev() {
        let t = dims.position(step);
        let base = (row * l + t) * e;
        let (xr, dr, dyr) = (
            &x[base + e0..base + e1],
            &delta[base + e0..base + e1],
            &dy[base + e0..base + e1],
        );
        let bct = &bc[(row * l + t) * 2 * n..(row * l + t + 1) * 2 * n];
        let (bt, ct) = bct.split_at(n);
        let dxt = &mut g.dx[t * w..(t + 1) * w];
        let ddt = &mut g.ddelta[t * w..(t + 1) * w];
        for k in 0..w {
            dvx[k] = dr[k] * xr[k];
            dxt[k] = dyr[k] * dvec[k];
            ddt[k] = T::zero();
            dd[k] = dd[k] + dyr[k] * xr[k];
        }
        let prev_states = if step > 0 {
            &hs[(step - 1) * n * w..step * n * w]
        } else {
            &zeros[..]
        };
        for j in 0..n {
            let at_tj = (step * n + j) * w;
            let r = j * w..(j + 1) * w;
            let h_t = &hs[at_tj..at_tj + w];
            state_backward(
                &mut dh,
                &mut next[r.clone()],
                ddt,
                &mut da[r.clone()],
                dxt,
                (dyr, &decays[at_tj..at_tj + w], &prev_states[r.clone()]),
                (&at[r], dr, xr),
                (bt[j], ct[j]),
            );
            let dct = lane_sum(|k| dyr[k] * h_t[k], w);
            let dbt = lane_sum(|k| dh[k] * dvx[k], w);
            g.dbc[t * 2 * n + n + j] = g.dbc[t * 2 * n + n + j] + dct;
            g.dbc[t * 2 * n + j] = g.dbc[t * 2 * n + j] + dbt;
        }
    }
    for k in 0..w {
        for j in 0..n {
            g.dad[k * (n + 1) + j] = da[j * w + k];
        }
        g.dad[k * (n + 1) + n] = dd[k];
    }
    g
}

/// The block kernels per element type: f32 runs an AVX2+FMA build where the CPU has it (chosen
/// at run time; the generic code vectorises its inner loops there), f64 (tests) the baseline one.
pub(super) trait ScanKernels: Float {
    fn forward(
        dims: Dims,
        blk: (usize, usize, usize),
        x: &[Self],
        delta: &[Self],
        bc: &[Self],
        ad: &[Self],
    ) -> Vec<Self>;
    #[allow(clippy::too_many_arguments)]
    fn backward(
        dims: Dims,
        blk: (usize, usize, usize),
        x: &[Self],
        delta: &[Self],
        dy: &[Self],
        bc: &[Self],
        ad: &[Self],
    ) -> BlockGrads<Self>;
}

// multiversion's dispatcher calls the AVX2+FMA clone only after detecting those features at
// run time; the unsafe it generates is that call.
#[allow(unsafe_code)]
mod dispatch {
    use super::*;

    #[multiversion::multiversion(targets("x86_64+avx2+fma"))]
    pub(super) fn forward_f32(
        dims: Dims,
        blk: (usize, usize, usize),
        x: &[f32],
        delta: &[f32],
        bc: &[f32],
        ad: &[f32],
    ) -> Vec<f32> {
        forward_block(dims, blk, x, delta, bc, ad)
    }

    #[allow(clippy::too_many_arguments)]
    #[multiversion::multiversion(targets("x86_64+avx2+fma"))]
    pub(super) fn backward_f32(
        dims: Dims,
        blk: (usize, usize, usize),
        x: &[f32],
        delta: &[f32],
        dy: &[f32],
        bc: &[f32],
        ad: &[f32],
    ) -> BlockGrads<f32> {
        backward_block(dims, blk, x, delta, dy, bc, ad)
    }
}

impl ScanKernels for f32 {
    fn forward(
        dims: Dims,
        blk: (usize, usize, usize),
        x: &[f32],
        delta: &[f32],
        bc: &[f32],
        ad: &[f32],
    ) -> Vec<f32> {
        dispatch::forward_f32(dims, blk, x, delta, bc, ad)
    }
    fn backward(
        dims: Dims,
        blk: (usize, usize, usize),
        x: &[f32],
        delta: &[f32],
        dy: &[f32],
        bc: &[f32],
        ad: &[f32],
    ) -> BlockGrads<f32> {
        dispatch::backward_f32(dims, blk, x, delta, dy, bc, ad)
    }
}

impl ScanKernels for f64 {
    fn forward(
        dims: Dims,
        blk: (usize, usize, usize),
        x: &[f64],
        delta: &[f64],
        bc: &[f64],
        ad: &[f64],
    ) -> Vec<f64> {
        forward_block(dims, blk, x, delta, bc, ad)
    }
    fn backward(
        dims: Dims,
        blk: (usize, usize, usize),
        x: &[f64],
        delta: &[f64],
        dy: &[f64],
        bc: &[f64],
        ad: &[f64],
    ) -> BlockGrads<f64> {
        backward_block(dims, blk, x, delta, dy, bc, ad)
    }
}
