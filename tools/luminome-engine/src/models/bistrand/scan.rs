//! The selective scan of a Mamba-style state-space layer, with its own backward pass.
//!
//! For each batch row b, channel e and state n, over positions t = 0..L:
//!
//!   h_t = exp(Δ_t · A[e,n]) · h_{t−1} + Δ_t · B_t[n] · x_t,      h_{−1} = 0
//!   y_t = Σ_n C_t[n] · h_t[n] + D[e] · x_t
//!
//! with x, Δ `[B, L, E]` (Δ > 0, input-dependent), B, C `[B, L, N]` (input-dependent, shared by
//! the channels), A `[E, N]` (negative) and D `[E]`. On the CPU it is one fused op: the forward
//! keeps only the running state; the backward recomputes the states of a block of channels
//! (L × channels × N values, cache-sized) and runs the recurrence backwards:
//!
//!   dh_t = dy_t · C_t + exp(Δ_{t+1} A) · dh_{t+1}
//!   dC_t += dy_t · h_t              dD += dy_t · x_t
//!   dΔ_t  = Σ_n dh_t (A · exp(Δ_t A) · h_{t−1} + B_t · x_t)
//!   dA   += dh_t · Δ_t · exp(Δ_t A) · h_{t−1}
//!   dB_t += dh_t · Δ_t · x_t        dx_t = dy_t · D + Σ_n dh_t · Δ_t · B_t
//!
//! Blocks of (row, channels) run in parallel; dB, dC (summed over channels) and dA, dD (summed
//! over rows) are reduced after. Other devices run [`selective_scan_primitive`], the same
//! recurrence from autograd-capable candle ops, one position at a time (correct, slow); the tests
//! check the fused op against it and against finite differences.

use candle_core::{backend::BackendStorage, CpuStorage, DType, Layout, Result, Shape, Tensor, D};
use rayon::prelude::*;

use crate::nn::kernels::{contiguous_slice, num_traits_float::Float};

/// Channels per parallel block.
const BLOCK: usize = 64;

/// y `[B, L, E]` of the selective scan (see the module documentation); `reverse`: the recurrence
/// runs from the last position to the first (the backward direction of a bidirectional layer,
/// without flipping the sequence).
pub fn selective_scan(
    x: &Tensor,
    delta: &Tensor,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    d: &Tensor,
    reverse: bool,
) -> Result<Tensor> {
    if x.device().is_cpu() && matches!(x.dtype(), DType::F32 | DType::F64) {
        let xd = Tensor::stack(&[x, delta], 0)?.contiguous()?;
        let bc = Tensor::cat(&[b, c], D::Minus1)?.contiguous()?;
        let ad = Tensor::cat(&[a, &d.unsqueeze(1)?], 1)?.contiguous()?;
        xd.apply_op3(&bc, &ad, SelectiveScan { reverse })
    } else {
        selective_scan_primitive(x, delta, a, b, c, d, reverse)
    }
}

/// The same scan from autograd-capable primitives, one position at a time.
pub fn selective_scan_primitive(
    x: &Tensor,
    delta: &Tensor,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    d: &Tensor,
    reverse: bool,
) -> Result<Tensor> {
    let (bs, l, e) = x.dims3()?;
    let n = a.dim(1)?;
    // [B, L, E, N]
    let decay = delta.unsqueeze(3)?.broadcast_mul(&a.unsqueeze(0)?.unsqueeze(0)?)?.exp()?;
    let input = (delta * x)?.unsqueeze(3)?.broadcast_mul(&b.unsqueeze(2)?)?;
    let mut h = Tensor::zeros((bs, e, n), x.dtype(), x.device())?;
    let mut ys = vec![None; l];
    for step in 0..l {
        let t = if reverse { l - 1 - step } else { step };
        h = ((decay.narrow(1, t, 1)?.squeeze(1)? * h)? + input.narrow(1, t, 1)?.squeeze(1)?)?;
        let ct = c.narrow(1, t, 1)?; // [B, 1, N]
        ys[t] = Some(h.broadcast_mul(&ct)?.sum(D::Minus1)?); // [B, E]
    }
    let ys: Vec<Tensor> = ys.into_iter().flatten().collect();
    let y = Tensor::stack(&ys, 1)?;
    y + x.broadcast_mul(&d.unsqueeze(0)?.unsqueeze(0)?)?
}

/// Sizes of one call.
#[derive(Clone, Copy)]
pub(super) struct Dims {
    b: usize,
    l: usize,
    e: usize,
    n: usize,
    /// Scan from the last position to the first.
    reverse: bool,
}

impl Dims {
    fn of(l1: &Layout, l2: &Layout, reverse: bool) -> Result<Self> {
        let (&[_, b, l, e], &[_, _, n2]) = (l1.dims(), l2.dims()) else {
            candle_core::bail!("selective scan: unexpected shapes {:?} {:?}", l1.dims(), l2.dims())
        };
        Ok(Self {
            b,
            l,
            e,
            n: n2 / 2,
            reverse,
        })
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

    fn blocks(&self) -> Vec<(usize, usize, usize)> {
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
    dx: Vec<T>,
    ddelta: Vec<T>,
    dbc: Vec<T>,
    dad: Vec<T>,
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
trait ScanKernels: Float {
    fn forward(dims: Dims, blk: (usize, usize, usize), x: &[Self], delta: &[Self], bc: &[Self], ad: &[Self]) -> Vec<Self>;
    #[allow(clippy::too_many_arguments)]
    fn backward(dims: Dims, blk: (usize, usize, usize), x: &[Self], delta: &[Self], dy: &[Self], bc: &[Self], ad: &[Self]) -> BlockGrads<Self>;
}

// multiversion's dispatcher calls the AVX2+FMA clone only after detecting those features at
// run time; the unsafe it generates is that call.
#[allow(unsafe_code)]
mod dispatch {
    use super::*;

    #[multiversion::multiversion(targets("x86_64+avx2+fma"))]
    pub(super) fn forward_f32(dims: Dims, blk: (usize, usize, usize), x: &[f32], delta: &[f32], bc: &[f32], ad: &[f32]) -> Vec<f32> {
        forward_block(dims, blk, x, delta, bc, ad)
    }

    #[allow(clippy::too_many_arguments)]
    #[multiversion::multiversion(targets("x86_64+avx2+fma"))]
    pub(super) fn backward_f32(dims: Dims, blk: (usize, usize, usize), x: &[f32], delta: &[f32], dy: &[f32], bc: &[f32], ad: &[f32]) -> BlockGrads<f32> {
        backward_block(dims, blk, x, delta, dy, bc, ad)
    }
}

impl ScanKernels for f32 {
    fn forward(dims: Dims, blk: (usize, usize, usize), x: &[f32], delta: &[f32], bc: &[f32], ad: &[f32]) -> Vec<f32> {
        dispatch::forward_f32(dims, blk, x, delta, bc, ad)
    }
    fn backward(dims: Dims, blk: (usize, usize, usize), x: &[f32], delta: &[f32], dy: &[f32], bc: &[f32], ad: &[f32]) -> BlockGrads<f32> {
        dispatch::backward_f32(dims, blk, x, delta, dy, bc, ad)
    }
}

impl ScanKernels for f64 {
    fn forward(dims: Dims, blk: (usize, usize, usize), x: &[f64], delta: &[f64], bc: &[f64], ad: &[f64]) -> Vec<f64> {
        forward_block(dims, blk, x, delta, bc, ad)
    }
    fn backward(dims: Dims, blk: (usize, usize, usize), x: &[f64], delta: &[f64], dy: &[f64], bc: &[f64], ad: &[f64]) -> BlockGrads<f64> {
        backward_block(dims, blk, x, delta, dy, bc, ad)
    }
}

struct SelectiveScan {
    reverse: bool,
}

fn scan_forward<T: ScanKernels>(
    s1: &[T],
    s2: &[T],
    s3: &[T],
    dims: Dims,
) -> Vec<T> {
    let Dims { b, l, e, .. } = dims;
    let size = b * l * e;
    let (x, delta) = s1.split_at(size);
    let blocks = dims.blocks();
    let parts: Vec<Vec<T>> = blocks
        .par_iter()
        .map(|&blk| T::forward(dims, blk, x, delta, s2, s3))
        .collect();
    let mut y = vec![T::zero(); size];
    for (&(row, e0, e1), part) in blocks.iter().zip(&parts) {
        let w = e1 - e0;
        for t in 0..l {
            let at = (row * l + t) * e + e0;
            y[at..at + w].copy_from_slice(&part[t * w..(t + 1) * w]);
        }
    }
    y
}

impl candle_core::CustomOp3 for SelectiveScan {
    fn name(&self) -> &'static str {
        "luminome-selective-scan"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let dims = Dims::of(l1, l2, self.reverse)?;
        let shape = Shape::from_dims(&[dims.b, dims.l, dims.e]);
        let out = match (s1, s2, s3) {
            (CpuStorage::F32(a), CpuStorage::F32(b), CpuStorage::F32(c)) => {
                CpuStorage::F32(scan_forward(
                    contiguous_slice(a, l1, "scan")?,
                    contiguous_slice(b, l2, "scan")?,
                    contiguous_slice(c, l3, "scan")?,
                    dims,
                ))
            }
            (CpuStorage::F64(a), CpuStorage::F64(b), CpuStorage::F64(c)) => {
                CpuStorage::F64(scan_forward(
                    contiguous_slice(a, l1, "scan")?,
                    contiguous_slice(b, l2, "scan")?,
                    contiguous_slice(c, l3, "scan")?,
                    dims,
                ))
            }
            _ => candle_core::bail!("selective scan: f32 or f64, got {:?}", s1.dtype()),
        };
        Ok((out, shape))
    }

    fn bwd(
        &self,
        xd: &Tensor,
        bc: &Tensor,
        ad: &Tensor,
        _y: &Tensor,
        dy: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (_, b, l, e) = xd.dims4()?;
        let n2 = bc.dim(2)?;
        let packed = Tensor::cat(&[xd, &dy.unsqueeze(0)?], 0)?.contiguous()?;
        let flat = packed.apply_op3_no_bwd(
            &bc.contiguous()?,
            &ad.contiguous()?,
            &SelectiveScanBackward {
                reverse: self.reverse,
            },
        )?;
        let size = b * l * e;
        let dxd = flat.narrow(0, 0, 2 * size)?.reshape((2, b, l, e))?;
        let dbc = flat.narrow(0, 2 * size, b * l * n2)?.reshape((b, l, n2))?;
        let dad = flat
            .narrow(0, 2 * size + b * l * n2, e * (n2 / 2 + 1))?
            .reshape((e, n2 / 2 + 1))?;
        Ok((Some(dxd), Some(dbc), Some(dad)))
    }
}

/// Inputs: `[3, B, L, E]` (x, Δ, dy), `[B, L, 2N]`, `[E, N+1]`; output: the flat gradients of
/// (x, Δ), (B, C), (A, D), in that order.
struct SelectiveScanBackward {
    reverse: bool,
}

fn scan_backward<T: ScanKernels>(
    s1: &[T],
    s2: &[T],
    s3: &[T],
    dims: Dims,
) -> Vec<T> {
    let Dims { b, l, e, n, .. } = dims;
    let size = b * l * e;
    let (x, rest) = s1.split_at(size);
    let (delta, dy) = rest.split_at(size);
    let blocks = dims.blocks();
    let parts: Vec<BlockGrads<T>> = blocks
        .par_iter()
        .map(|&blk| T::backward(dims, blk, x, delta, dy, s2, s3))
        .collect();
    let mut out = vec![T::zero(); 2 * size + b * l * 2 * n + e * (n + 1)];
    let (dxd, rest) = out.split_at_mut(2 * size);
    let (dbc, dad) = rest.split_at_mut(b * l * 2 * n);
    let (dx, ddelta) = dxd.split_at_mut(size);
    for (&(row, e0, e1), g) in blocks.iter().zip(&parts) {
        let w = e1 - e0;
        for t in 0..l {
            let at = (row * l + t) * e + e0;
            dx[at..at + w].copy_from_slice(&g.dx[t * w..(t + 1) * w]);
            ddelta[at..at + w].copy_from_slice(&g.ddelta[t * w..(t + 1) * w]);
        }
        let rows = &mut dbc[row * l * 2 * n..(row + 1) * l * 2 * n];
        for (o, &v) in rows.iter_mut().zip(&g.dbc) {
            *o = *o + v;
        }
        let chans = &mut dad[e0 * (n + 1)..e1 * (n + 1)];
        for (o, &v) in chans.iter_mut().zip(&g.dad) {
            *o = *o + v;
        }
    }
    out
}

impl candle_core::CustomOp3 for SelectiveScanBackward {
    fn name(&self) -> &'static str {
        "luminome-selective-scan-backward"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let dims = Dims::of(l1, l2, self.reverse)?;
        let Dims { b, l, e, n, .. } = dims;
        let len = 2 * b * l * e + b * l * 2 * n + e * (n + 1);
        let out = match (s1, s2, s3) {
            (CpuStorage::F32(a), CpuStorage::F32(bb), CpuStorage::F32(c)) => {
                CpuStorage::F32(scan_backward(
                    contiguous_slice(a, l1, "scan bwd")?,
                    contiguous_slice(bb, l2, "scan bwd")?,
                    contiguous_slice(c, l3, "scan bwd")?,
                    dims,
                ))
            }
            (CpuStorage::F64(a), CpuStorage::F64(bb), CpuStorage::F64(c)) => {
                CpuStorage::F64(scan_backward(
                    contiguous_slice(a, l1, "scan bwd")?,
                    contiguous_slice(bb, l2, "scan bwd")?,
                    contiguous_slice(c, l3, "scan bwd")?,
                    dims,
                ))
            }
            _ => candle_core::bail!("selective scan backward: f32 or f64"),
        };
        Ok((out, Shape::from_dims(&[len])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::gradcheck::max_grad_error;
    use crate::nn::kernels::test_support::randn;

    /// Inputs of a small scan in f64: x, Δ > 0, A < 0, B, C, D.
    fn inputs(b: usize, l: usize, e: usize, n: usize) -> [Tensor; 6] {
        let x = randn(&[b, l, e], 1);
        let delta = randn(&[b, l, e], 2).abs().unwrap().affine(0.3, 0.05).unwrap();
        let a = randn(&[e, n], 3).abs().unwrap().affine(-1.0, -0.1).unwrap();
        let bm = randn(&[b, l, n], 4);
        let cm = randn(&[b, l, n], 5);
        let d = randn(&[e], 6);
        [x, delta, a, bm, cm, d]
    }

    fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
        (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap()
            .to_dtype(DType::F64)
            .unwrap()
            .to_scalar::<f64>()
            .unwrap()
    }

    #[test]
    fn the_fused_scan_equals_the_recurrence_written_with_primitives() {
        // 77 channels: a full block of 64 and a partial one; both directions.
        let [x, dl, a, bm, cm, d] = inputs(2, 9, 77, 5);
        for reverse in [false, true] {
            let fused = selective_scan(&x, &dl, &a, &bm, &cm, &d, reverse).unwrap();
            let slow = selective_scan_primitive(&x, &dl, &a, &bm, &cm, &d, reverse).unwrap();
            assert!(max_diff(&fused, &slow) < 1e-12);
            let f32 = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
            let fused32 = selective_scan(
                &f32(&x),
                &f32(&dl),
                &f32(&a),
                &f32(&bm),
                &f32(&cm),
                &f32(&d),
                reverse,
            )
            .unwrap();
            assert!(max_diff(&fused32, &f32(&slow)) < 1e-4);
        }
        // The reverse scan is the forward scan of the flipped sequence, flipped back.
        let flip = |t: &Tensor| t.flip(&[1]).unwrap();
        let rev = selective_scan(&x, &dl, &a, &bm, &cm, &d, true).unwrap();
        let via_flip = flip(
            &selective_scan(&flip(&x), &flip(&dl), &a, &flip(&bm), &flip(&cm), &d, false).unwrap(),
        );
        assert!(max_diff(&rev, &via_flip) < 1e-12);
    }

    #[test]
    fn every_input_gradient_matches_finite_differences() {
        let [x, dl, a, bm, cm, d] = inputs(2, 6, 3, 4);
        let w = randn(&[2, 6, 3], 99);
        for reverse in [false, true] {
        let loss = |x: &Tensor, dl: &Tensor, a: &Tensor, bm: &Tensor, cm: &Tensor, d: &Tensor| {
            selective_scan(x, dl, a, bm, cm, d, reverse)?.mul(&w)?.sum_all()
        };
        let checks = [
            max_grad_error(&x, 1e-6, &|v| loss(v, &dl, &a, &bm, &cm, &d)).unwrap(),
            max_grad_error(&dl, 1e-6, &|v| loss(&x, v, &a, &bm, &cm, &d)).unwrap(),
            max_grad_error(&a, 1e-6, &|v| loss(&x, &dl, v, &bm, &cm, &d)).unwrap(),
            max_grad_error(&bm, 1e-6, &|v| loss(&x, &dl, &a, v, &cm, &d)).unwrap(),
            max_grad_error(&cm, 1e-6, &|v| loss(&x, &dl, &a, &bm, v, &d)).unwrap(),
            max_grad_error(&d, 1e-6, &|v| loss(&x, &dl, &a, &bm, &cm, v)).unwrap(),
        ];
        for (name, err) in ["x", "delta", "A", "B", "C", "D"].iter().zip(checks) {
            assert!(err < 1e-6, "reverse {reverse}: gradient of {name}: relative error {err}");
        }
        }
    }
}
