//! The selective scan's per-block CPU kernels: the forward recurrence over a block of channels
//! and what the passes share (sizes, chunks of lanes, a chunk's parameters and inputs, the
//! state step), the choice of kernel per element type and CPU; the backward pass that
//! recomputes the states is in `backward.rs`, the AVX-512 kernels in `avx512.rs` (see the
//! parent module for the equations).

use candle_core::{Layout, Result};

use crate::nn::kernels::num_traits_float::Float;

#[cfg(target_arch = "x86_64")]
mod avx512;
mod backward;

use backward::backward_block;
pub(super) use backward::{BlockGrads, ChannelRows, ChunkTargets, Scratch};

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

    /// The sizes of a scan over x `[b, l, e]` with `n` states.
    pub(super) fn new((b, l, e): (usize, usize, usize), n: usize, reverse: bool) -> Self {
        Self {
            b,
            l,
            e,
            n,
            reverse,
        }
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

    /// The parallel blocks of channels, row by row: every batch row's channels in blocks of
    /// `BLOCK` (the last one shorter).
    pub(super) fn blocks(&self) -> Vec<(usize, usize, usize)> {
        (0..self.b)
            .flat_map(|row| self.blocks_of_row(row))
            .collect()
    }

    /// Batch row `row`'s blocks, in `blocks`' order.
    pub(super) fn blocks_of_row(&self, row: usize) -> Vec<(usize, usize, usize)> {
        (0..self.e)
            .step_by(BLOCK)
            .map(|e0| (row, e0, (e0 + BLOCK).min(self.e)))
            .collect()
    }
}

/// What every block of one call reads: x, Δ and (backward) dy `[B, L, E]`, B‖C `[B, L, 2N]`,
/// A‖D `[E, N+1]`. `dy` is empty in the forward pass.
#[derive(Clone, Copy)]
pub(super) struct Inputs<'a, T> {
    pub(super) x: &'a [T],
    pub(super) delta: &'a [T],
    pub(super) dy: &'a [T],
    pub(super) bc: &'a [T],
    pub(super) ad: &'a [T],
}

/// Channels computed together: one AVX-512 vector of f32, two AVX2 ones. A block is cut into
/// such chunks; a chunk's running values (its output, its gradient accumulators) stay in
/// registers across the states, and the last, partial chunk is padded with zeros (Δ = x = A = 0:
/// its states stay 0 and add nothing).
const LANES: usize = 16;
type Lanes<T> = [T; LANES];

/// `src` (at most `LANES` values) padded with zeros.
#[inline(always)]
fn lanes_of<T: Float>(src: &[T]) -> Lanes<T> {
    // A full chunk as a fixed-size copy: a slice copy of run-time length is a `memcpy` call
    // (it showed in the profile: several per position and chunk).
    if let Ok(full) = <&Lanes<T>>::try_from(src) {
        return *full;
    }
    let mut v = [T::zero(); LANES];
    v[..src.len()].copy_from_slice(src);
    v
}

/// Writes the first `dst.len()` lanes of `v` (a fixed-size store for a full chunk).
#[inline(always)]
fn store_lanes<T: Float>(dst: &mut [T], v: &Lanes<T>) {
    if let Ok(full) = <&mut Lanes<T>>::try_from(&mut *dst) {
        *full = *v;
    } else {
        let len = dst.len();
        dst.copy_from_slice(&v[..len]);
    }
}

/// Σ of the lanes in a fixed order (the same bits whatever the vector width): the two halves
/// added lane by lane, then those eight in order.
#[inline(always)]
fn lane_sum<T: Float>(v: &Lanes<T>) -> T {
    let mut half = [T::zero(); LANES / 2];
    for k in 0..LANES / 2 {
        half[k] = v[k] + v[k + LANES / 2];
    }
    half.iter().fold(T::zero(), |s, &v| s + v)
}

/// The columns `c0..c1` of A (per state) and D of one chunk, padded; A·log₂e per state, the
/// exponent of the decays taken as powers of 2 (`fast_exp2`: the AVX-512 kernel's instructions
/// compute 2^t, not e^x).
struct ChunkParams<T> {
    a: Vec<Lanes<T>>,
    a_log2e: Vec<Lanes<T>>,
    d: Lanes<T>,
}

impl<T: Float> ChunkParams<T> {
    fn of(ad: &[T], (c0, c1): (usize, usize), n: usize) -> Self {
        let col = |j: usize| {
            let mut v = [T::zero(); LANES];
            for (k, ei) in (c0..c1).enumerate() {
                v[k] = ad[ei * (n + 1) + j];
            }
            v
        };
        let log2e = T::from(std::f64::consts::LOG2_E).expect("a float");
        let a: Vec<Lanes<T>> = (0..n).map(col).collect();
        let a_log2e = a.iter().map(|v| v.map(|a| a * log2e)).collect();
        Self {
            a,
            a_log2e,
            d: col(n),
        }
    }
}

/// The chunk's channels `c0..c1` of a `[B, L, E]` input at (row, t), padded.
#[inline(always)]
fn lanes_at<T: Float>(
    dims: &Dims,
    (row, t): (usize, usize),
    (c0, c1): (usize, usize),
    src: &[T],
) -> Lanes<T> {
    let base = (row * dims.l + t) * dims.e;
    lanes_of(&src[base + c0..base + c1])
}

/// One chunk's inputs at position t: x, Δ and Δ·x, padded.
#[inline(always)]
fn chunk_inputs<T: Float>(
    dims: &Dims,
    at: (usize, usize),
    cols: (usize, usize),
    x: &[T],
    delta: &[T],
) -> (Lanes<T>, Lanes<T>, Lanes<T>) {
    let xr = lanes_at(dims, at, cols, x);
    let dr = lanes_at(dims, at, cols, delta);
    let mut dvx = [T::zero(); LANES];
    for k in 0..LANES {
        dvx[k] = dr[k] * xr[k];
    }
    (xr, dr, dvx)
}

/// h ← exp(Δ·A)·h + Δx·B;  y += C·h  (one state, every channel of the chunk); returns exp(Δ·A),
/// computed as 2^(Δ · A·log₂e). The AVX-512 kernel (`avx512.rs`) does these operations in this
/// order.
#[inline(always)]
fn state_step<T: Float>(
    h: &mut Lanes<T>,
    y: &mut Lanes<T>,
    (dr, a_log2e, dvx): (&Lanes<T>, &Lanes<T>, &Lanes<T>),
    (b, c): (T, T),
) -> Lanes<T> {
    let mut decay = [T::zero(); LANES];
    for k in 0..LANES {
        decay[k] = (dr[k] * a_log2e[k]).fast_exp2();
        h[k] = decay[k].mul_add(h[k], dvx[k] * b);
        y[k] = c.mul_add(h[k], y[k]);
    }
    decay
}

/// Forward of the channels `c0..c1` of batch row `row` into `y` `[L, w]` (the block's output,
/// whose column `col` is channel c0). States are kept per state as a vector over the chunk's
/// channels: every lane loop has no dependency between iterations, so it vectorises (with the
/// polynomial exp); the recurrence runs over t.
#[inline(always)]
fn forward_chunk<T: Float>(
    dims: Dims,
    (row, c0, c1): (usize, usize, usize),
    inp: Inputs<T>,
    (y, w, col): (&mut [T], usize, usize),
) {
    let Inputs {
        x, delta, bc, ad, ..
    } = inp;
    let n = dims.n;
    let p = ChunkParams::of(ad, (c0, c1), n);
    let mut h = vec![[T::zero(); LANES]; n];
    for step in 0..dims.l {
        let t = dims.position(step);
        let (xr, dr, dvx) = chunk_inputs(&dims, (row, t), (c0, c1), x, delta);
        let (bt, ct) = bc[(row * dims.l + t) * 2 * n..][..2 * n].split_at(n);
        let mut yt = [T::zero(); LANES];
        for k in 0..LANES {
            yt[k] = p.d[k] * xr[k];
        }
        for j in 0..n {
            state_step(
                &mut h[j],
                &mut yt,
                (&dr, &p.a_log2e[j], &dvx),
                (bt[j], ct[j]),
            );
        }
        store_lanes(&mut y[t * w + col..][..c1 - c0], &yt);
    }
}

/// Forward of one block of channels `e0..e1` of batch row `row` into `y` `[L, w]`, w = e1 − e0
/// (every value written).
#[inline(always)]
fn forward_block<T: Float>(
    dims: Dims,
    (row, e0, e1): (usize, usize, usize),
    inp: Inputs<T>,
    y: &mut [T],
) {
    let w = e1 - e0;
    assert_eq!(y.len(), dims.l * w, "scan kernel: output of another size");
    for c0 in (e0..e1).step_by(LANES) {
        let c1 = (c0 + LANES).min(e1);
        forward_chunk(dims, (row, c0, c1), inp, (&mut *y, w, c0 - e0));
    }
}

/// How many scan steps ahead the kernels ask for the lines they will read (and the forward for
/// those it will write): a step of 16 states takes 100–200 cycles, so 8 cover a latency of
/// 1,000 cycles or more. A chunk's lines at successive positions are a row of E floats apart,
/// and on a loaded Zen 5 VM the hardware's prefetchers did not keep up with these kernels: the
/// first load of each position was half of the forward's time, and its output's write misses a
/// third (docs/benchmarks.md). The generic kernels, 3x slower here, ran no faster with it, except
/// for the backward's writes into a batch row of the op's new output (`backward.rs`).
const PREFETCH_STEPS: usize = 8;

/// The position `PREFETCH_STEPS` scan steps on from `step` in a loop that counts its steps up
/// (or down), if the loop gets there.
#[inline(always)]
fn position_ahead(dims: &Dims, step: usize, up: bool) -> Option<usize> {
    let ahead = if up {
        step + PREFETCH_STEPS
    } else {
        step.checked_sub(PREFETCH_STEPS)?
    };
    (ahead < dims.l).then(|| dims.position(ahead))
}

/// Asks the CPU to bring the lines holding the first and the last of `src[start..start + len]`
/// (a chunk: ≤ 16 values, one or two lines) into L1, for writing if `write`, before they are
/// used (x86-64; nothing elsewhere). Nothing past the slice's end.
#[inline(always)]
fn prefetch<T>(src: &[T], (start, len): (usize, usize), write: bool) {
    let end = (start + len).min(src.len());
    let Some(values) = src.get(start..end).filter(|s| !s.is_empty()) else {
        return;
    };
    #[cfg(target_arch = "x86_64")]
    for value in [&values[0], &values[values.len() - 1]] {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0, _MM_HINT_T0};
        let at = std::ptr::from_ref(value).cast::<i8>();
        // SAFETY: the address of a value in the slice; a prefetch changes nothing the program
        // can see, and SSE is in every x86-64 CPU.
        #[allow(unsafe_code)]
        unsafe {
            if write {
                _mm_prefetch::<_MM_HINT_ET0>(at)
            } else {
                _mm_prefetch::<_MM_HINT_T0>(at)
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (values, write);
}

/// The block kernels per element type: f32 runs the AVX-512 intrinsics (`avx512.rs`) where the
/// CPU has AVX-512F and DQ, else the generic code's AVX2+FMA build where it has that (chosen at
/// run time; the generic code vectorises its lane loops there), else its baseline build; all give
/// the same bits (each multiply-add is fused in all of them, and the generic decay reproduces
/// `vrndscaleps`/`vscalefps`). f64 (tests) runs the baseline build.
pub(super) trait ScanKernels: Float {
    /// Writes block `blk`'s output `[L, w]` into `y`.
    fn forward(dims: Dims, blk: (usize, usize, usize), inp: Inputs<Self>, y: &mut [Self]);
    /// Writes block `blk`'s dx and dΔ into `out`; returns its other gradients.
    fn backward(
        dims: Dims,
        blk: (usize, usize, usize),
        inp: Inputs<Self>,
        scratch: &mut Scratch<Self>,
        out: ChannelRows<Self>,
    ) -> BlockGrads<Self>;
}

// multiversion's dispatcher calls a clone only after detecting its features at run time; the
// unsafe it generates is that call.
#[allow(unsafe_code)]
mod dispatch {
    use super::*;

    #[multiversion::multiversion(targets("x86_64+avx2+fma"))]
    pub(super) fn forward_f32(
        dims: Dims,
        blk: (usize, usize, usize),
        inp: Inputs<f32>,
        y: &mut [f32],
    ) {
        forward_block(dims, blk, inp, y)
    }

    #[multiversion::multiversion(targets("x86_64+avx2+fma"))]
    pub(super) fn backward_f32(
        dims: Dims,
        blk: (usize, usize, usize),
        inp: Inputs<f32>,
        scratch: &mut Scratch<f32>,
        out: ChannelRows<f32>,
    ) -> BlockGrads<f32> {
        backward_block(dims, blk, inp, scratch, out)
    }
}

impl ScanKernels for f32 {
    fn forward(dims: Dims, blk: (usize, usize, usize), inp: Inputs<f32>, y: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if avx512::available() {
            // SAFETY: the CPU has the kernel's target features.
            #[allow(unsafe_code)]
            return unsafe { avx512::forward_block(dims, blk, inp, y) };
        }
        dispatch::forward_f32(dims, blk, inp, y)
    }
    fn backward(
        dims: Dims,
        blk: (usize, usize, usize),
        inp: Inputs<f32>,
        scratch: &mut Scratch<f32>,
        out: ChannelRows<f32>,
    ) -> BlockGrads<f32> {
        #[cfg(target_arch = "x86_64")]
        if avx512::available() {
            // SAFETY: the CPU has the kernel's target features.
            #[allow(unsafe_code)]
            return unsafe { avx512::backward_block(dims, blk, inp, scratch, out) };
        }
        dispatch::backward_f32(dims, blk, inp, scratch, out)
    }
}

impl ScanKernels for f64 {
    fn forward(dims: Dims, blk: (usize, usize, usize), inp: Inputs<f64>, y: &mut [f64]) {
        forward_block(dims, blk, inp, y)
    }
    fn backward(
        dims: Dims,
        blk: (usize, usize, usize),
        inp: Inputs<f64>,
        scratch: &mut Scratch<f64>,
        out: ChannelRows<f64>,
    ) -> BlockGrads<f64> {
        backward_block(dims, blk, inp, scratch, out)
    }
}
