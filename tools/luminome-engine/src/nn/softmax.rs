//! Softmax over the last dimension with a backward pass: a fused CPU kernel (forward and backward
//! each one pass over the rows, in parallel) and the same maths from autograd-capable candle
//! primitives on other devices. candle-nn's fast softmax has no backward: training through it
//! silently stops the gradient.

use candle_core::{backend::BackendStorage, CpuStorage, Layout, Result, Shape, Tensor, D};
use rayon::prelude::*;

use super::kernels::{contiguous_slice, cpu_fused, num_traits_float, written_by};

struct SoftmaxLastDim;

/// The softmax of the row in `d`, in place.
#[inline(always)]
fn softmax_row<T: num_traits_float::Float>(d: &mut [T]) {
    let max = d.iter().copied().fold(T::neg_infinity(), T::max);
    let mut sum = T::zero();
    for o in d.iter_mut() {
        *o = (*o - max).exp();
        sum = sum + *o;
    }
    normalize_row(d, sum);
}

#[inline(always)]
fn normalize_row<T: num_traits_float::Float>(d: &mut [T], sum: T) {
    let inv = sum.recip();
    for o in d.iter_mut() {
        *o = *o * inv;
    }
}

/// The softmax of every row of `n` of `src`, into a new buffer (a copy, then in place: no
/// zero-filled buffer to overwrite).
fn softmax_rows<T: num_traits_float::Float>(src: &[T], n: usize) -> Vec<T> {
    let mut d = src.to_vec();
    d.par_chunks_mut(n.max(1)).for_each(softmax_row);
    d
}

/// Softmax of `src + bias`, rows of `n`; each block of `rows_per_bias` consecutive rows adds
/// the same bias row (`bias`: one row of `n` per block).
fn biased_softmax_rows<T: num_traits_float::Float>(
    src: &[T],
    bias: &[T],
    dst: &mut [T],
    n: usize,
    rows_per_bias: usize,
) {
    src.par_chunks(n.max(1))
        .zip(dst.par_chunks_mut(n.max(1)))
        .enumerate()
        .for_each(|(r, (s, d))| {
            let b = &bias[(r / rows_per_bias) * n..][..n];
            // The biased scores, rounded as candle's broadcast add rounds them, then the
            // same row softmax: bit for bit what the two ops gave.
            for ((o, &s), &b) in d.iter_mut().zip(s).zip(b) {
                *o = s + b;
            }
            softmax_row(d);
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
                CpuStorage::F32(softmax_rows(s, n))
            }
            CpuStorage::F64(s) => {
                let s = contiguous_slice(s, layout, "softmax")?;
                CpuStorage::F64(softmax_rows(s, n))
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
                CpuStorage::F32(written_by(y.len(), |d| softmax_bwd_rows(y, g, d, n)))
            }
            (CpuStorage::F64(y), CpuStorage::F64(g)) => {
                let (y, g) = (
                    contiguous_slice(y, l1, "softmax bwd")?,
                    contiguous_slice(g, l2, "softmax bwd")?,
                );
                CpuStorage::F64(written_by(y.len(), |d| softmax_bwd_rows(y, g, d, n)))
            }
            _ => candle_core::bail!("softmax backward: unsupported dtypes"),
        };
        Ok((storage, l1.shape().clone()))
    }
}

/// softmax(x + bias) over the last dimension; the bias is a constant (no gradient).
struct BiasedSoftmaxLastDim;

impl candle_core::CustomOp2 for BiasedSoftmaxLastDim {
    fn name(&self) -> &'static str {
        "luminome-biased-softmax-last-dim"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let n = l1.dims().last().copied().unwrap_or(1);
        let what = "biased softmax";
        let blocks = l2.shape().elem_count() / n.max(1);
        let rows = l1.shape().elem_count() / n.max(1);
        if blocks == 0 || rows % blocks != 0 {
            candle_core::bail!(
                "{what}: bias {:?} does not tile scores {:?}",
                l2.dims(),
                l1.dims()
            );
        }
        let per = rows / blocks;
        let storage = match (s1, s2) {
            (CpuStorage::F32(x), CpuStorage::F32(b)) => {
                let (x, b) = (
                    contiguous_slice(x, l1, what)?,
                    contiguous_slice(b, l2, what)?,
                );
                CpuStorage::F32(written_by(x.len(), |d| {
                    biased_softmax_rows(x, b, d, n, per)
                }))
            }
            (CpuStorage::F64(x), CpuStorage::F64(b)) => {
                let (x, b) = (
                    contiguous_slice(x, l1, what)?,
                    contiguous_slice(b, l2, what)?,
                );
                CpuStorage::F64(written_by(x.len(), |d| {
                    biased_softmax_rows(x, b, d, n, per)
                }))
            }
            _ => candle_core::bail!("{what}: f32 or f64 only, both the same"),
        };
        Ok((storage, l1.shape().clone()))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        _bias: &Tensor,
        res: &Tensor,
        grad_res: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let grad = grad_res.contiguous()?;
        let res = res.contiguous()?;
        Ok((Some(res.apply_op2_no_bwd(&grad, &SoftmaxBackward)?), None))
    }
}

/// softmax(x + bias) over the last dimension: the attention probabilities from raw scores `x`
/// `[B, …, L]` and the padding bias `[B, 1, …, 1, L]` (a constant: no gradient flows to it).
/// On the CPU one op each way; elsewhere `broadcast_add` then [`softmax_last_dim`]. The fused
/// op saves the broadcast add and, in the backward pass, the bias's gradient that candle would
/// compute and discard (a zero-filled buffer and a sum the size of the scores).
pub fn softmax_last_dim_biased(x: &Tensor, bias: &Tensor) -> Result<Tensor> {
    let tiles = bias.rank() == x.rank()
        && bias.dims().first() == x.dims().first()
        && bias.dims().last() == x.dims().last()
        && bias.dims()[1..bias.rank().saturating_sub(1)]
            .iter()
            .all(|&d| d == 1);
    if cpu_fused(x) && bias.dtype() == x.dtype() && tiles {
        x.contiguous()?
            .apply_op2(&bias.detach().contiguous()?, BiasedSoftmaxLastDim)
    } else {
        softmax_last_dim(&x.broadcast_add(bias)?)
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
    use crate::nn::kernels::test_support::{randn, value_and_grad_bits, weights};
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

    #[test]
    fn biased_softmax_is_bit_identical_to_broadcast_add_then_softmax() {
        use candle_core::Var;
        // [B=3, H=2, L=5, L=5] scores, a [3, 1, 1, 5] padding bias (the third sample padded).
        let x = Var::from_tensor(
            &(randn(&[3, 2, 5, 5], 5) * 3.0)
                .unwrap()
                .to_dtype(DType::F32)
                .unwrap(),
        )
        .unwrap();
        let mask = Tensor::new(
            &[
                [1f32, 1., 1., 1., 1.],
                [1., 1., 1., 0., 0.],
                [1., 0., 0., 0., 0.],
            ],
            &candle_core::Device::Cpu,
        )
        .unwrap();
        let bias = crate::nn::attention_bias(&mask, DType::F32).unwrap();
        let w = weights(&[3, 2, 5, 5]).to_dtype(DType::F32).unwrap();
        let run = |f: &dyn Fn(&Tensor) -> Result<Tensor>| -> Vec<u32> {
            value_and_grad_bits(&f(x.as_tensor()).unwrap(), &w, &[&x])
        };
        let fused = run(&|x| softmax_last_dim_biased(x, &bias));
        let two = run(&|x| softmax_last_dim(&x.broadcast_add(&bias)?));
        assert_eq!(fused, two);
        // Padded keys get no probability.
        let p: Vec<f32> = softmax_last_dim_biased(x.as_tensor(), &bias)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        assert!(p[2 * 50..]
            .chunks(5)
            .all(|r| r[1..].iter().all(|&v| v == 0.0)));
    }

    #[test]
    fn biased_softmax_gradient_matches_finite_differences() {
        let mask = Tensor::new(&[[1f64, 1., 0.], [1., 1., 1.]], &candle_core::Device::Cpu).unwrap();
        let bias = crate::nn::attention_bias(&mask, DType::F64).unwrap();
        let w = weights(&[2, 2, 3, 3]);
        let err = max_grad_error(&randn(&[2, 2, 3, 3], 6), 1e-6, &|x| {
            softmax_last_dim_biased(x, &bias)?.mul(&w)?.sum_all()
        })
        .unwrap();
        assert!(err < 1e-6, "{err}");
    }
}
