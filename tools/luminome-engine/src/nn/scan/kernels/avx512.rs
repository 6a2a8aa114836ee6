//! The f32 block kernels written with AVX-512 intrinsics, for CPUs with AVX-512F and DQ: the
//! generic kernels' operations in the same order, one 16-channel chunk per vector, with the decay
//! 2^(Δ·A·log₂e) as ⌊t⌋ (`vrndscaleps`), t − ⌊t⌋, a degree-5 polynomial and `vscalefps`
//! (p · 2^⌊t⌋): 8 instructions where the generic exp takes 15, which the compiler cannot find
//! from portable code. The generic kernels (`exp2_f32_fma`) give the same bits, which the tests
//! check; a partial chunk is read and written through a lane mask (the lanes outside it are 0,
//! as the generic code pads them).
//!
//! Safety: every function here is compiled for AVX-512F+DQ and called only after
//! [`available`] found them; pointer offsets are those of the generic code's slice indexing,
//! checked against the slices' lengths before the loops.

use std::arch::x86_64::*;

use super::{
    position_ahead, prefetch, BlockGrads, ChannelRows, ChunkParams, ChunkTargets, Dims, Inputs,
    Scratch, LANES,
};
use crate::nn::kernels::num_traits_float::EXP2_POLY;

mod lane_sums;
use lane_sums::lane_sums;

/// Whether this CPU runs these kernels: it has AVX-512F and DQ, and `LUMINOME_SCAN_AVX512` is
/// not `0` (which runs the generic kernels, AVX2 where the CPU has it: the same bits, and the
/// way to measure the AVX2 build on an AVX-512 machine; docs/engine.md). Read once.
pub(super) fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        std::env::var_os("LUMINOME_SCAN_AVX512").is_none_or(|v| v != "0")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
    })
}

/// The mask of a chunk's first `len` (≤ 16) lanes.
fn lane_mask(len: usize) -> __mmask16 {
    ((1u32 << len) - 1) as __mmask16
}

/// 2^t per lane: the bits of `exp2_f32_fma`.
#[inline]
#[target_feature(enable = "avx512f,avx512dq")]
fn exp2(t: __m512) -> __m512 {
    // ⌊t⌋ (imm 0x09: round toward −∞, inexact not signalled), and t − ⌊t⌋ rounded to nearest.
    // Not `vreduceps`, one instruction for both: it rounds an inexact t − ⌊t⌋ (t just below an
    // integer) toward −∞ too, which portable code cannot reproduce.
    let f = _mm512_sub_ps(t, _mm512_roundscale_ps::<0x09>(t));
    let [c1, c2, c3, c4, c5] = EXP2_POLY;
    let [c1, c2, c3, c4, c5] = [
        _mm512_set1_ps(c1),
        _mm512_set1_ps(c2),
        _mm512_set1_ps(c3),
        _mm512_set1_ps(c4),
        _mm512_set1_ps(c5),
    ];
    let p = _mm512_fmadd_ps(c5, f, c4);
    let p = _mm512_fmadd_ps(p, f, c3);
    let p = _mm512_fmadd_ps(p, f, c2);
    let p = _mm512_fmadd_ps(p, f, c1);
    let p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0));
    _mm512_scalef_ps(p, t)
}

/// exp(Δ·A) per lane as 2^(Δ · A·log₂e): one definition for the forward, the backward's
/// recomputing pass and its reverse pass, which must get the same bits.
#[inline]
#[target_feature(enable = "avx512f,avx512dq")]
fn decay(dr: __m512, a_log2e: __m512) -> __m512 {
    exp2(_mm512_mul_ps(dr, a_log2e))
}

/// A chunk's parameters as vectors: A, A·log₂e per state, and D.
struct ChunkVectors {
    a: Vec<__m512>,
    a_log2e: Vec<__m512>,
    d: __m512,
}

impl ChunkVectors {
    #[target_feature(enable = "avx512f,avx512dq")]
    fn of(p: &ChunkParams<f32>) -> Self {
        let mut v = Self {
            a: Vec::with_capacity(p.a.len()),
            a_log2e: Vec::with_capacity(p.a.len()),
            d: load(&p.d),
        };
        for (a, a_log2e) in p.a.iter().zip(&p.a_log2e) {
            v.a.push(load(a));
            v.a_log2e.push(load(a_log2e));
        }
        v
    }
}

/// Reads of one chunk's lanes at (row, t) of `[B, L, E]` inputs, masked to its channels.
#[derive(Clone, Copy)]
struct ChunkReader {
    dims: Dims,
    row: usize,
    c0: usize,
    mask: __mmask16,
}

impl ChunkReader {
    fn new(dims: Dims, (row, c0, c1): (usize, usize, usize), inp: &Inputs<f32>) -> Self {
        let end = ((row + 1) * dims.l - 1) * dims.e + c1;
        assert!(
            inp.x.len() >= end
                && inp.delta.len() >= end
                && (inp.dy.is_empty() || inp.dy.len() >= end),
            "scan kernel: inputs shorter than their dimensions"
        );
        assert!(inp.bc.len() >= (row + 1) * dims.l * 2 * dims.n && c1 - c0 <= LANES);
        Self {
            dims,
            row,
            c0,
            mask: lane_mask(c1 - c0),
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    fn at(&self, src: &[f32], t: usize) -> __m512 {
        let at = (self.row * self.dims.l + t) * self.dims.e + self.c0;
        // SAFETY: at + the mask's lanes ≤ the length checked in `new`; masked-off lanes are not
        // read.
        #[allow(unsafe_code)]
        unsafe {
            _mm512_maskz_loadu_ps(self.mask, src.as_ptr().add(at))
        }
    }

    /// [`prefetch`] of the chunk's lanes of every `src` at position `t`.
    #[inline(always)]
    fn prefetch(&self, srcs: &[&[f32]], t: usize) {
        let at = (self.row * self.dims.l + t) * self.dims.e + self.c0;
        for src in srcs {
            prefetch(src, (at, self.lanes()), false);
        }
    }

    /// How many of the chunk's lanes are channels.
    fn lanes(&self) -> usize {
        self.mask.count_ones() as usize
    }

    /// B_t and C_t of this row (N values each).
    fn bc_at<'a>(&self, bc: &'a [f32], t: usize) -> (&'a [f32], &'a [f32]) {
        let n = self.dims.n;
        bc[(self.row * self.dims.l + t) * 2 * n..][..2 * n].split_at(n)
    }
}

/// Writes `v`'s masked lanes at `dst[at..]`.
#[inline]
#[target_feature(enable = "avx512f,avx512dq")]
fn store_masked(dst: &mut [f32], at: usize, mask: __mmask16, v: __m512) {
    assert!(at + mask.count_ones() as usize <= dst.len());
    // SAFETY: bounds checked above; masked-off lanes are not written.
    #[allow(unsafe_code)]
    unsafe {
        _mm512_mask_storeu_ps(dst.as_mut_ptr().add(at), mask, v)
    }
}

#[inline]
#[target_feature(enable = "avx512f,avx512dq")]
fn load(v: &[f32; LANES]) -> __m512 {
    // SAFETY: 16 values behind the reference.
    #[allow(unsafe_code)]
    unsafe {
        _mm512_loadu_ps(v.as_ptr())
    }
}

#[inline]
#[target_feature(enable = "avx512f,avx512dq")]
fn store(dst: &mut [f32; LANES], v: __m512) {
    // SAFETY: 16 values behind the reference.
    #[allow(unsafe_code)]
    unsafe {
        _mm512_storeu_ps(dst.as_mut_ptr(), v)
    }
}

/// The backward pass's running per-state vectors (the states it recomputes, the adjoints it
/// carries back): in registers for the usual 16 states (a fixed-size array, over which `each`
/// is unrolled so that every index is a constant), on the heap for any other count, where each
/// went through a store and a reload at every position (0.92x the time of forward + backward
/// on Zen 5, docs/benchmarks.md). The forward kernel keeps its loop: bound by its exps, it ran
/// no faster this way.
trait StateVectors {
    /// `n` copies of `v`.
    fn filled(n: usize, v: __m512) -> Self;

    /// How many (a constant for a fixed-size array).
    fn len(&self) -> usize;

    /// `f(j, state j)` for every state in order; unrolled for a fixed count, so that every
    /// index is a constant and the states stay in registers.
    fn each(&mut self, f: impl FnMut(usize, &mut __m512));
}

impl StateVectors for Vec<__m512> {
    #[inline(always)]
    fn filled(n: usize, v: __m512) -> Self {
        vec![v; n]
    }

    #[inline(always)]
    fn len(&self) -> usize {
        Vec::len(self)
    }

    #[inline(always)]
    fn each(&mut self, mut f: impl FnMut(usize, &mut __m512)) {
        for (j, h) in self.iter_mut().enumerate() {
            f(j, h);
        }
    }
}

/// `$f(k, &mut $h[k])` for k = each literal, in order.
macro_rules! unrolled {
    ($h:ident, $f:ident, $($k:literal)*) => {
        $( $f($k, &mut $h[$k]); )*
    };
}

impl StateVectors for [__m512; REGISTER_STATES] {
    #[inline(always)]
    fn filled(n: usize, v: __m512) -> Self {
        debug_assert_eq!(n, REGISTER_STATES);
        [v; REGISTER_STATES]
    }

    #[inline(always)]
    fn len(&self) -> usize {
        REGISTER_STATES
    }

    #[inline(always)]
    fn each(&mut self, mut f: impl FnMut(usize, &mut __m512)) {
        let h = self;
        unrolled!(h, f, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    }
}

/// The state count the kernels keep in registers (Mamba's and Caduceus's `d_state`).
const REGISTER_STATES: usize = 16;

/// `forward_chunk`.
#[target_feature(enable = "avx512f,avx512dq")]
fn forward_chunk(
    dims: Dims,
    chunk: (usize, usize, usize),
    inp: Inputs<f32>,
    (y, w, col): (&mut [f32], usize, usize),
) {
    let n = dims.n;
    let rd = ChunkReader::new(dims, chunk, &inp);
    let p = ChunkVectors::of(&ChunkParams::of(inp.ad, (chunk.1, chunk.2), n));
    let mut h = vec![_mm512_setzero_ps(); n];
    for step in 0..dims.l {
        if let Some(ahead) = position_ahead(&dims, step, true) {
            rd.prefetch(&[inp.x, inp.delta], ahead);
            prefetch(y, (ahead * w + col, rd.lanes()), true);
        }
        let t = dims.position(step);
        let (xr, dr) = (rd.at(inp.x, t), rd.at(inp.delta, t));
        let dvx = _mm512_mul_ps(dr, xr);
        let (bt, ct) = rd.bc_at(inp.bc, t);
        let mut yt = _mm512_mul_ps(p.d, xr);
        for j in 0..n {
            let decay = decay(dr, p.a_log2e[j]);
            let u = _mm512_mul_ps(dvx, _mm512_set1_ps(bt[j]));
            h[j] = _mm512_fmadd_ps(decay, h[j], u);
            yt = _mm512_fmadd_ps(_mm512_set1_ps(ct[j]), h[j], yt);
        }
        store_masked(y, t * w + col, rd.mask, yt);
    }
}

/// `forward_block`.
#[target_feature(enable = "avx512f,avx512dq")]
pub(super) fn forward_block(
    dims: Dims,
    (row, e0, e1): (usize, usize, usize),
    inp: Inputs<f32>,
    y: &mut [f32],
) {
    let w = e1 - e0;
    assert_eq!(y.len(), dims.l * w, "scan kernel: output of another size");
    for c0 in (e0..e1).step_by(LANES) {
        let c1 = (c0 + LANES).min(e1);
        forward_chunk(dims, (row, c0, c1), inp, (&mut *y, w, c0 - e0));
    }
}

/// `acc` ← u·v for a block's first chunk, u·v + `acc` after (`accumulate_products`), without a
/// branch: the addend is `acc` loaded through `keep` (all lanes after the first chunk, none in
/// it), −0 in the lanes not loaded, and u·v + (−0) is u·v rounded, with its sign when it is 0.
#[inline]
#[target_feature(enable = "avx512f,avx512dq")]
fn accumulate_products(acc: &mut [f32; LANES], u: __m512, v: __m512, keep: __mmask16) {
    // SAFETY: 16 values behind the reference; the lanes outside `keep` are not read.
    #[allow(unsafe_code)]
    let addend = unsafe { _mm512_mask_loadu_ps(_mm512_set1_ps(-0.0), keep, acc.as_ptr()) };
    store(acc, _mm512_fmadd_ps(u, v, addend))
}

/// The mask `accumulate_products` loads its accumulator through: none for a block's first
/// chunk, every lane after.
fn accumulator_lanes(first: bool) -> __mmask16 {
    if first {
        0
    } else {
        0xffff
    }
}

/// `recompute_states`.
#[target_feature(enable = "avx512f,avx512dq")]
fn recompute_states<S: StateVectors>(
    rd: ChunkReader,
    inp: Inputs<f32>,
    (p, keep): (&ChunkVectors, __mmask16),
    scratch: &mut Scratch<f32>,
) {
    let Dims { l, n, .. } = rd.dims;
    let Scratch { hs, dbc_lanes, .. } = scratch;
    let mut h = S::filled(n, _mm512_setzero_ps());
    // The per-state slices cut to the vectors' count: a constant for the register path, where
    // every index is then checked at compile time (`StateVectors::len`).
    let k = h.len();
    let a_log2e = &p.a_log2e[..k];
    for step in 0..l {
        if let Some(ahead) = position_ahead(&rd.dims, step, true) {
            rd.prefetch(&[inp.x, inp.delta, inp.dy], ahead);
        }
        let t = rd.dims.position(step);
        let (xr, dr, dyr) = (rd.at(inp.x, t), rd.at(inp.delta, t), rd.at(inp.dy, t));
        let dvx = _mm512_mul_ps(dr, xr);
        let bt = &rd.bc_at(inp.bc, t).0[..k];
        let dct = &mut dbc_lanes[t * 2 * n + n..][..k];
        let hs = &mut hs[step * n..][..k];
        h.each(
            #[inline(always)]
            |j, h| {
                let decay = decay(dr, a_log2e[j]);
                let u = _mm512_mul_ps(dvx, _mm512_set1_ps(bt[j]));
                *h = _mm512_fmadd_ps(decay, *h, u);
                store(&mut hs[j], *h);
                accumulate_products(&mut dct[j], dyr, *h, keep);
            },
        );
    }
}

/// `backward_chunk`.
#[target_feature(enable = "avx512f,avx512dq")]
fn backward_chunk<S: StateVectors>(
    dims: Dims,
    (row, c0, c1): (usize, usize, usize),
    inp: Inputs<f32>,
    (g, out, scratch, col): ChunkTargets<f32>,
) {
    let Dims { l, n, .. } = dims;
    let rd = ChunkReader::new(dims, (row, c0, c1), &inp);
    let p = ChunkVectors::of(&ChunkParams::of(inp.ad, (c0, c1), n));
    let keep = accumulator_lanes(col == 0);
    recompute_states::<S>(rd, inp, (&p, keep), scratch);
    let Scratch { hs, dbc_lanes, .. } = scratch;
    let zero = _mm512_setzero_ps();
    let mut next = S::filled(n, zero);
    let k = next.len();
    let (a, a_log2e) = (&p.a[..k], &p.a_log2e[..k]);
    let mut da = vec![zero; n];
    let mut dd = zero;
    // h before the first position: 0 (a slice, so that the loop has no branch on the step).
    let no_state = vec![[0f32; LANES]; n];
    for step in (0..l).rev() {
        if let Some(ahead) = position_ahead(&dims, step, false) {
            rd.prefetch(&[inp.x, inp.delta, inp.dy], ahead);
            // The outputs' lines for writing, as the forward's (a batch row of the op's new
            // output is in no cache: forward + backward took 1.5x its time without).
            let at = (out.at(ahead, col), rd.lanes());
            prefetch(out.dx, at, true);
            prefetch(out.ddelta, at, true);
        }
        let t = dims.position(step);
        let (xr, dr, dyr) = (rd.at(inp.x, t), rd.at(inp.delta, t), rd.at(inp.dy, t));
        let dvx = _mm512_mul_ps(dr, xr);
        dd = _mm512_fmadd_ps(dyr, xr, dd);
        let (bt, ct) = rd.bc_at(inp.bc, t);
        let (bt, ct) = (&bt[..k], &ct[..k]);
        let db = &mut dbc_lanes[t * 2 * n..][..k];
        let (mut dh_b, mut ddt) = (zero, zero);
        let hs_prev = match step {
            0 => &no_state[..k],
            _ => &hs[(step - 1) * n..][..k],
        };
        let da = &mut da[..k];
        next.each(
            #[inline(always)]
            |j, next| {
                let dh = _mm512_fmadd_ps(dyr, _mm512_set1_ps(ct[j]), *next);
                // The decay again (storing it in the recomputing pass cost more: 0.93x without).
                *next = _mm512_mul_ps(dh, decay(dr, a_log2e[j]));
                let g_prev = _mm512_mul_ps(*next, load(&hs_prev[j]));
                dh_b = _mm512_fmadd_ps(dh, _mm512_set1_ps(bt[j]), dh_b);
                ddt = _mm512_fmadd_ps(g_prev, a[j], ddt);
                da[j] = _mm512_fmadd_ps(g_prev, dr, da[j]);
                accumulate_products(&mut db[j], dh, dvx, keep);
            },
        );
        let ddt = _mm512_fmadd_ps(dh_b, xr, ddt);
        let dxt = _mm512_fmadd_ps(dh_b, dr, _mm512_mul_ps(dyr, p.d));
        let at = out.at(t, col);
        store_masked(out.dx, at, rd.mask, dxt);
        store_masked(out.ddelta, at, rd.mask, ddt);
    }
    // dA per state, then dD, into each channel's row of `[w, N+1]`.
    let mut lanes = [0f32; LANES];
    for (j, v) in da.iter().chain([&dd]).enumerate() {
        store(&mut lanes, *v);
        for (k, &value) in lanes[..c1 - c0].iter().enumerate() {
            g.dad[(col + k) * (n + 1) + j] = value;
        }
    }
}

/// `backward_block`.
#[target_feature(enable = "avx512f,avx512dq")]
pub(super) fn backward_block(
    dims: Dims,
    (row, e0, e1): (usize, usize, usize),
    inp: Inputs<f32>,
    scratch: &mut Scratch<f32>,
    mut out: ChannelRows<f32>,
) -> BlockGrads<f32> {
    let w = e1 - e0;
    out.check(dims.l, w);
    let mut g = BlockGrads::zeros(&dims, w);
    for c0 in (e0..e1).step_by(LANES) {
        let c1 = (c0 + LANES).min(e1);
        let at = (&mut g, &mut out, &mut *scratch, c0 - e0);
        if dims.n == REGISTER_STATES {
            backward_chunk::<[__m512; REGISTER_STATES]>(dims, (row, c0, c1), inp, at);
        } else {
            backward_chunk::<Vec<__m512>>(dims, (row, c0, c1), inp, at);
        }
    }
    lane_sums(&mut g.dbc, &scratch.dbc_lanes);
    g
}

#[cfg(test)]
mod tests;
