//! dB‖dC's lane sums for the AVX-512 backward kernel: `lane_sum`'s fixed order, sixteen sums
//! at a time through a transpose.

use std::arch::x86_64::*;

use super::super::{lane_sum, LANES};
use super::{load, store};

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
pub(super) fn lane_sums(out: &mut [f32], lanes: &[[f32; LANES]]) {
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
    use super::super::{available, tests::bits};
    use super::*;
    use rand::{Rng, SeedableRng};

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
}
