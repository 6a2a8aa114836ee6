//! What the fused CPU kernels share: a check for the CPU fast path, contiguous slices of
//! storage, and the small slice of float arithmetic they need for f32 and f64.

use candle_core::{CpuStorage, DType, Layout, Result, Tensor};

static FORCE_PRIMITIVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every op take its fallback built from candle primitives — the path CUDA and Metal run
/// — even on the CPU: lets the CPU check, end to end, that the fallbacks compute what the fused
/// kernels do (tools/luminome-train/tests/fallbacks.rs, examples/cuda_check.rs). Process-wide.
pub fn force_primitive_ops(on: bool) {
    FORCE_PRIMITIVE.store(on, std::sync::atomic::Ordering::SeqCst);
}

/// Whether [`force_primitive_ops`] is on (the CUDA kernels yield to it too).
pub(crate) fn primitive_ops_forced() -> bool {
    FORCE_PRIMITIVE.load(std::sync::atomic::Ordering::SeqCst)
}

/// Whether the fused CPU kernel runs for `x`: on the CPU, for f32/f64, unless the fallbacks are
/// forced.
pub(crate) fn cpu_fused(x: &Tensor) -> bool {
    cpu_fast_path(x.device()) && matches!(x.dtype(), DType::F32 | DType::F64)
}

/// Whether the fused row kernels run for `x` (layer norm, softmax): the CPU kernel as
/// [`cpu_fused`], or on CUDA for f32 the warp-per-row kernels of `nn/cuda_rows.rs`; unless the
/// fallbacks are forced.
pub(crate) fn fused_rows(x: &Tensor) -> bool {
    cpu_fused(x)
        || (cfg!(feature = "cuda")
            && x.device().is_cuda()
            && x.dtype() == DType::F32
            && !primitive_ops_forced())
}

/// Whether an op's CUDA kernel runs for `x`: on CUDA, for f32, unless the fallbacks are forced
/// (the selective scan's kernels; the gated unit and rotary positions, whose CPU path stays
/// candle's primitives).
pub(crate) fn cuda_fused(x: &Tensor) -> bool {
    cfg!(feature = "cuda")
        && x.device().is_cuda()
        && x.dtype() == DType::F32
        && !primitive_ops_forced()
}

/// The device half of [`cpu_fused`], for ops with their own dtype rule.
pub(crate) fn cpu_fast_path(device: &candle_core::Device) -> bool {
    device.is_cpu() && !primitive_ops_forced()
}

pub(crate) fn contiguous_slice<'a, T>(s: &'a [T], l: &Layout, what: &str) -> Result<&'a [T]> {
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&s[a..b]),
        None => candle_core::bail!("{what}: input has to be contiguous"),
    }
}

/// The f32 slices of an element-wise binary op's two inputs, contiguous and of one length.
pub(crate) fn f32_operands<'a>(
    (s1, l1): (&'a CpuStorage, &Layout),
    (s2, l2): (&'a CpuStorage, &Layout),
    what: &str,
) -> Result<(&'a [f32], &'a [f32])> {
    let (CpuStorage::F32(a), CpuStorage::F32(b)) = (s1, s2) else {
        candle_core::bail!("{what}: f32 only")
    };
    let a = contiguous_slice(a, l1, what)?;
    let b = contiguous_slice(b, l2, what)?;
    if a.len() != b.len() {
        candle_core::bail!("{what}: {} and {} elements", a.len(), b.len())
    }
    Ok((a, b))
}

/// The f32 or f64 elements of a contiguous input as f64: for the reference CPU code of ops
/// whose production path is another device's kernel (the gated unit, rotary positions).
pub(crate) fn f64_elements(s: &CpuStorage, l: &Layout, what: &str) -> Result<Vec<f64>> {
    Ok(match s {
        CpuStorage::F32(v) => contiguous_slice(v, l, what)?
            .iter()
            .map(|&x| f64::from(x))
            .collect(),
        CpuStorage::F64(v) => contiguous_slice(v, l, what)?.to_vec(),
        _ => candle_core::bail!("{what}: f32 or f64 only"),
    })
}

/// `values` as storage of `like`'s dtype (f32 rounded from f64, or f64).
pub(crate) fn f64_to_dtype_of(like: &CpuStorage, values: Vec<f64>) -> CpuStorage {
    match like {
        CpuStorage::F32(_) => CpuStorage::F32(values.into_iter().map(|v| v as f32).collect()),
        _ => CpuStorage::F64(values),
    }
}

/// A new vector of `len` values, every one written by `fill` (which must write each element of
/// the slice it is handed before reading it). The kernels' outputs are allocated this way
/// rather than as `vec![0; len]`: the allocator hands back freed memory (the purge delay,
/// `luminome_cli::keep_freed_memory`), which zero-filling costs one more pass over every output
/// — a serial memset on the calling thread, ~5 % of a two-thread step. candle allocates its own
/// outputs the same way (`alloc_uninit`).
pub(crate) fn written_by<T: Copy>(len: usize, fill: impl FnOnce(&mut [T])) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(len);
    // SAFETY: the slice covers the capacity just allocated; `fill` writes every element before
    // any is read (the contract above, kept by each caller's row loops), so all `len` are
    // initialised when the length is set. If `fill` panics the vector is dropped at length 0.
    #[allow(unsafe_code)]
    unsafe {
        fill(std::slice::from_raw_parts_mut(v.as_mut_ptr(), len));
        v.set_len(len);
    }
    v
}

/// The tiny slice of float arithmetic the fused kernels need, for f32 and f64.
pub(crate) mod num_traits_float {
    pub trait Float:
        Copy
        + Send
        + Sync
        + PartialOrd
        + std::ops::Add<Output = Self>
        + std::ops::Sub<Output = Self>
        + std::ops::Mul<Output = Self>
        + std::ops::Div<Output = Self>
    {
        fn zero() -> Self;
        /// 2^self for the selective scan's decays: f32 uses a branch-free polynomial the
        /// compiler vectorises with fused multiply-adds, giving the bits of the AVX-512 scan
        /// kernel's `vrndscaleps`/`vscalefps` sequence (`exp2_f32_fma`: relative error below
        /// 2e-7; meant for kernels compiled with FMA); f64 is the exact one.
        fn fast_exp2(self) -> Self;
        /// self · a + b rounded once (a fused multiply-add where the code is compiled with FMA;
        /// libm's `fma` elsewhere, the same bits, slowly).
        fn mul_add(self, a: Self, b: Self) -> Self;
        fn sqrt(self) -> Self;
        fn recip(self) -> Self;
        fn from<N: Into<f64>>(n: N) -> Option<Self>;
        fn from_usize(n: usize) -> Self;
    }

    macro_rules! impl_float {
        ($t:ty) => {
            impl Float for $t {
                fn zero() -> Self {
                    0.0
                }
                #[inline(always)]
                fn fast_exp2(self) -> Self {
                    FastExp::fast_exp2_impl(self)
                }
                #[inline(always)]
                fn mul_add(self, a: Self, b: Self) -> Self {
                    <$t>::mul_add(self, a, b)
                }
                fn sqrt(self) -> Self {
                    <$t>::sqrt(self)
                }
                fn recip(self) -> Self {
                    <$t>::recip(self)
                }
                fn from<N: Into<f64>>(n: N) -> Option<Self> {
                    Some(n.into() as $t)
                }
                fn from_usize(n: usize) -> Self {
                    n as $t
                }
            }
        };
    }
    impl_float!(f32);
    impl_float!(f64);

    impl FastExp for f32 {
        #[inline(always)]
        fn fast_exp2_impl(self) -> Self {
            exp2_f32_fma(self)
        }
    }

    impl FastExp for f64 {
        fn fast_exp2_impl(self) -> Self {
            self.exp2()
        }
    }

    /// Dispatches `fast_exp2` per type.
    pub trait FastExp {
        fn fast_exp2_impl(self) -> Self;
    }

    /// The coefficients of 2^f on [0, 1), c₁..c₅ (c₀ = 1, so 2^0 is exactly 1): a least-maximum
    /// relative error fit (Lawson's iteration), 1.4e-7 at most evaluated in f32 with fused
    /// multiply-adds.
    pub const EXP2_POLY: [f32; 5] = [
        0.693_151_3,
        0.240_164_46,
        0.055_799_89,
        0.009_017_064,
        0.001_867_114,
    ];

    /// 2^f for f in [0, 1) by `EXP2_POLY` (Horner's scheme, each step one fused multiply-add).
    #[inline(always)]
    pub fn exp2_poly(f: f32) -> f32 {
        let [c1, c2, c3, c4, c5] = EXP2_POLY;
        let p = c5.mul_add(f, c4);
        let p = p.mul_add(f, c3);
        let p = p.mul_add(f, c2);
        let p = p.mul_add(f, c1);
        p.mul_add(f, 1.0)
    }

    /// 2^t as 2^⌊t⌋ · 2^(t − ⌊t⌋): the bits of AVX-512's `vrndscaleps` (⌊t⌋), a subtraction,
    /// `exp2_poly`, and `vscalefps` (p · 2^⌊t⌋ rounded once, denormals and overflow included),
    /// computed with the instructions every x86-64 FMA machine has, so that the AVX2 clone of
    /// the scan gives the AVX-512 kernel's bits. t is clamped to [−151, 128], where the result
    /// is already 0 or ∞ (by comparisons, which keep a NaN: it gives NaN, as in the AVX-512
    /// kernel); 2^⌊t⌋ is applied as two factors, each a normal float, so that the first product
    /// is exact and only the second rounds, as `vscalefps` does. Relative error below 2e-7 for
    /// results above 2^−126.
    #[inline(always)]
    pub fn exp2_f32_fma(t: f32) -> f32 {
        // Not max/min: f32::max(NaN, x) is x.
        let t = if t < -151.0 { -151.0 } else { t };
        let t = if t > 128.0 { 128.0 } else { t };
        let k = t.floor();
        let p = exp2_poly(t - k);
        let half = (k * 0.5).floor();
        p * pow2_f32(half) * pow2_f32(k - half)
    }

    /// 2^k for an integer-valued k in [−126, 127], by writing k + 127 into the exponent field
    /// (the `BIAS` trick of `exp_f32_fma`).
    #[inline(always)]
    fn pow2_f32(k: f32) -> f32 {
        const BIAS: f32 = 8_388_735.0;
        f32::from_bits((k + BIAS).to_bits() << 23)
    }

    /// e^x as 2^k · e^f: k = round(x / ln 2), f = x − k·ln 2 in two steps (Cody–Waite: ln 2
    /// split into a part exact in few bits and a correction, so f keeps its precision), and e^f
    /// for |f| ≤ ln 2 / 2 by its Taylor series to the 6th power (truncation (ln 2/2)^7 / 7! ≈
    /// 1.2e-7), each `a · b + c` a fused multiply-add (rounded once). Branch-free, so a loop of
    /// them becomes vector code; libm's expf is called one value at a time. x is clamped to
    /// [−87, 88] (below, the result is ~1e−38 instead of 0). Meant for loops compiled with FMA
    /// (the AVX2+FMA and AVX-512 clones of a multiversioned kernel): elsewhere `mul_add` is
    /// libm's `fmaf`, correct to the bit but slow. Every clone gives the same bits, a fused
    /// multiply-add being exactly rounded wherever it runs.
    #[inline(always)]
    pub fn exp_f32_fma(x: f32) -> f32 {
        const LN2_HI: f32 = 0.693_359_4;
        const LN2_LO: f32 = -2.121_944_4e-4;
        // Round to nearest with the 1.5 · 2^23 trick: adding and removing it leaves an integer
        // (exact for |y| < 2^22); no floor/round instruction needed, which baseline x86-64 lacks.
        const ROUND: f32 = 12_582_912.0;
        // 2^23 + 127: adding it to the integer k puts k + 127 in the low mantissa bits, which
        // shifted by 23 are the exponent field of 2^k. No float-to-int conversion, whose
        // saturating semantics would keep the loop scalar.
        const BIAS: f32 = 8_388_735.0;
        // max/min rather than clamp: they become vmaxps/vminps in the vectorised loops.
        #[allow(clippy::manual_clamp)]
        let x = x.max(-87.0).min(88.0);
        let k = x.mul_add(std::f32::consts::LOG2_E, ROUND) - ROUND;
        let f = k.mul_add(-LN2_HI, x);
        let f = k.mul_add(-LN2_LO, f);
        let p = f.mul_add(1.0 / 720.0, 1.0 / 120.0);
        let p = p.mul_add(f, 1.0 / 24.0);
        let p = p.mul_add(f, 1.0 / 6.0);
        let p = p.mul_add(f, 0.5);
        let p = p.mul_add(f, 1.0);
        let p = p.mul_add(f, 1.0);
        p * f32::from_bits((k + BIAS).to_bits() << 23)
    }
}

#[cfg(test)]
mod tests {
    use super::num_traits_float::exp_f32_fma as exp;

    #[test]
    fn the_fast_exp_is_within_3e7_of_exp_over_the_range_used() {
        let mut worst = 0f64;
        for i in 0..=200_000 {
            let x = -87.0 + 175.0 * i as f32 / 200_000.0;
            let exact = f64::from(x).exp();
            let err = ((f64::from(exp(x)) - exact) / exact).abs();
            worst = worst.max(err);
        }
        assert!(worst < 3e-7, "relative error {worst}");
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(-1000.0) < 1e-37 && exp(-1000.0) >= 0.0);
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use candle_core::{Device, Tensor};

    pub fn randn(shape: &[usize], seed: u64) -> Tensor {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n).map(|_| rng.random::<f64>() * 4.0 - 2.0).collect();
        Tensor::from_vec(v, shape, &Device::Cpu).unwrap()
    }

    /// The values of any float tensor, flattened, as f64.
    pub fn f64_values(t: &Tensor) -> Vec<f64> {
        t.to_dtype(candle_core::DType::F64)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap()
    }

    /// The bits of every value of an f32 tensor, flattened: what bit-identity is checked by.
    pub fn f32_bits(t: &Tensor) -> Vec<u32> {
        t.flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect()
    }

    /// A weighting that makes the scalar loss depend on every output element differently.
    pub fn weights(shape: &[usize]) -> Tensor {
        randn(shape, 99)
    }

    /// The bits of the f32 tensor `y`, then of the gradients of Σ w ⊙ y with respect to each
    /// of `inputs`: what two graphs that should be bit-identical are compared by. A zero counts
    /// as +0: the vendored candle-core stores a first gradient as it is where `0 + g` used to
    /// turn −0 into +0 (vendor/README.md), so which path a zero took can show in its sign only.
    pub fn value_and_grad_bits(y: &Tensor, w: &Tensor, inputs: &[&candle_core::Var]) -> Vec<u32> {
        let bits = |t: &Tensor| -> Vec<u32> {
            let v = t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            v.iter()
                .map(|&v| if v == 0.0 { 0 } else { v.to_bits() })
                .collect()
        };
        let grads = (y * w).unwrap().sum_all().unwrap().backward().unwrap();
        let mut out = bits(y);
        for v in inputs {
            out.extend(bits(grads.get(v.as_tensor()).unwrap()));
        }
        out
    }
}
