//! What the fused CPU kernels share: a check for the CPU fast path, contiguous slices of
//! storage, and the small slice of float arithmetic they need for f32 and f64.

use candle_core::{DType, Layout, Result, Tensor};

pub(crate) fn cpu_fused(x: &Tensor) -> bool {
    x.device().is_cpu() && matches!(x.dtype(), DType::F32 | DType::F64)
}

pub(crate) fn contiguous_slice<'a, T>(s: &'a [T], l: &Layout, what: &str) -> Result<&'a [T]> {
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&s[a..b]),
        None => candle_core::bail!("{what}: input has to be contiguous"),
    }
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
        fn neg_infinity() -> Self;
        fn exp(self) -> Self;
        fn sqrt(self) -> Self;
        fn recip(self) -> Self;
        fn max(self, o: Self) -> Self;
        fn from<N: Into<f64>>(n: N) -> Option<Self>;
        fn from_usize(n: usize) -> Self;
    }

    macro_rules! impl_float {
        ($t:ty) => {
            impl Float for $t {
                fn zero() -> Self {
                    0.0
                }
                fn neg_infinity() -> Self {
                    <$t>::NEG_INFINITY
                }
                fn exp(self) -> Self {
                    <$t>::exp(self)
                }
                fn sqrt(self) -> Self {
                    <$t>::sqrt(self)
                }
                fn recip(self) -> Self {
                    <$t>::recip(self)
                }
                fn max(self, o: Self) -> Self {
                    <$t>::max(self, o)
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

    /// A weighting that makes the scalar loss depend on every output element differently.
    pub fn weights(shape: &[usize]) -> Tensor {
        randn(shape, 99)
    }
}
