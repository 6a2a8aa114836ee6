//! Layer normalisation with a backward pass: a fused CPU kernel for x̂ = (x − mean) / sqrt(var +
//! eps) and its gradient, a fused affine part (γ, β) whose gradients are row sums in one pass,
//! and the same maths from primitives on other devices. candle-nn's fast layer norm has no
//! backward.

use candle_core::{backend::BackendStorage, CpuStorage, DType, Layout, Result, Shape, Tensor, D};
use rayon::prelude::*;

use super::kernels::{contiguous_slice, fused_rows, num_traits_float, written_by};

/// x̂ = (x − mean) / sqrt(var + eps), per row (no affine part).
struct Normalize {
    eps: f64,
}

/// The row kernels per element type: f32 (models) vectorised, f64 (gradient checks) plain.
trait NormFloat: num_traits_float::Float {
    /// The mean and 1/√(var + eps) of a row.
    fn row_stats(s: &[Self], eps: f64) -> (Self, Self) {
        let nn = Self::from_usize(s.len());
        let eps = Self::from(eps).unwrap_or_else(Self::zero);
        let mean = s.iter().fold(Self::zero(), |a, &b| a + b) / nn;
        let var = s
            .iter()
            .fold(Self::zero(), |a, &b| a + (b - mean) * (b - mean))
            / nn;
        (mean, (var + eps).sqrt().recip())
    }

    /// x̂ of a row into `d`.
    fn normalize_row(s: &[Self], d: &mut [Self], eps: f64) {
        let (mean, inv) = Self::row_stats(s, eps);
        for (o, &i) in d.iter_mut().zip(s) {
            *o = (i - mean) * inv;
        }
    }

    /// x̂ · γ + β of a row into `d`, x̂ rounded as [`NormFloat::normalize_row`] rounds it.
    fn normalize_affine_row(s: &[Self], d: &mut [Self], g: &[Self], b: &[Self], eps: f64) {
        let (mean, inv) = Self::row_stats(s, eps);
        for (((o, &i), &g), &b) in d.iter_mut().zip(s).zip(g).zip(b) {
            *o = (i - mean) * inv * g + b;
        }
    }

    /// dx = (g − mean(g) − x̂ ⊙ mean(g ⊙ x̂)) / √(var + eps) of a row, x̂ = `y`.
    fn normalize_bwd_row(x: &[Self], y: &[Self], g: &[Self], d: &mut [Self], eps: f64) {
        let nn = Self::from_usize(x.len());
        let (_, inv) = Self::row_stats(x, eps);
        let mut mg = Self::zero();
        let mut mgy = Self::zero();
        for (&gi, &yi) in g.iter().zip(y) {
            mg = mg + gi;
            mgy = mgy + gi * yi;
        }
        mg = mg / nn;
        mgy = mgy / nn;
        for ((o, &gi), &yi) in d.iter_mut().zip(g).zip(y) {
            *o = (gi - mg - yi * mgy) * inv;
        }
    }
}

impl NormFloat for f64 {}

impl NormFloat for f32 {
    fn normalize_row(s: &[f32], d: &mut [f32], eps: f64) {
        rows_f32::normalize_row(s, d, eps as f32)
    }

    fn normalize_affine_row(s: &[f32], d: &mut [f32], g: &[f32], b: &[f32], eps: f64) {
        rows_f32::normalize_affine_row(s, d, g, b, eps as f32)
    }

    fn normalize_bwd_row(x: &[f32], y: &[f32], g: &[f32], d: &mut [f32], eps: f64) {
        rows_f32::normalize_bwd_row(x, y, g, d, eps as f32)
    }
}

/// The f32 rows with every sum over sixteen running lanes, added 0..16 at the end, then the
/// tail (a row's width not a multiple of 16): loops the compiler vectorises, where one running
/// sum was a chain of dependent additions (at d 256 the forward kernel took 4× PyTorch's
/// time). The order is fixed by the source, no fused multiply-add: every clone gives the same
/// bits. Not the bits of the one-sum loops before 2026-11-25 (a few ulp of the statistics).
// multiversion's dispatcher calls a clone only after detecting its features at run time; the
// unsafe it generates is that call.
#[allow(unsafe_code)]
mod rows_f32 {
    const LANES: usize = 16;

    #[inline(always)]
    fn sum(x: &[f32], f: impl Fn(usize, f32) -> f32) -> f32 {
        let mut acc = [0f32; LANES];
        let mut chunks = x.chunks_exact(LANES);
        let mut at = 0;
        for c in &mut chunks {
            for j in 0..LANES {
                acc[j] += f(at + j, c[j]);
            }
            at += LANES;
        }
        let mut s = acc.iter().fold(0f32, |s, &v| s + v);
        for (j, &v) in chunks.remainder().iter().enumerate() {
            s += f(at + j, v);
        }
        s
    }

    #[inline(always)]
    fn stats(s: &[f32], eps: f32) -> (f32, f32) {
        let n = s.len() as f32;
        let mean = sum(s, |_, v| v) / n;
        let var = sum(s, |_, v| (v - mean) * (v - mean)) / n;
        (mean, (var + eps).sqrt().recip())
    }

    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(super) fn normalize_row(s: &[f32], d: &mut [f32], eps: f32) {
        let (mean, inv) = stats(s, eps);
        for (o, &i) in d.iter_mut().zip(s) {
            *o = (i - mean) * inv;
        }
    }

    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(super) fn normalize_affine_row(s: &[f32], d: &mut [f32], g: &[f32], b: &[f32], eps: f32) {
        let (mean, inv) = stats(s, eps);
        for (((o, &i), &g), &b) in d.iter_mut().zip(s).zip(g).zip(b) {
            *o = (i - mean) * inv * g + b;
        }
    }

    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(super) fn normalize_bwd_row(x: &[f32], y: &[f32], g: &[f32], d: &mut [f32], eps: f32) {
        let n = x.len() as f32;
        let (_, inv) = stats(x, eps);
        let mg = sum(g, |_, v| v) / n;
        let mgy = sum(g, |j, v| v * y[j]) / n;
        for ((o, &gi), &yi) in d.iter_mut().zip(g).zip(y) {
            *o = (gi - mg - yi * mgy) * inv;
        }
    }
}

fn normalize_rows<T: NormFloat>(src: &[T], dst: &mut [T], n: usize, eps: f64) {
    src.par_chunks(n)
        .zip(dst.par_chunks_mut(n))
        .for_each(|(s, d)| T::normalize_row(s, d, eps));
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
                CpuStorage::F32(written_by(s.len(), |d| normalize_rows(s, d, n, self.eps)))
            }
            CpuStorage::F64(s) => {
                let s = contiguous_slice(s, layout, "layer norm")?;
                CpuStorage::F64(written_by(s.len(), |d| normalize_rows(s, d, n, self.eps)))
            }
            _ => candle_core::bail!("layer norm: unsupported dtype {:?}", storage.dtype()),
        };
        Ok((storage, layout.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        storage: &candle_core::CudaStorage,
        layout: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        let y = super::cuda_rows::normalize(storage, layout, self.eps)?;
        Ok((y, layout.shape().clone()))
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

fn normalize_bwd_rows<T: NormFloat>(x: &[T], y: &[T], g: &[T], dst: &mut [T], n: usize, eps: f64) {
    dst.par_chunks_mut(n)
        .zip(x.par_chunks(n).zip(y.par_chunks(n).zip(g.par_chunks(n))))
        .for_each(|(d, (x, (y, g)))| T::normalize_bwd_row(x, y, g, d, eps));
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
                CpuStorage::F32(written_by(x.len(), |d| {
                    normalize_bwd_rows(x, y, g, d, n, self.eps)
                }))
            }
            (CpuStorage::F64(x), CpuStorage::F64(y), CpuStorage::F64(g)) => {
                let x = contiguous_slice(x, l1, "layer norm bwd")?;
                let y = contiguous_slice(y, l2, "layer norm bwd")?;
                let g = contiguous_slice(g, l3, "layer norm bwd")?;
                CpuStorage::F64(written_by(x.len(), |d| {
                    normalize_bwd_rows(x, y, g, d, n, self.eps)
                }))
            }
            _ => candle_core::bail!("layer norm backward: unsupported dtypes"),
        };
        Ok((storage, l1.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
        s3: &candle_core::CudaStorage,
        l3: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        let dx = super::cuda_rows::normalize_backward((s1, l1), (s2, l2), (s3, l3), self.eps)?;
        Ok((dx, l1.shape().clone()))
    }
}

/// Normalises the last dimension to zero mean and unit variance, with a backward pass.
pub fn normalize_last_dim(x: &Tensor, eps: f64) -> Result<Tensor> {
    if fused_rows(x) {
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
        if super::deeplift::active() {
            let xhat = normalize_last_dim(x, self.eps)?;
            return super::deeplift::normalize_last_dim(x, &xhat, self.eps)?
                .broadcast_mul(&self.weight)?
                .broadcast_add(&self.bias);
        }
        let tracked = x.track_op() || self.weight.track_op() || self.bias.track_op();
        if fused_rows(x) && x.dtype() == DType::F32 && !tracked {
            // Nothing to differentiate (a predictor's frozen model): x̂ need not be kept for a
            // backward pass, so normalise and scale in one pass over each row.
            return x.contiguous()?.apply_op3_no_bwd(
                &self.weight.contiguous()?,
                &self.bias.contiguous()?,
                &NormalizeAffine { eps: self.eps },
            );
        }
        let xhat = normalize_last_dim(x, self.eps)?;
        if fused_rows(x) && x.dtype() == DType::F32 {
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

/// x̂ ⊙ γ + β in one pass (no backward): the same numbers as [`Normalize`] then [`ScaleShift`].
struct NormalizeAffine {
    eps: f64,
}

impl candle_core::CustomOp3 for NormalizeAffine {
    fn name(&self) -> &'static str {
        "luminome-layer-norm"
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
        let what = "layer norm";
        let (CpuStorage::F32(x), CpuStorage::F32(g), CpuStorage::F32(b)) = (s1, s2, s3) else {
            candle_core::bail!("{what}: f32 only")
        };
        let x = contiguous_slice(x, l1, what)?;
        let g = contiguous_slice(g, l2, what)?;
        let b = contiguous_slice(b, l3, what)?;
        let n = l1.dims().last().copied().unwrap_or(1);
        if g.len() != n || b.len() != n {
            candle_core::bail!("{what}: rows of {n}, γ of {}, β of {}", g.len(), b.len())
        }
        let eps = self.eps;
        let out = written_by(x.len(), |d: &mut [f32]| {
            x.par_chunks(n.max(1))
                .zip(d.par_chunks_mut(n.max(1)))
                .for_each(|(s, d)| f32::normalize_affine_row(s, d, g, b, eps))
        });
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
        s3: &candle_core::CudaStorage,
        l3: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        let y = super::cuda_rows::normalize_affine((s1, l1), (s2, l2), (s3, l3), self.eps)?;
        Ok((y, l1.shape().clone()))
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
        let out = written_by(x.len(), |out: &mut [f32]| {
            out.par_chunks_mut(c * 64)
                .zip(x.par_chunks(c * 64))
                .for_each(|(o, x)| {
                    for (orow, xrow) in o.chunks_mut(c).zip(x.chunks(c)) {
                        for (((o, &x), &g), &b) in orow.iter_mut().zip(xrow).zip(g).zip(b) {
                            *o = x * g + b;
                        }
                    }
                })
        });
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
        s3: &candle_core::CudaStorage,
        l3: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        let y = super::cuda_elementwise::scale_shift((s1, l1), (s2, l2), (s3, l3))?;
        Ok((y, l1.shape().clone()))
    }

    fn bwd(
        &self,
        x: &Tensor,
        gamma: &Tensor,
        beta: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        use crate::nn::linear::sum_rows;
        // A frozen model's γ and β (plain tensors) get no gradient (see linear.rs).
        let dx = x
            .track_op()
            .then(|| grad.broadcast_mul(gamma))
            .transpose()?;
        let dgamma = gamma
            .track_op()
            .then(|| sum_rows(&(grad * x)?))
            .transpose()?;
        let dbeta = beta.track_op().then(|| sum_rows(grad)).transpose()?;
        Ok((dx, dgamma, dbeta))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::gradcheck::max_grad_error;
    use crate::nn::kernels::test_support::{randn, weights};

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

    /// The f32 kernels against the f64 layer norm on the same inputs, value
    /// and input gradient, at widths around the lanes; and the one-pass inference op against
    /// the two ops training uses, bit for bit.
    #[test]
    fn f32_layer_norm_agrees_with_f64_and_the_inference_op_with_the_training_ops() {
        use crate::nn::kernels::test_support::f64_values;
        use candle_core::Var;
        for c in [5, 16, 33, 128, 256] {
            let f32s = |t: Tensor| t.to_dtype(DType::F32).unwrap();
            // Rows with an offset and a spread, as activations have.
            let x = f32s(((randn(&[7, c], 1) * 3.0).unwrap() + 2.0).unwrap());
            let w = f32s(weights(&[7, c]));
            let grad_of = |x: &Tensor, w: &Tensor| {
                let v = Var::from_tensor(x).unwrap();
                let y = normalize_last_dim(v.as_tensor(), 1e-5).unwrap();
                let g = (&y * w).unwrap().sum_all().unwrap().backward().unwrap();
                (f64_values(&y), f64_values(g.get(v.as_tensor()).unwrap()))
            };
            let (y32, g32) = grad_of(&x, &w);
            let x64 = x.to_dtype(DType::F64).unwrap();
            let (y64, g64) = grad_of(&x64, &w.to_dtype(DType::F64).unwrap());
            let worst = |a: &[f64], b: &[f64]| {
                a.iter()
                    .zip(b)
                    .map(|(a, b)| (a - b).abs() / 1f64.max(b.abs()))
                    .fold(0.0, f64::max)
            };
            assert!(
                worst(&y32, &y64) < 1e-6,
                "width {c}: x̂ {}",
                worst(&y32, &y64)
            );
            assert!(
                worst(&g32, &g64) < 1e-5,
                "width {c}: dx {}",
                worst(&g32, &g64)
            );

            let gamma = f32s(randn(&[c], 2));
            let beta = f32s(randn(&[c], 3));
            let plain = LayerNorm {
                weight: gamma.clone(),
                bias: beta.clone(),
                eps: 1e-5,
            };
            let trained = LayerNorm {
                weight: Var::from_tensor(&gamma).unwrap().as_tensor().clone(),
                bias: beta,
                eps: 1e-5,
            };
            let bits = |t: &Tensor| -> Vec<u32> {
                let v: Vec<f32> = t.flatten_all().unwrap().to_vec1().unwrap();
                v.iter().map(|v| v.to_bits()).collect()
            };
            let one_pass = plain.forward(&x).unwrap();
            let two_ops = trained.forward(&x).unwrap();
            assert!(two_ops.track_op() && !one_pass.track_op());
            assert_eq!(bits(&one_pass), bits(&two_ops), "width {c}");
        }
    }
}
