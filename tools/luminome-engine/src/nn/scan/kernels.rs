//! The selective scan's per-block CPU kernels: the forward recurrence over a block of channels,
//! and the backward pass that recomputes its states (see the parent module for the equations).

use candle_core::{Layout, Result};

use crate::nn::kernels::num_traits_float::Float;

#[cfg(target_arch = "x86_64")]
mod avx512;

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

/// Where a block writes its dx and dΔ, every value of its channels at every position: rows of
/// `stride` values, one per position, its first channel at column `col` — a block's own `[L, w]`
/// (`stride` w, `col` 0), or its batch row of the op's `[B, L, E]` output (`stride` E, `col` e0),
/// which saves a copy of both (`scan_backward`).
pub(super) struct ChannelRows<'a, T> {
    pub(super) dx: &'a mut [T],
    pub(super) ddelta: &'a mut [T],
    pub(super) stride: usize,
    pub(super) col: usize,
}

impl<T> ChannelRows<'_, T> {
    /// The index of position `t`, column `col` of the block.
    #[inline(always)]
    pub(super) fn at(&self, t: usize, col: usize) -> usize {
        t * self.stride + self.col + col
    }

    /// Panics unless every row has room for the block's `w` channels.
    pub(super) fn check(&self, l: usize, w: usize) {
        let need = (l.max(1) - 1) * self.stride + self.col + w;
        assert!(
            self.stride >= self.col + w && self.dx.len() >= need && self.ddelta.len() >= need,
            "scan kernel: dx/dΔ rows shorter than the block"
        );
    }
}

/// Gradients of one block besides dx and dΔ (written into [`ChannelRows`]): dB‖dC `[L, 2N]`
/// (this block's share), dA‖dD `[w, N+1]`.
pub(super) struct BlockGrads<T> {
    pub(super) dbc: Vec<T>,
    pub(super) dad: Vec<T>,
}

impl<T: Float> BlockGrads<T> {
    fn zeros(dims: &Dims, w: usize) -> Self {
        let Dims { l, n, .. } = *dims;
        Self {
            dbc: vec![T::zero(); l * 2 * n],
            dad: vec![T::zero(); w * (n + 1)],
        }
    }

    /// dB‖dC from the block's lane sums.
    fn sum_dbc_lanes(&mut self, scratch: &Scratch<T>) {
        for (o, v) in self.dbc.iter_mut().zip(&scratch.dbc_lanes) {
            *o = lane_sum(v);
        }
    }
}

/// The backward pass's working memory, allocated once per parallel job and reused by every
/// block and chunk it runs (zero-filling it per block was most of the memset that took a tenth
/// of the scan's profile).
pub(super) struct Scratch<T> {
    /// A chunk's states h_t and decays exp(Δ_t A) at every step, `[step][state]` (recomputed:
    /// the forward keeps only the running state); every entry rewritten by each chunk. Only the
    /// generic kernels keep the decays (allocated on their first use): the AVX-512 kernels
    /// compute them again in the backward pass, which costs them less than the memory traffic
    /// (forward + backward 0.93x, Zen 5), where on the AVX2 path the exps cost more (1.12x).
    hs: Vec<Lanes<T>>,
    decays: Vec<Lanes<T>>,
    /// dB‖dC per step and state, still per lane: set by a block's first chunk, summed across
    /// its others lane by lane, and across lanes once at the end (a horizontal sum per state and
    /// step in the inner loop cost more than the rest of it).
    dbc_lanes: Vec<Lanes<T>>,
}

impl<T: Float> Scratch<T> {
    pub(super) fn new(dims: &Dims) -> Self {
        let (l, n) = (dims.l, dims.n);
        Self {
            hs: vec![[T::zero(); LANES]; l * n],
            decays: Vec::new(),
            dbc_lanes: vec![[T::zero(); LANES]; l * 2 * n],
        }
    }
}

/// `acc` ← u·v for a block's first chunk, u·v + `acc` (fused) lane by lane after.
#[inline(always)]
fn accumulate_products<T: Float>(acc: &mut Lanes<T>, (u, v): (&Lanes<T>, &Lanes<T>), first: bool) {
    for k in 0..LANES {
        acc[k] = if first {
            u[k] * v[k]
        } else {
            u[k].mul_add(v[k], acc[k])
        };
    }
}

/// Fills `hs` and `decays` for one chunk, and adds dC's terms (which need h_t and dy_t only)
/// into `dbc_lanes` on the way (sets them, for the block's `first` chunk).
#[inline(always)]
fn recompute_states<T: Float>(
    dims: Dims,
    (row, c0, c1): (usize, usize, usize),
    inp: Inputs<T>,
    (p, first): (&ChunkParams<T>, bool),
    scratch: &mut Scratch<T>,
) {
    let Dims { l, n, .. } = dims;
    let Inputs {
        x, delta, dy, bc, ..
    } = inp;
    let Scratch {
        hs,
        decays,
        dbc_lanes,
    } = scratch;
    decays.resize(l * n, [T::zero(); LANES]);
    let mut h = vec![[T::zero(); LANES]; n];
    for step in 0..l {
        let t = dims.position(step);
        let (_, dr, dvx) = chunk_inputs(&dims, (row, t), (c0, c1), x, delta);
        let dyr = lanes_at(&dims, (row, t), (c0, c1), dy);
        let (bt, ct) = bc[(row * l + t) * 2 * n..][..2 * n].split_at(n);
        let dct = &mut dbc_lanes[t * 2 * n + n..][..n];
        // The forward's step with its output left unread (the compiler drops that work): a step
        // without the output, C·h added in a loop of its own, made the forward 10–15 % slower.
        let mut unused = [T::zero(); LANES];
        for j in 0..n {
            decays[step * n + j] = state_step(
                &mut h[j],
                &mut unused,
                (&dr, &p.a_log2e[j], &dvx),
                (bt[j], ct[j]),
            );
            hs[step * n + j] = h[j];
            accumulate_products(&mut dct[j], (&dyr, &h[j]), first);
        }
    }
}

/// One state's backward step at one position, every channel of the chunk: the adjoint dh_t,
/// and its shares of the sums it updates: the adjoint carried to t − 1 (`next`), dA, and the
/// position's Σ_n dh·B (which gives dx_t and dΔ_t's B·x part after the states) and
/// Σ_n dh·A·exp(Δ_t A)·h_{t−1} (dΔ_t's decay part); adds dB_t's terms into `db` (sets them, for
/// a block's `first` chunk). The caller passes local copies of the running sums: through
/// references into its vectors the compiler kept a scalar copy of the loop for overlapping
/// slices, and through a struct of them taken and returned by value it kept them on the stack
/// and read them back lane by lane (the AVX2 build, Zen 5). The AVX-512 kernel does these
/// operations in this order.
#[inline(always)]
fn adjoint_step<T: Float>(
    (next, da, dh_b, ddt): (&mut Lanes<T>, &mut Lanes<T>, &mut Lanes<T>, &mut Lanes<T>),
    (dyr, dr, dvx): (&Lanes<T>, &Lanes<T>, &Lanes<T>),
    (a, decay, h_prev): (&Lanes<T>, &Lanes<T>, &Lanes<T>),
    (b, c): (T, T),
    (db, first): (&mut Lanes<T>, bool),
) {
    for k in 0..LANES {
        let dh = dyr[k].mul_add(c, next[k]);
        next[k] = dh * decay[k];
        let g_prev = next[k] * h_prev[k];
        dh_b[k] = dh.mul_add(b, dh_b[k]);
        ddt[k] = g_prev.mul_add(a[k], ddt[k]);
        da[k] = g_prev.mul_add(dr[k], da[k]);
        db[k] = if first {
            dh * dvx[k]
        } else {
            dh.mul_add(dvx[k], db[k])
        };
    }
}

/// One chunk's running sums of the backward pass.
struct ChunkGrads<T> {
    /// dh_{t+1} · exp(Δ_{t+1} A) per state: the adjoint carried to the step before.
    next: Vec<Lanes<T>>,
    da: Vec<Lanes<T>>,
    dd: Lanes<T>,
}

/// How many scan steps ahead the backward asks for the lines of dx and dΔ it will write. In a
/// batch row of the op's new output they are in no cache: without the prefetch, forward +
/// backward on the AVX2 path took 1.26x the time it took with zero-filled block buffers copied
/// afterwards; with it, 0.90x (Zen 5, `LUMINOME_SCAN_AVX512=0`). The forward's output, written
/// the same way, ran no faster with it there (unlike the AVX-512 kernel's).
const WRITE_AHEAD: usize = 8;

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

/// The backward pass of the channels `c0..c1`, added into `g` and written into `out` (column
/// `col` of the block is channel c0).
#[inline(always)]
fn backward_chunk<T: Float>(
    dims: Dims,
    (row, c0, c1): (usize, usize, usize),
    inp: Inputs<T>,
    (g, out, scratch, col): (
        &mut BlockGrads<T>,
        &mut ChannelRows<T>,
        &mut Scratch<T>,
        usize,
    ),
) {
    let Dims { l, n, .. } = dims;
    let Inputs {
        x,
        delta,
        dy,
        bc,
        ad,
    } = inp;
    let cw = c1 - c0;
    let p = ChunkParams::of(ad, (c0, c1), n);
    let first = col == 0;
    recompute_states(dims, (row, c0, c1), inp, (&p, first), scratch);
    let Scratch {
        hs,
        decays,
        dbc_lanes,
    } = scratch;
    let zeros = vec![[T::zero(); LANES]; n];
    let mut run = ChunkGrads {
        next: vec![[T::zero(); LANES]; n],
        da: vec![[T::zero(); LANES]; n],
        dd: [T::zero(); LANES],
    };
    for step in (0..l).rev() {
        if step >= WRITE_AHEAD {
            let at = out.at(dims.position(step - WRITE_AHEAD), col);
            prefetch(out.dx, (at, cw), true);
            prefetch(out.ddelta, (at, cw), true);
        }
        let t = dims.position(step);
        let (xr, dr, dvx) = chunk_inputs(&dims, (row, t), (c0, c1), x, delta);
        let dyr = lanes_at(&dims, (row, t), (c0, c1), dy);
        let bt = &bc[(row * l + t) * 2 * n..][..n];
        let ct = &bc[(row * l + t) * 2 * n + n..][..n];
        for k in 0..LANES {
            run.dd[k] = dyr[k].mul_add(xr[k], run.dd[k]);
        }
        let prev = if step > 0 {
            &hs[(step - 1) * n..step * n]
        } else {
            &zeros[..]
        };
        let db = &mut dbc_lanes[t * 2 * n..][..n];
        let mut dh_b = [T::zero(); LANES];
        let mut ddt = [T::zero(); LANES];
        for j in 0..n {
            let (mut next, mut da) = (run.next[j], run.da[j]);
            adjoint_step(
                (&mut next, &mut da, &mut dh_b, &mut ddt),
                (&dyr, &dr, &dvx),
                (&p.a[j], &decays[step * n + j], &prev[j]),
                (bt[j], ct[j]),
                (&mut db[j], first),
            );
            (run.next[j], run.da[j]) = (next, da);
        }
        // dΔ_t = Σ dh·A·exp(Δ_t A)·h_{t−1} + x_t·Σ dh·B;  dx_t = dy_t·D + Δ_t·Σ dh·B.
        let mut dxt = [T::zero(); LANES];
        for k in 0..LANES {
            ddt[k] = dh_b[k].mul_add(xr[k], ddt[k]);
            dxt[k] = dh_b[k].mul_add(dr[k], dyr[k] * p.d[k]);
        }
        let at = out.at(t, col);
        store_lanes(&mut out.dx[at..][..cw], &dxt);
        store_lanes(&mut out.ddelta[at..][..cw], &ddt);
    }
    for k in 0..cw {
        for j in 0..n {
            g.dad[(col + k) * (n + 1) + j] = run.da[j][k];
        }
        g.dad[(col + k) * (n + 1) + n] = run.dd[k];
    }
}

#[inline(always)]
fn backward_block<T: Float>(
    dims: Dims,
    (row, e0, e1): (usize, usize, usize),
    inp: Inputs<T>,
    scratch: &mut Scratch<T>,
    mut out: ChannelRows<T>,
) -> BlockGrads<T> {
    let w = e1 - e0;
    out.check(dims.l, w);
    let mut g = BlockGrads::zeros(&dims, w);
    for c0 in (e0..e1).step_by(LANES) {
        let c1 = (c0 + LANES).min(e1);
        let at = (&mut g, &mut out, &mut *scratch, c0 - e0);
        backward_chunk(dims, (row, c0, c1), inp, at);
    }
    g.sum_dbc_lanes(scratch);
    g
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
