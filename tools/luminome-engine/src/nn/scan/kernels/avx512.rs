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

use super::{lane_sum, BlockGrads, ChunkParams, Dims, Inputs, Scratch, LANES};
use crate::nn::kernels::num_traits_float::EXP2_POLY;

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
trait StateVectors: AsRef<[__m512]> {
    /// `n` copies of `v`.
    fn filled(n: usize, v: __m512) -> Self;

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
        let t = dims.position(step);
        let (xr, dr) = (rd.at(inp.x, t), rd.at(inp.delta, t));
        let dvx = _mm512_mul_ps(dr, xr);
        let (bt, ct) = rd.bc_at(inp.bc, t);
        let mut yt = _mm512_mul_ps(p.d, xr);
        for j in 0..n {
            let decay = exp2(_mm512_mul_ps(dr, p.a_log2e[j]));
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

/// `acc` ← u·v for a block's first chunk, u·v + `acc` after (`accumulate_products`).
#[inline]
#[target_feature(enable = "avx512f,avx512dq")]
fn accumulate_products(acc: &mut [f32; LANES], u: __m512, v: __m512, first: bool) {
    let r = if first {
        _mm512_mul_ps(u, v)
    } else {
        _mm512_fmadd_ps(u, v, load(acc))
    };
    store(acc, r)
}

/// `recompute_states`.
#[target_feature(enable = "avx512f,avx512dq")]
fn recompute_states<S: StateVectors>(
    rd: ChunkReader,
    inp: Inputs<f32>,
    (p, first): (&ChunkVectors, bool),
    scratch: &mut Scratch<f32>,
) {
    let Dims { l, n, .. } = rd.dims;
    let Scratch {
        hs,
        decays,
        dbc_lanes,
    } = scratch;
    let mut h = S::filled(n, _mm512_setzero_ps());
    for step in 0..l {
        let t = rd.dims.position(step);
        let (xr, dr, dyr) = (rd.at(inp.x, t), rd.at(inp.delta, t), rd.at(inp.dy, t));
        let dvx = _mm512_mul_ps(dr, xr);
        let (bt, _) = rd.bc_at(inp.bc, t);
        let dct = &mut dbc_lanes[t * 2 * n + n..][..n];
        let (decays, hs) = (&mut decays[step * n..][..n], &mut hs[step * n..][..n]);
        h.each(
            #[inline(always)]
            |j, h| {
                let decay = exp2(_mm512_mul_ps(dr, p.a_log2e[j]));
                let u = _mm512_mul_ps(dvx, _mm512_set1_ps(bt[j]));
                *h = _mm512_fmadd_ps(decay, *h, u);
                store(&mut decays[j], decay);
                store(&mut hs[j], *h);
                accumulate_products(&mut dct[j], dyr, *h, first);
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
    (g, scratch, w, col): (&mut BlockGrads<f32>, &mut Scratch<f32>, usize, usize),
) {
    let Dims { l, n, .. } = dims;
    let rd = ChunkReader::new(dims, (row, c0, c1), &inp);
    let p = ChunkVectors::of(&ChunkParams::of(inp.ad, (c0, c1), n));
    let first = col == 0;
    recompute_states::<S>(rd, inp, (&p, first), scratch);
    let Scratch {
        hs,
        decays,
        dbc_lanes,
    } = scratch;
    let zero = _mm512_setzero_ps();
    let mut next = S::filled(n, zero);
    let mut da = vec![zero; n];
    let mut dd = zero;
    for step in (0..l).rev() {
        let t = dims.position(step);
        let (xr, dr, dyr) = (rd.at(inp.x, t), rd.at(inp.delta, t), rd.at(inp.dy, t));
        let dvx = _mm512_mul_ps(dr, xr);
        dd = _mm512_fmadd_ps(dyr, xr, dd);
        let (bt, ct) = rd.bc_at(inp.bc, t);
        let db = &mut dbc_lanes[t * 2 * n..][..n];
        let (mut dh_b, mut ddt) = (zero, zero);
        let (hs_prev, dec) = (
            (step > 0).then(|| &hs[(step - 1) * n..][..n]),
            &decays[step * n..][..n],
        );
        let (da, db) = (&mut da[..n], &mut db[..n]);
        next.each(
            #[inline(always)]
            |j, next| {
                let dh = _mm512_fmadd_ps(dyr, _mm512_set1_ps(ct[j]), *next);
                *next = _mm512_mul_ps(dh, load(&dec[j]));
                let h_prev = hs_prev.map_or(zero, |hs| load(&hs[j]));
                let g_prev = _mm512_mul_ps(*next, h_prev);
                dh_b = _mm512_fmadd_ps(dh, _mm512_set1_ps(bt[j]), dh_b);
                ddt = _mm512_fmadd_ps(g_prev, p.a[j], ddt);
                da[j] = _mm512_fmadd_ps(g_prev, dr, da[j]);
                accumulate_products(&mut db[j], dh, dvx, first);
            },
        );
        let ddt = _mm512_fmadd_ps(dh_b, xr, ddt);
        let dxt = _mm512_fmadd_ps(dh_b, dr, _mm512_mul_ps(dyr, p.d));
        store_masked(&mut g.dx, t * w + col, rd.mask, dxt);
        store_masked(&mut g.ddelta, t * w + col, rd.mask, ddt);
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
) -> BlockGrads<f32> {
    let mut g = BlockGrads::zeros(&dims, e1 - e0);
    let w = e1 - e0;
    for c0 in (e0..e1).step_by(LANES) {
        let c1 = (c0 + LANES).min(e1);
        let at = (&mut g, &mut *scratch, w, c0 - e0);
        if dims.n == REGISTER_STATES {
            backward_chunk::<[__m512; REGISTER_STATES]>(dims, (row, c0, c1), inp, at);
        } else {
            backward_chunk::<Vec<__m512>>(dims, (row, c0, c1), inp, at);
        }
    }
    lane_sums(&mut g.dbc, &scratch.dbc_lanes);
    g
}

/// The indices of one step of a transpose by `vpermt2ps`: for a pair of registers (a, b) that
/// differ in one register bit, the lanes of the two outputs once that bit and lane bit `bit`
/// have traded places (an element of a at a lane with the bit set moves to the second output, at
/// the lane without it, and the other way round for b).
fn swap_indices(bit: u32) -> [__m512i; 2] {
    let m = 1i32 << bit;
    let first: [i32; LANES] = std::array::from_fn(|k| {
        let k = k as i32;
        if k & m == 0 {
            k
        } else {
            16 + (k ^ m)
        }
    });
    let second: [i32; LANES] = std::array::from_fn(|k| {
        let k = k as i32;
        if k & m == 0 {
            k ^ m
        } else {
            16 + k
        }
    });
    // SAFETY: unaligned loads of 16 values behind the references (SSE2-era intrinsics need no
    // extra feature; these are AVX-512F, and the caller has it).
    #[allow(unsafe_code)]
    unsafe {
        [
            _mm512_loadu_si512(first.as_ptr().cast()),
            _mm512_loadu_si512(second.as_ptr().cast()),
        ]
    }
}

/// `out[i]` = `lane_sum(lanes[i])`, the same bits, sixteen sums at a time: each vector's halves
/// added lane by lane (two rows of eight per register), the 16 × 8 rows transposed in three
/// `vpermt2ps` steps, then the eight columns added in order. The generic code, compiled here,
/// gathered (a quarter of the backward pass's time on Zen 5).
#[target_feature(enable = "avx512f,avx512dq")]
fn lane_sums(out: &mut [f32], lanes: &[[f32; LANES]]) {
    assert_eq!(out.len(), lanes.len());
    let swaps = [2, 1, 0].map(|bit: u32| (1usize << bit, swap_indices(bit)));
    // After the swaps a sum's lane holds row (i0 i3 i2 i1) for row i = (i3 i2 i1 i0).
    let order: [i32; LANES] = std::array::from_fn(|i| (((i & 1) << 3) | (i >> 1)) as i32);
    // SAFETY: 16 values behind the reference.
    #[allow(unsafe_code)]
    let order = unsafe { _mm512_loadu_si512(order.as_ptr().cast()) };
    let whole = out.len() / LANES * LANES;
    for (o, v) in out[..whole]
        .chunks_exact_mut(LANES)
        .zip(lanes[..whole].chunks_exact(LANES))
    {
        // Register m: rows 2m and 2m + 1, each v[k] + v[k + 8].
        let mut r: [__m512; 8] = std::array::from_fn(|m| {
            let (a, b) = (load(&v[2 * m]), load(&v[2 * m + 1]));
            _mm512_add_ps(
                _mm512_shuffle_f32x4::<0x44>(a, b),
                _mm512_shuffle_f32x4::<0xEE>(a, b),
            )
        });
        for (reg_bit, [first, second]) in swaps {
            for a in (0..8).filter(|a| a & reg_bit == 0) {
                let b = a | reg_bit;
                let (ra, rb) = (r[a], r[b]);
                r[a] = _mm512_permutex2var_ps(ra, first, rb);
                r[b] = _mm512_permutex2var_ps(ra, second, rb);
            }
        }
        let sum = r
            .iter()
            .fold(_mm512_setzero_ps(), |s, &c| _mm512_add_ps(s, c));
        let sum = _mm512_permutexvar_ps(order, sum);
        store((&mut *o).try_into().expect("16 sums"), sum);
    }
    for (o, v) in out[whole..].iter_mut().zip(&lanes[whole..]) {
        *o = lane_sum(v);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{
        backward_block as generic_backward, dispatch, forward_block as generic_forward,
    };
    use super::*;
    use crate::nn::kernels::num_traits_float::exp2_f32_fma;
    use rand::{Rng, SeedableRng};

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|v| v.to_bits()).collect()
    }

    #[test]
    fn the_decay_has_the_bits_of_the_portable_one_from_underflow_to_overflow() {
        if !available() {
            return;
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut ts: Vec<f32> = (0..100_000)
            .map(|_| rng.random_range(-160.0..130.0))
            .collect();
        ts.extend((0..10_000).map(|_| rng.random_range(-1.0f32..1.0)));
        // Just below and above integers, where t − ⌊t⌋ is inexact or tiny.
        ts.extend((-20_000..20_000).map(|i| i as f32 * 1e-5));
        ts.extend((-20_000..20_000).map(|i| -3.0 + i as f32 * 1e-6));
        ts.extend([
            0.0, -0.0, -126.0, -126.5, -149.0, -149.99, -150.0, -151.0, -151.5, -1e9, 127.99,
            128.0, 1e9,
        ]);
        for chunk in ts.chunks_exact(16) {
            let v: [f32; 16] = chunk.try_into().unwrap();
            let mut out = [0f32; 16];
            // SAFETY: `available()`.
            #[allow(unsafe_code)]
            unsafe {
                store(&mut out, exp2(load(&v)))
            };
            let portable: Vec<f32> = v.iter().map(|&t| exp2_f32_fma(t)).collect();
            assert_eq!(bits(&out), bits(&portable), "t = {v:?}");
        }
        // A NaN exponent (a NaN parameter) stays NaN in both.
        let mut out = [0f32; 16];
        // SAFETY: `available()`.
        #[allow(unsafe_code)]
        unsafe {
            store(&mut out, exp2(load(&[f32::NAN; 16])))
        };
        assert!(out[0].is_nan() && exp2_f32_fma(f32::NAN).is_nan());
    }

    #[test]
    fn the_transposed_lane_sums_have_the_bits_of_the_generic_ones() {
        if !available() {
            return;
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for len in [0, 1, 15, 16, 17, 48, 230] {
            let mut lanes: Vec<[f32; LANES]> = (0..len)
                .map(|_| std::array::from_fn(|_| rng.random_range(-1.0f32..1.0) * 1e3))
                .collect();
            // All −0: the generic sum starts from +0, so the result is +0.
            if let Some(v) = lanes.get_mut(3) {
                *v = [-0.0; LANES];
            }
            if let Some(v) = lanes.get_mut(7) {
                v[9] = f32::INFINITY;
            }
            let mut out = vec![f32::NAN; len];
            // SAFETY: `available()`.
            #[allow(unsafe_code)]
            unsafe {
                lane_sums(&mut out, &lanes)
            };
            let generic: Vec<f32> = lanes.iter().map(lane_sum).collect();
            assert_eq!(bits(&out), bits(&generic), "{len} sums");
        }
    }

    /// A block's forward output `[L, w]`, every value written (the buffer starts as NaNs, and
    /// the inputs are finite).
    fn block_output(
        dims: &Dims,
        (_, e0, e1): (usize, usize, usize),
        forward: impl FnOnce(&mut [f32]),
    ) -> Vec<f32> {
        let mut y = vec![f32::NAN; dims.l * (e1 - e0)];
        forward(&mut y);
        assert!(y.iter().all(|v| v.is_finite()), "a value left unwritten");
        y
    }

    /// A small scan's inputs (x, Δ > 0, dy, B‖C, A‖D with A < 0), 37 channels: two full chunks
    /// and a partial one.
    fn inputs(dims: &Dims) -> [Vec<f32>; 5] {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut u = |len: usize, lo: f32, hi: f32| -> Vec<f32> {
            (0..len).map(|_| rng.random_range(lo..hi)).collect()
        };
        let size = dims.b * dims.l * dims.e;
        let mut ad = u(dims.e * (dims.n + 1), -3.0, -0.05);
        for c in 0..dims.e {
            ad[c * (dims.n + 1) + dims.n] = 0.5;
        }
        [
            u(size, -1.0, 1.0),
            u(size, 0.001, 2.0),
            u(size, -1.0, 1.0),
            u(dims.b * dims.l * 2 * dims.n, -1.0, 1.0),
            ad,
        ]
    }

    #[test]
    fn the_kernels_give_the_bits_of_the_generic_code_and_its_avx2_build() {
        if !available() {
            return;
        }
        // 16 states: the register path; 5: the heap one.
        for (reverse, n) in [(false, 5), (true, 5), (false, 16), (true, 16)] {
            let dims = Dims {
                b: 2,
                l: 23,
                e: 37,
                n,
                reverse,
            };
            let [x, delta, dy, bc, ad] = inputs(&dims);
            let inp = Inputs {
                x: &x,
                delta: &delta,
                dy: &dy,
                bc: &bc,
                ad: &ad,
            };
            for blk in [(0, 0, 37), (1, 5, 26)] {
                // SAFETY: `available()`.
                #[allow(unsafe_code)]
                let (y, g) = unsafe {
                    (
                        block_output(&dims, blk, |y| forward_block(dims, blk, inp, y)),
                        backward_block(dims, blk, inp, &mut Scratch::new(&dims)),
                    )
                };
                let others = [
                    (
                        block_output(&dims, blk, |y| generic_forward(dims, blk, inp, y)),
                        generic_backward(dims, blk, inp, &mut Scratch::new(&dims)),
                    ),
                    (
                        block_output(&dims, blk, |y| dispatch::forward_f32(dims, blk, inp, y)),
                        dispatch::backward_f32(dims, blk, inp, &mut Scratch::new(&dims)),
                    ),
                ];
                for (which, (y2, g2)) in others.into_iter().enumerate() {
                    let first = bits(&y).iter().zip(bits(&y2)).position(|(a, b)| *a != b);
                    assert_eq!(
                        first,
                        None,
                        "{which} {reverse} {blk:?} {:?}",
                        first.map(|i| (y[i], y2[i]))
                    );
                    for (a, b) in [
                        (&g.dx, &g2.dx),
                        (&g.ddelta, &g2.ddelta),
                        (&g.dbc, &g2.dbc),
                        (&g.dad, &g2.dad),
                    ] {
                        assert_eq!(bits(a), bits(b));
                    }
                }
            }
        }
    }
}
