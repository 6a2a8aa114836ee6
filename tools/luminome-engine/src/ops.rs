//! Differentiable building blocks the training path relies on.
//!
//! candle-nn's fast softmax and layer-norm kernels have no backward pass: training through them
//! silently stops the gradient. The ops here have one. On the CPU they are fused custom ops
//! (forward and backward each one pass over the data, rows in parallel); on other devices they
//! fall back to compositions of autograd-capable candle primitives. Both paths are checked
//! against finite differences in the tests below.

use candle_core::{backend::BackendStorage, CpuStorage, DType, Layout, Result, Shape, Tensor, D};
use rayon::prelude::*;

/// Large negative additive bias for masked attention scores. Finite, so a row with every key
/// masked gives a uniform distribution instead of NaN.
pub const MASK_BIAS: f64 = -1e9;

fn cpu_fused(x: &Tensor) -> bool {
    x.device().is_cpu() && matches!(x.dtype(), DType::F32 | DType::F64)
}

fn contiguous_slice<'a, T>(s: &'a [T], l: &Layout, what: &str) -> Result<&'a [T]> {
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&s[a..b]),
        None => candle_core::bail!("{what}: input has to be contiguous"),
    }
}

// ---------------------------------------------------------------------------------------------
// softmax over the last dimension

struct SoftmaxLastDim;

fn softmax_rows<T: num_traits_float::Float>(src: &[T], dst: &mut [T], n: usize) {
    src.par_chunks(n)
        .zip(dst.par_chunks_mut(n))
        .for_each(|(s, d)| {
            let max = s.iter().copied().fold(T::neg_infinity(), T::max);
            let mut sum = T::zero();
            for (o, &i) in d.iter_mut().zip(s) {
                *o = (i - max).exp();
                sum = sum + *o;
            }
            let inv = sum.recip();
            for o in d.iter_mut() {
                *o = *o * inv;
            }
        });
}

impl candle_core::CustomOp1 for SoftmaxLastDim {
    fn name(&self) -> &'static str {
        "luminome-softmax-last-dim"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let n = layout.dims().last().copied().unwrap_or(1);
        let storage = match storage {
            CpuStorage::F32(s) => {
                let s = contiguous_slice(s, layout, "softmax")?;
                let mut d = vec![0f32; s.len()];
                softmax_rows(s, &mut d, n);
                CpuStorage::F32(d)
            }
            CpuStorage::F64(s) => {
                let s = contiguous_slice(s, layout, "softmax")?;
                let mut d = vec![0f64; s.len()];
                softmax_rows(s, &mut d, n);
                CpuStorage::F64(d)
            }
            _ => candle_core::bail!("softmax: unsupported dtype {:?}", storage.dtype()),
        };
        Ok((storage, layout.shape().clone()))
    }

    fn bwd(&self, _arg: &Tensor, res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        // dx = y ⊙ (g − Σ_j g_j y_j)
        let grad = grad_res.contiguous()?;
        let res = res.contiguous()?;
        Ok(Some(res.apply_op2_no_bwd(&grad, &SoftmaxBackward)?))
    }
}

struct SoftmaxBackward;

fn softmax_bwd_rows<T: num_traits_float::Float>(y: &[T], g: &[T], dst: &mut [T], n: usize) {
    dst.par_chunks_mut(n)
        .zip(y.par_chunks(n).zip(g.par_chunks(n)))
        .for_each(|(d, (y, g))| {
            let mut dot = T::zero();
            for (&a, &b) in y.iter().zip(g) {
                dot = dot + a * b;
            }
            for ((o, &a), &b) in d.iter_mut().zip(y).zip(g) {
                *o = a * (b - dot);
            }
        });
}

impl candle_core::CustomOp2 for SoftmaxBackward {
    fn name(&self) -> &'static str {
        "luminome-softmax-backward"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let n = l1.dims().last().copied().unwrap_or(1);
        let storage = match (s1, s2) {
            (CpuStorage::F32(y), CpuStorage::F32(g)) => {
                let (y, g) = (
                    contiguous_slice(y, l1, "softmax bwd")?,
                    contiguous_slice(g, l2, "softmax bwd")?,
                );
                let mut d = vec![0f32; y.len()];
                softmax_bwd_rows(y, g, &mut d, n);
                CpuStorage::F32(d)
            }
            (CpuStorage::F64(y), CpuStorage::F64(g)) => {
                let (y, g) = (
                    contiguous_slice(y, l1, "softmax bwd")?,
                    contiguous_slice(g, l2, "softmax bwd")?,
                );
                let mut d = vec![0f64; y.len()];
                softmax_bwd_rows(y, g, &mut d, n);
                CpuStorage::F64(d)
            }
            _ => candle_core::bail!("softmax backward: unsupported dtypes"),
        };
        Ok((storage, l1.shape().clone()))
    }
}

/// Softmax over the last dimension, with a backward pass.
pub fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    if cpu_fused(x) {
        x.contiguous()?.apply_op1(SoftmaxLastDim)
    } else {
        softmax_last_dim_primitive(x)
    }
}

/// The same softmax from autograd-capable primitives (non-CPU devices; reference in tests).
pub fn softmax_last_dim_primitive(x: &Tensor) -> Result<Tensor> {
    let max = x.max_keepdim(D::Minus1)?.detach();
    let e = x.broadcast_sub(&max)?.exp()?;
    e.broadcast_div(&e.sum_keepdim(D::Minus1)?)
}

// ---------------------------------------------------------------------------------------------
// layer normalisation over the last dimension

/// x̂ = (x − mean) / sqrt(var + eps), per row (no affine part).
struct Normalize {
    eps: f64,
}

fn normalize_rows<T: num_traits_float::Float>(src: &[T], dst: &mut [T], n: usize, eps: f64) {
    let nn = T::from_usize(n);
    let eps = T::from(eps).unwrap_or_else(T::zero);
    src.par_chunks(n)
        .zip(dst.par_chunks_mut(n))
        .for_each(|(s, d)| {
            let mean = s.iter().fold(T::zero(), |a, &b| a + b) / nn;
            let var = s
                .iter()
                .fold(T::zero(), |a, &b| a + (b - mean) * (b - mean))
                / nn;
            let inv = (var + eps).sqrt().recip();
            for (o, &i) in d.iter_mut().zip(s) {
                *o = (i - mean) * inv;
            }
        });
}

impl candle_core::CustomOp1 for Normalize {
    fn name(&self) -> &'static str {
        "luminome-normalize"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let n = layout.dims().last().copied().unwrap_or(1);
        let storage = match storage {
            CpuStorage::F32(s) => {
                let s = contiguous_slice(s, layout, "layer norm")?;
                let mut d = vec![0f32; s.len()];
                normalize_rows(s, &mut d, n, self.eps);
                CpuStorage::F32(d)
            }
            CpuStorage::F64(s) => {
                let s = contiguous_slice(s, layout, "layer norm")?;
                let mut d = vec![0f64; s.len()];
                normalize_rows(s, &mut d, n, self.eps);
                CpuStorage::F64(d)
            }
            _ => candle_core::bail!("layer norm: unsupported dtype {:?}", storage.dtype()),
        };
        Ok((storage, layout.shape().clone()))
    }

    fn bwd(&self, arg: &Tensor, res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        // dx = (g − mean(g) − x̂ ⊙ mean(g ⊙ x̂)) / sqrt(var + eps)
        let arg = arg.contiguous()?;
        let res = res.contiguous()?;
        let grad = grad_res.contiguous()?;
        Ok(Some(arg.apply_op3_no_bwd(
            &res,
            &grad,
            &NormalizeBackward { eps: self.eps },
        )?))
    }
}

struct NormalizeBackward {
    eps: f64,
}

fn normalize_bwd_rows<T: num_traits_float::Float>(
    x: &[T],
    y: &[T],
    g: &[T],
    dst: &mut [T],
    n: usize,
    eps: f64,
) {
    let nn = T::from_usize(n);
    let eps = T::from(eps).unwrap_or_else(T::zero);
    dst.par_chunks_mut(n)
        .zip(x.par_chunks(n).zip(y.par_chunks(n).zip(g.par_chunks(n))))
        .for_each(|(d, (x, (y, g)))| {
            let mean = x.iter().fold(T::zero(), |a, &b| a + b) / nn;
            let var = x
                .iter()
                .fold(T::zero(), |a, &b| a + (b - mean) * (b - mean))
                / nn;
            let inv = (var + eps).sqrt().recip();
            let mut mg = T::zero();
            let mut mgy = T::zero();
            for (&gi, &yi) in g.iter().zip(y) {
                mg = mg + gi;
                mgy = mgy + gi * yi;
            }
            mg = mg / nn;
            mgy = mgy / nn;
            for ((o, &gi), &yi) in d.iter_mut().zip(g).zip(y) {
                *o = (gi - mg - yi * mgy) * inv;
            }
        });
}

impl candle_core::CustomOp3 for NormalizeBackward {
    fn name(&self) -> &'static str {
        "luminome-normalize-backward"
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
        let n = l1.dims().last().copied().unwrap_or(1);
        let storage = match (s1, s2, s3) {
            (CpuStorage::F32(x), CpuStorage::F32(y), CpuStorage::F32(g)) => {
                let x = contiguous_slice(x, l1, "layer norm bwd")?;
                let y = contiguous_slice(y, l2, "layer norm bwd")?;
                let g = contiguous_slice(g, l3, "layer norm bwd")?;
                let mut d = vec![0f32; x.len()];
                normalize_bwd_rows(x, y, g, &mut d, n, self.eps);
                CpuStorage::F32(d)
            }
            (CpuStorage::F64(x), CpuStorage::F64(y), CpuStorage::F64(g)) => {
                let x = contiguous_slice(x, l1, "layer norm bwd")?;
                let y = contiguous_slice(y, l2, "layer norm bwd")?;
                let g = contiguous_slice(g, l3, "layer norm bwd")?;
                let mut d = vec![0f64; x.len()];
                normalize_bwd_rows(x, y, g, &mut d, n, self.eps);
                CpuStorage::F64(d)
            }
            _ => candle_core::bail!("layer norm backward: unsupported dtypes"),
        };
        Ok((storage, l1.shape().clone()))
    }
}

/// Normalises the last dimension to zero mean and unit variance, with a backward pass.
pub fn normalize_last_dim(x: &Tensor, eps: f64) -> Result<Tensor> {
    if cpu_fused(x) {
        x.contiguous()?.apply_op1(Normalize { eps })
    } else {
        normalize_last_dim_primitive(x, eps)
    }
}

/// The same normalisation from autograd-capable primitives.
pub fn normalize_last_dim_primitive(x: &Tensor, eps: f64) -> Result<Tensor> {
    let n = x.dim(D::Minus1)? as f64;
    let centered = x.broadcast_sub(&(x.sum_keepdim(D::Minus1)? / n)?)?;
    let var = (centered.sqr()?.sum_keepdim(D::Minus1)? / n)?;
    centered.broadcast_div(&(var + eps)?.sqrt()?)
}

/// A layer norm with learned scale γ and shift β.
#[derive(Debug, Clone)]
pub struct LayerNorm {
    pub weight: Tensor,
    pub bias: Tensor,
    pub eps: f64,
}

impl LayerNorm {
    pub fn new(dim: usize, eps: f64, vb: candle_nn::VarBuilder) -> Result<Self> {
        let weight = vb.get_with_hints(dim, "weight", candle_nn::Init::Const(1.0))?;
        let bias = vb.get_with_hints(dim, "bias", candle_nn::Init::Const(0.0))?;
        Ok(Self { weight, bias, eps })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let xhat = normalize_last_dim(x, self.eps)?;
        if cpu_fused(x) && x.dtype() == DType::F32 {
            let dims = x.dims().to_vec();
            let c = *dims.last().unwrap_or(&1);
            let flat = xhat.reshape((x.elem_count() / c.max(1), c))?;
            flat.apply_op3(
                &self.weight.contiguous()?,
                &self.bias.contiguous()?,
                ScaleShift,
            )?
            .reshape(dims)
        } else {
            xhat.broadcast_mul(&self.weight)?.broadcast_add(&self.bias)
        }
    }
}

/// y = x̂ ⊙ γ + β over rows of `[R, C]`; the γ and β gradients are row sums in one pass.
struct ScaleShift;

impl candle_core::CustomOp3 for ScaleShift {
    fn name(&self) -> &'static str {
        "luminome-scale-shift"
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
        let (CpuStorage::F32(x), CpuStorage::F32(g), CpuStorage::F32(b)) = (s1, s2, s3) else {
            candle_core::bail!("layer norm affine: f32 only")
        };
        let x = contiguous_slice(x, l1, "layer norm affine")?;
        let g = contiguous_slice(g, l2, "layer norm affine")?;
        let b = contiguous_slice(b, l3, "layer norm affine")?;
        let c = g.len();
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(c * 64)
            .zip(x.par_chunks(c * 64))
            .for_each(|(o, x)| {
                for (orow, xrow) in o.chunks_mut(c).zip(x.chunks(c)) {
                    for (((o, &x), &g), &b) in orow.iter_mut().zip(xrow).zip(g).zip(b) {
                        *o = x * g + b;
                    }
                }
            });
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }

    fn bwd(
        &self,
        x: &Tensor,
        gamma: &Tensor,
        _beta: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let dx = grad.broadcast_mul(gamma)?;
        let dgamma = crate::linear::sum_rows(&(grad * x)?)?;
        let dbeta = crate::linear::sum_rows(grad)?;
        Ok((Some(dx), Some(dgamma), Some(dbeta)))
    }
}

// ---------------------------------------------------------------------------------------------
// masks

/// `[B, L]` 0/1 mask → `[B, 1, 1, L]` additive attention bias (0 where kept, [`MASK_BIAS`] where
/// padded), in `dtype`.
pub fn attention_bias(mask: &Tensor, dtype: DType) -> Result<Tensor> {
    let (b, l) = mask.dims2()?;
    let m = mask.to_dtype(dtype)?;
    ((m - 1.0)? * (-MASK_BIAS))?.reshape((b, 1, 1, l))
}

/// Masked mean over dimension 1 of `[B, L, D]`: Σ h_i m_i / (Σ m_i + eps).
pub fn masked_mean(h: &Tensor, mask: &Tensor, eps: f64) -> Result<Tensor> {
    let m = mask.to_dtype(h.dtype())?.unsqueeze(2)?;
    let num = h.broadcast_mul(&m)?.sum(1)?;
    let den = (m.sum(1)? + eps)?;
    num.broadcast_div(&den)
}

/// Masked max over dimension 1 of `[B, L, D]`: padded positions can never be the maximum.
pub fn masked_max(h: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let m = mask.to_dtype(h.dtype())?.unsqueeze(2)?;
    // Padded positions get −1e9 added: their value can never win against a real token, and the
    // gradient of max only flows to the winning position.
    let bias = ((m - 1.0)? * (-MASK_BIAS))?;
    h.broadcast_add(&bias)?.max(1)
}

// ---------------------------------------------------------------------------------------------
// seeded dropout

/// Dropout whose masks come from a seeded RNG, so a seed fixes every mask (candle's own dropout
/// draws from an unseedable generator).
pub struct DropoutRng {
    rng: std::cell::RefCell<rand_chacha::ChaCha8Rng>,
}

impl DropoutRng {
    pub fn new(seed: u64) -> Self {
        use rand::SeedableRng;
        Self {
            rng: std::cell::RefCell::new(rand_chacha::ChaCha8Rng::seed_from_u64(seed)),
        }
    }

    /// Zeroes each element with probability `p` and scales the rest by 1 / (1 − p).
    pub fn dropout(&self, x: &Tensor, p: f64) -> Result<Tensor> {
        if p <= 0.0 {
            return Ok(x.clone());
        }
        use rand::Rng;
        let n = x.elem_count();
        let scale = (1.0 / (1.0 - p)) as f32;
        let threshold = (p * u32::MAX as f64) as u32;
        let mut rng = self.rng.borrow_mut();
        let keep: Vec<f32> = (0..n)
            .map(|_| {
                if rng.random::<u32>() >= threshold {
                    scale
                } else {
                    0.0
                }
            })
            .collect();
        let mask = Tensor::from_vec(keep, x.shape(), x.device())?.to_dtype(x.dtype())?;
        x.mul(&mask)
    }
}

/// Applies dropout when training (an RNG is given), passes through otherwise.
pub fn maybe_dropout(x: &Tensor, p: f64, rng: Option<&DropoutRng>) -> Result<Tensor> {
    match rng {
        Some(r) => r.dropout(x, p),
        None => Ok(x.clone()),
    }
}

/// The tiny slice of float arithmetic the fused kernels need, for f32 and f64.
mod num_traits_float {
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
mod tests {
    use super::*;
    use crate::gradcheck::max_grad_error;
    use candle_core::{Device, Var};

    fn randn(shape: &[usize], seed: u64) -> Tensor {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n).map(|_| rng.random::<f64>() * 4.0 - 2.0).collect();
        Tensor::from_vec(v, shape, &Device::Cpu).unwrap()
    }

    /// A weighting that makes the scalar loss depend on every output element differently.
    fn weights(shape: &[usize]) -> Tensor {
        randn(shape, 99)
    }

    #[test]
    fn softmax_gradient_matches_finite_differences() {
        let x = randn(&[3, 4, 7], 1);
        let w = weights(&[3, 4, 7]);
        let err = max_grad_error(&x, 1e-6, &|x| softmax_last_dim(x)?.mul(&w)?.sum_all()).unwrap();
        assert!(err < 1e-6, "softmax gradient error {err}");
    }

    #[test]
    fn fused_softmax_equals_the_primitive_one_in_value_and_gradient() {
        let x = randn(&[2, 5, 9], 2).to_dtype(DType::F32).unwrap();
        let a = softmax_last_dim(&x).unwrap();
        let b = softmax_last_dim_primitive(&x).unwrap();
        let d = (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(d < 1e-6, "{d}");
        let rows: Vec<f32> = softmax_last_dim(&x)
            .unwrap()
            .sum(2)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        assert!(rows.iter().all(|s| (s - 1.0).abs() < 1e-5));
    }

    #[test]
    fn layer_norm_gradient_matches_finite_differences() {
        let x = randn(&[3, 5, 8], 3);
        let w = weights(&[3, 5, 8]);
        let err = max_grad_error(&x, 1e-6, &|x| {
            normalize_last_dim(x, 1e-5)?.mul(&w)?.sum_all()
        })
        .unwrap();
        assert!(err < 1e-6, "layer norm gradient error {err}");
        let primitive = normalize_last_dim_primitive(&x, 1e-5).unwrap();
        let fused = normalize_last_dim(&x, 1e-5).unwrap();
        let d = (primitive - fused)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap();
        assert!(d < 1e-10, "{d}");
    }

    #[test]
    fn layer_norm_with_affine_parameters_has_their_gradients() {
        let x = randn(&[4, 6], 4);
        let gamma = randn(&[6], 5);
        let beta = randn(&[6], 6);
        let w = weights(&[4, 6]);
        let ln = |x: &Tensor, g: &Tensor, b: &Tensor| {
            LayerNorm {
                weight: g.clone(),
                bias: b.clone(),
                eps: 1e-5,
            }
            .forward(x)
        };
        let e1 = max_grad_error(&gamma, 1e-6, &|g| ln(&x, g, &beta)?.mul(&w)?.sum_all()).unwrap();
        let e2 = max_grad_error(&beta, 1e-6, &|b| ln(&x, &gamma, b)?.mul(&w)?.sum_all()).unwrap();
        assert!(e1 < 1e-6 && e2 < 1e-6, "{e1} {e2}");
    }

    #[test]
    fn masked_pooling_gradients_match_finite_differences_and_ignore_padding() {
        let h = randn(&[2, 5, 3], 7);
        let mask = Tensor::new(
            &[[1f64, 1., 1., 0., 0.], [1., 1., 1., 1., 0.]],
            &Device::Cpu,
        )
        .unwrap();
        let w = weights(&[2, 3]);
        let e_mean = max_grad_error(&h, 1e-6, &|h| {
            masked_mean(h, &mask, 1e-9)?.mul(&w)?.sum_all()
        })
        .unwrap();
        let e_max =
            max_grad_error(&h, 1e-6, &|h| masked_max(h, &mask)?.mul(&w)?.sum_all()).unwrap();
        assert!(e_mean < 1e-6 && e_max < 1e-6, "{e_mean} {e_max}");
        // Padded positions get no gradient.
        let var = Var::from_tensor(&h).unwrap();
        let g = masked_max(var.as_tensor(), &mask)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        let g = g
            .get(var.as_tensor())
            .unwrap()
            .get(0)
            .unwrap()
            .narrow(0, 3, 2)
            .unwrap();
        assert_eq!(
            g.abs()
                .unwrap()
                .sum_all()
                .unwrap()
                .to_scalar::<f64>()
                .unwrap(),
            0.0
        );
    }

    #[test]
    fn masked_attention_gives_padded_keys_zero_weight() {
        let scores = Tensor::zeros((1, 1, 2, 4), DType::F32, &Device::Cpu).unwrap();
        let mask = Tensor::new(&[[1f32, 1., 0., 0.]], &Device::Cpu).unwrap();
        let p = softmax_last_dim(
            &scores
                .broadcast_add(&attention_bias(&mask, DType::F32).unwrap())
                .unwrap(),
        )
        .unwrap();
        let p: Vec<f32> = p.flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(&p[..4], &[0.5, 0.5, 0.0, 0.0]);
    }

    #[test]
    fn seeded_dropout_is_reproducible_and_scales() {
        let x = Tensor::ones((64, 64), DType::F32, &Device::Cpu).unwrap();
        let a: Vec<f32> = DropoutRng::new(5)
            .dropout(&x, 0.25)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let b: Vec<f32> = DropoutRng::new(5)
            .dropout(&x, 0.25)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        assert_eq!(a, b);
        let kept = a.iter().filter(|&&v| v > 0.0).count() as f64 / a.len() as f64;
        assert!((kept - 0.75).abs() < 0.03, "{kept}");
        assert!(a.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-6));
    }
}
