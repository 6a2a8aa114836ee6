//! Softmax over the last dimension with a backward pass: a fused CPU kernel (forward and backward
//! each one pass over the rows, in parallel) and the same maths from autograd-capable candle
//! primitives on other devices. candle-nn's fast softmax has no backward: training through it
//! silently stops the gradient.

use candle_core::{backend::BackendStorage, CpuStorage, Layout, Result, Shape, Tensor, D};
use rayon::prelude::*;

use super::kernels::{contiguous_slice, cpu_fused, num_traits_float};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::gradcheck::max_grad_error;
    use crate::nn::kernels::test_support::{randn, weights};
    use candle_core::DType;

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
}
