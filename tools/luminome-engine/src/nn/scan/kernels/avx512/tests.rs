//! The AVX-512 kernels against the portable decay and the generic kernels, bit for bit.

use super::super::{
    backward_block as generic_backward, dispatch, forward_block as generic_forward,
};
use super::*;
use crate::nn::kernels::num_traits_float::exp2_f32_fma;
use rand::{Rng, SeedableRng};

/// The bits of every value, in order (also used by `lane_sums`'s test).
pub(super) fn bits(v: &[f32]) -> Vec<u32> {
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
        0.0, -0.0, -126.0, -126.5, -149.0, -149.99, -150.0, -151.0, -151.5, -1e9, 127.99, 128.0,
        1e9,
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
            // The AVX-512 kernel writes dx and dΔ into a batch row of the op's output (stride
            // E, as `scan_backward` runs it for enough rows), the others into the block's own.
            // SAFETY: `available()`.
            #[allow(unsafe_code)]
            let (y, g) = unsafe {
                (
                    block_output(&dims, blk, |y| forward_block(dims, blk, inp, y)),
                    in_row(&dims, blk, |s, out| backward_block(dims, blk, inp, s, out)),
                )
            };
            let others = [
                (
                    block_output(&dims, blk, |y| generic_forward(dims, blk, inp, y)),
                    in_block(&dims, blk, |s, out| {
                        generic_backward(dims, blk, inp, s, out)
                    }),
                ),
                (
                    block_output(&dims, blk, |y| dispatch::forward_f32(dims, blk, inp, y)),
                    in_block(&dims, blk, |s, out| {
                        dispatch::backward_f32(dims, blk, inp, s, out)
                    }),
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
                    (&g.grads.dbc, &g2.grads.dbc),
                    (&g.grads.dad, &g2.grads.dad),
                ] {
                    assert_eq!(bits(a), bits(b));
                }
            }
        }
    }
}

/// A block's backward gradients, dx and dΔ as its own `[L, w]`.
struct Grads {
    dx: Vec<f32>,
    ddelta: Vec<f32>,
    grads: BlockGrads<f32>,
}

/// `run` writing dx and dΔ into the block's own `[L, w]` (stride w).
fn in_block(
    dims: &Dims,
    (_, e0, e1): (usize, usize, usize),
    run: impl FnOnce(&mut Scratch<f32>, ChannelRows<f32>) -> BlockGrads<f32>,
) -> Grads {
    let w = e1 - e0;
    let (mut dx, mut ddelta) = (vec![f32::NAN; dims.l * w], vec![f32::NAN; dims.l * w]);
    let out = ChannelRows {
        dx: &mut dx,
        ddelta: &mut ddelta,
        stride: w,
        col: 0,
    };
    let grads = run(&mut Scratch::new(dims), out);
    Grads { dx, ddelta, grads }
}

/// `run` writing dx and dΔ into a `[L, E]` batch row at the block's channels, which are then
/// taken out as `[L, w]`; every other value of the row must be left as it was.
fn in_row(
    dims: &Dims,
    (_, e0, e1): (usize, usize, usize),
    run: impl FnOnce(&mut Scratch<f32>, ChannelRows<f32>) -> BlockGrads<f32>,
) -> Grads {
    let (l, e) = (dims.l, dims.e);
    let (mut dx, mut ddelta) = (vec![f32::NAN; l * e], vec![f32::NAN; l * e]);
    let out = ChannelRows {
        dx: &mut dx,
        ddelta: &mut ddelta,
        stride: e,
        col: e0,
    };
    let grads = run(&mut Scratch::new(dims), out);
    let columns = |row: &[f32]| -> Vec<f32> {
        let outside = (0..l).flat_map(|t| (0..e).map(move |c| (t, c)));
        for (t, c) in outside.filter(|&(_, c)| c < e0 || c >= e1) {
            assert!(
                row[t * e + c].is_nan(),
                "wrote outside the block at {t}, {c}"
            );
        }
        (0..l)
            .flat_map(|t| row[t * e + e0..t * e + e1].to_vec())
            .collect()
    };
    Grads {
        dx: columns(&dx),
        ddelta: columns(&ddelta),
        grads,
    }
}
