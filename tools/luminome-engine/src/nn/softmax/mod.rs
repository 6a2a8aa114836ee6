//! Softmax over the last dimension with a backward pass: a fused CPU kernel (forward and backward
//! each one pass over the rows, in parallel) and the same maths from autograd-capable candle
//! primitives on other devices. candle-nn's fast softmax has no backward: training through it
//! silently stops the gradient.

use candle_core::{backend::BackendStorage, CpuStorage, Layout, Result, Shape, Tensor, D};
use rayon::prelude::*;

use super::kernels::{contiguous_slice, fused_rows, num_traits_float, written_by};

struct SoftmaxLastDim;

/// The row kernels per element type: f32 (models) vectorised, f64 (gradient checks) plain.
trait SoftmaxFloat: num_traits_float::Float {
    /// The softmax of the row in `d`, in place.
    fn softmax_row(d: &mut [Self]);
    /// The softmax of `d + bias`, in place (the sum rounded first, as a separate add would).
    fn softmax_row_biased(d: &mut [Self], bias: &[Self]) {
        for (o, &b) in d.iter_mut().zip(bias) {
            *o = *o + b;
        }
        Self::softmax_row(d)
    }
    /// `d = y ⊙ (g − Σ_j g_j y_j)`: the softmax's input gradient for one row.
    fn softmax_bwd_row(y: &[Self], g: &[Self], d: &mut [Self]);
}

impl SoftmaxFloat for f64 {
    fn softmax_row(d: &mut [f64]) {
        let max = d.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut sum = 0.0;
        for o in d.iter_mut() {
            *o = (*o - max).exp();
            sum += *o;
        }
        let inv = sum.recip();
        for o in d.iter_mut() {
            *o *= inv;
        }
    }

    fn softmax_bwd_row(y: &[f64], g: &[f64], d: &mut [f64]) {
        let dot: f64 = y.iter().zip(g).map(|(a, b)| a * b).sum();
        for ((o, &a), &b) in d.iter_mut().zip(y).zip(g) {
            *o = a * (b - dot);
        }
    }
}

impl SoftmaxFloat for f32 {
    fn softmax_row(d: &mut [f32]) {
        rows_f32::softmax_row(d)
    }

    fn softmax_row_biased(d: &mut [f32], bias: &[f32]) {
        rows_f32::softmax_row_biased(d, bias)
    }

    fn softmax_bwd_row(y: &[f32], g: &[f32], d: &mut [f32]) {
        rows_f32::softmax_bwd_row(y, g, d)
    }
}

/// The f32 row kernels (their module says how they compute and why).
// multiversion generates unsafe calls to its clones (see the module).
#[allow(unsafe_code)]
pub(crate) mod rows_f32;

/// The softmax of every row of `n` of `src`, into a new buffer (a copy, then in place: no
/// zero-filled buffer to overwrite).
fn softmax_rows<T: SoftmaxFloat>(src: &[T], n: usize) -> Vec<T> {
    let mut d = src.to_vec();
    d.par_chunks_mut(n.max(1)).for_each(T::softmax_row);
    d
}

/// Softmax of `src + bias`, rows of `n`; each block of `rows_per_bias` consecutive rows adds
/// the same bias row (`bias`: one row of `n` per block).
fn biased_softmax_rows<T: SoftmaxFloat>(
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
            d.copy_from_slice(s);
            T::softmax_row_biased(d, b);
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

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        storage: &candle_core::CudaStorage,
        layout: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        let y = super::cuda_rows::softmax((storage, layout), None)?;
        Ok((y, layout.shape().clone()))
    }
}

struct SoftmaxBackward;

fn softmax_bwd_rows<T: SoftmaxFloat>(y: &[T], g: &[T], dst: &mut [T], n: usize) {
    dst.par_chunks_mut(n)
        .zip(y.par_chunks(n).zip(g.par_chunks(n)))
        .for_each(|(d, (y, g))| T::softmax_bwd_row(y, g, d));
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

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        let dx = super::cuda_rows::softmax_backward((s1, l1), (s2, l2))?;
        Ok((dx, l1.shape().clone()))
    }
}

/// softmax(x + bias) over the last dimension; the bias is a constant (no gradient).
struct BiasedSoftmaxLastDim;

/// How many score rows (`scores`' layout) share one bias row (`bias`' layout): the bias tiles
/// the scores when its rows divide theirs.
fn score_rows_per_bias_row(scores: &Layout, bias: &Layout) -> Result<usize> {
    let n = scores.dims().last().copied().unwrap_or(1).max(1);
    let blocks = bias.shape().elem_count() / n;
    let rows = scores.shape().elem_count() / n;
    if blocks == 0 || !rows.is_multiple_of(blocks) {
        candle_core::bail!(
            "biased softmax: bias {:?} does not tile scores {:?}",
            bias.dims(),
            scores.dims()
        );
    }
    Ok(rows / blocks)
}

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
        let per = score_rows_per_bias_row(l1, l2)?;
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

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        let per = score_rows_per_bias_row(l1, l2)?;
        let y = super::cuda_rows::softmax((s1, l1), Some(((s2, l2), per)))?;
        Ok((y, l1.shape().clone()))
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
    if fused_rows(x) && bias.dtype() == x.dtype() && tiles {
        x.contiguous()?
            .apply_op2(&bias.detach().contiguous()?, BiasedSoftmaxLastDim)
    } else {
        softmax_last_dim(&x.broadcast_add(bias)?)
    }
}

/// Softmax over the last dimension, with a backward pass.
pub fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    if fused_rows(x) {
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

    /// The f32 row kernel's numbers are fixed by its definition, whatever loops compute them:
    /// e = exp_f32_fma(x − max) (0 below −87, NaN kept), lane j of eight sums elements j, j + 8, …
    /// in order, the lanes are added 0..8, then the tail, then every e times 1/sum. Written
    /// out one element at a time here and compared bit for bit, at lengths around the
    /// kernel's blocks of 8, 16 and 32, with padded keys at −1e9.
    #[test]
    fn the_f32_row_kernel_computes_its_definition_bit_for_bit() {
        use crate::nn::kernels::num_traits_float::exp_f32_fma;
        fn definition(x: &[f32]) -> Vec<f32> {
            let max = x.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            let e: Vec<f32> = x
                .iter()
                .map(|&v| {
                    let z = v - max;
                    if z.is_nan() {
                        z
                    } else if z < -87.0 {
                        0.0
                    } else {
                        exp_f32_fma(z)
                    }
                })
                .collect();
            let full = e.len() / 8 * 8;
            let mut lanes = [0f32; 8];
            for (i, &v) in e[..full].iter().enumerate() {
                lanes[i % 8] += v;
            }
            let mut sum = lanes.iter().fold(0f32, |s, &v| s + v);
            for &v in &e[full..] {
                sum += v;
            }
            let inv = 1.0 / sum;
            e.iter().map(|&v| v * inv).collect()
        }
        let values = randn(&[600], 5).to_dtype(DType::F32).unwrap();
        let values: Vec<f32> = values.to_vec1().unwrap();
        for n in [1, 5, 8, 15, 16, 17, 31, 32, 33, 47, 72, 100, 512, 513, 600] {
            let mut row: Vec<f32> = values[..n].iter().map(|v| v * 6.0).collect();
            if n > 4 {
                row[n - 1] = -1e9;
                row[n / 2] -= 1e9;
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            // With a padding bias: the sums rounded first, then the same row.
            let bias: Vec<f32> = (0..n)
                .map(|i| if i % 5 == 3 { -1e9 } else { 0.0 })
                .collect();
            let biased: Vec<f32> = row.iter().zip(&bias).map(|(a, b)| a + b).collect();
            let mut got = row.clone();
            rows_f32::softmax_row_biased(&mut got, &bias);
            assert_eq!(bits(&got), bits(&definition(&biased)), "length {n}, biased");
            let want = definition(&row);
            rows_f32::softmax_row(&mut row);
            assert_eq!(bits(&row), bits(&want), "length {n}");
        }
    }

    /// The f32 rows (eight lanes, the engine's exp) against the f64 softmax, value and input
    /// gradient, for row lengths around the lane count and the model's (72, 513): within a
    /// few f32 ulp of probabilities that sum to 1.
    #[test]
    fn f32_softmax_rows_agree_with_f64_to_a_few_ulp() {
        for n in [1usize, 3, 8, 9, 17, 72, 513] {
            let x64 = (randn(&[6, n], n as u64) * 4.0).unwrap();
            let g64 = randn(&[6, n], 7);
            let (x32, g32) = (
                x64.to_dtype(DType::F32).unwrap(),
                g64.to_dtype(DType::F32).unwrap(),
            );
            let y64 = softmax_last_dim(
                &x64.to_dtype(DType::F32)
                    .unwrap()
                    .to_dtype(DType::F64)
                    .unwrap(),
            )
            .unwrap();
            let y32 = softmax_last_dim(&x32).unwrap();
            let rows = crate::nn::kernels::test_support::f64_values;
            let worst = rows(&y32)
                .iter()
                .zip(rows(&y64))
                .map(|(a, b)| (a - b).abs())
                .fold(0f64, f64::max);
            assert!(worst < 4e-7, "n {n}: softmax off by {worst}");
            let d = |y: &Tensor, g: &Tensor| -> Vec<f64> {
                rows(&y.apply_op2_no_bwd(g, &SoftmaxBackward).unwrap())
            };
            let worst = d(&y32, &g32)
                .iter()
                .zip(d(&y64, &g32.to_dtype(DType::F64).unwrap()))
                .map(|(a, b)| (a - b).abs())
                .fold(0f64, f64::max);
            assert!(worst < 2e-6, "n {n}: softmax backward off by {worst}");
        }
    }

    /// A NaN score makes its row NaN (it is not clamped into a probability); other rows and
    /// a row of padding-biased scores stay finite, the padded keys exactly 0.
    #[test]
    fn a_nan_score_makes_its_row_nan_and_padding_gets_exactly_zero() {
        let x = Tensor::new(
            &[
                [0.5f32, f32::NAN, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0],
                [0.5, 1.0, -1e9, 2.0, 0.0, -1e9, 0.0, 0.0, 1.0],
            ],
            &candle_core::Device::Cpu,
        )
        .unwrap();
        let p: Vec<Vec<f32>> = softmax_last_dim(&x).unwrap().to_vec2().unwrap();
        assert!(p[0].iter().all(|v| v.is_nan()), "{:?}", p[0]);
        assert!(p[1].iter().all(|v| v.is_finite()));
        assert_eq!((p[1][2], p[1][5]), (0.0, 0.0));
        assert!((p[1].iter().sum::<f32>() - 1.0).abs() < 1e-6);
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
