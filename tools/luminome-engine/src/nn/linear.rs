//! A linear layer y = x Wᵀ + b: on the CPU (f32) the product and the bias add are one op
//! (`AffineMatMul`) with its own backward, which sums the bias gradient over rows in a single
//! contiguous pass (candle's broadcast add reduced it element by element with index arithmetic,
//! once one of the larger costs of a training step). Parameter names are candle-nn's (`weight`
//! [out, in], `bias` [out]).

use candle_core::{backend::BackendStorage, CpuStorage, Layout, Result, Shape, Tensor};
use candle_nn::VarBuilder;
use rayon::prelude::*;

#[derive(Debug, Clone)]
pub struct Linear {
    weight: Tensor,
    bias: Option<Tensor>,
}

impl Linear {
    pub fn new(in_dim: usize, out_dim: usize, vb: VarBuilder) -> Result<Self> {
        let bound = 1.0 / (in_dim as f64).sqrt();
        let weight = vb.get_with_hints(
            (out_dim, in_dim),
            "weight",
            candle_nn::Init::Uniform {
                lo: -bound,
                up: bound,
            },
        )?;
        let bias = vb.get_with_hints(out_dim, "bias", candle_nn::Init::Const(0.0))?;
        Ok(Self {
            weight,
            bias: Some(bias),
        })
    }

    /// y = x Wᵀ, no bias (parameter `weight` only).
    pub fn no_bias(in_dim: usize, out_dim: usize, vb: VarBuilder) -> Result<Self> {
        let bound = 1.0 / (in_dim as f64).sqrt();
        let weight = vb.get_with_hints(
            (out_dim, in_dim),
            "weight",
            candle_nn::Init::Uniform {
                lo: -bound,
                up: bound,
            },
        )?;
        Ok(Self { weight, bias: None })
    }

    /// From tensors already loaded (a published checkpoint's): `weight` `[out, in]`, `bias` `[out]`.
    pub fn from_parts(weight: Tensor, bias: Option<Tensor>) -> Self {
        Self { weight, bias }
    }

    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }

    /// `x`: `[..., in]` → `[..., out]`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let dims = x.dims().to_vec();
        let in_dim = *dims.last().unwrap_or(&1);
        let rows = x.elem_count() / in_dim.max(1);
        let x2 = x.reshape((rows, in_dim))?;
        let fused = super::kernels::cpu_fast_path(x.device())
            && x.dtype() == candle_core::DType::F32
            && self.weight.dtype() == x.dtype()
            && self.bias.as_ref().is_none_or(|b| b.dtype() == x.dtype());
        let y = match (&self.bias, fused) {
            (Some(b), true) => x2.apply_op3(&self.weight, &b.contiguous()?, AffineMatMul)?,
            (None, true) => x2.apply_op2(&self.weight, AffineMatMul)?,
            (Some(b), false) => {
                add_bias(&super::matmul::device_matmul(&x2, &self.weight.t()?)?, b)?
            }
            (None, false) => super::matmul::device_matmul(&x2, &self.weight.t()?)?,
        };
        let mut out = dims;
        let last = out.len() - 1;
        out[last] = self.weight.dim(0)?;
        y.reshape(out)
    }
}

/// `x` `[R, C]` + `b` `[C]` broadcast over rows, differentiable in both.
pub fn add_bias(x: &Tensor, b: &Tensor) -> Result<Tensor> {
    if super::kernels::cpu_fast_path(x.device())
        && x.dtype() == candle_core::DType::F32
        && b.dtype() == x.dtype()
    {
        x.contiguous()?.apply_op2(&b.contiguous()?, BiasAdd)
    } else {
        x.broadcast_add(b)
    }
}

/// Sums a `[R, C]` tensor over its rows → `[C]` (no gradient).
pub fn sum_rows(x: &Tensor) -> Result<Tensor> {
    if super::kernels::cpu_fast_path(x.device()) && x.dtype() == candle_core::DType::F32 {
        x.contiguous()?.apply_op1_no_bwd(&SumRows)
    } else {
        x.sum(0)
    }
}

struct BiasAdd;

/// Adds `b` to every row of `y` (rows of `b.len()`), blocks of rows in parallel: the bias sum of
/// [`BiasAdd`] and [`AffineMatMul`] alike.
fn add_bias_rows(y: &mut [f32], b: &[f32]) {
    let c = b.len().max(1);
    y.par_chunks_mut(c * 64).for_each(|block| {
        for row in block.chunks_mut(c) {
            for (o, &bi) in row.iter_mut().zip(b) {
                *o += bi;
            }
        }
    });
}

impl candle_core::CustomOp2 for BiasAdd {
    fn name(&self) -> &'static str {
        "luminome-bias-add"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(x), CpuStorage::F32(b)) = (s1, s2) else {
            candle_core::bail!("bias add: f32 only, got {:?}", s1.dtype())
        };
        let x = match l1.contiguous_offsets() {
            Some((a, e)) => &x[a..e],
            None => candle_core::bail!("bias add: input has to be contiguous"),
        };
        let b = match l2.contiguous_offsets() {
            Some((a, e)) => &b[a..e],
            None => candle_core::bail!("bias add: bias has to be contiguous"),
        };
        let mut out = x.to_vec();
        add_bias_rows(&mut out, b);
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }

    fn bwd(
        &self,
        x: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let gx = x.track_op().then(|| grad.clone());
        let gb = b.track_op().then(|| sum_rows(grad)).transpose()?;
        Ok((gx, gb))
    }
}

/// `x Wᵀ (+ b)` for `x` `[R, in]`, `W` `[out, in]`, `b` `[out]`: one op in the graph instead of
/// candle's matmul (whose output is zero-filled, then written by gemm), a transposed view and
/// the bias add (a copy of the product plus the sum). Same gemm, strides and bias sum as those,
/// so the same bits; the backward computes what candle's would, without its zero buffers:
/// ∂x = g·W, ∂W = (xᵀ·g)ᵀ (the product as candle forms it, then transposed), ∂b = Σ_rows g.
struct AffineMatMul;

impl AffineMatMul {
    fn forward(
        x: &CpuStorage,
        lx: &Layout,
        w: &CpuStorage,
        lw: &Layout,
        b: Option<(&CpuStorage, &Layout)>,
    ) -> Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(xs), CpuStorage::F32(ws)) = (x, w) else {
            candle_core::bail!("linear: f32 only")
        };
        let ((rows, k), (out, k2)) = (lx.shape().dims2()?, lw.shape().dims2()?);
        if k != k2 {
            candle_core::bail!("linear: input width {k}, weight {out} × {k2}")
        }
        let mut y = super::matmul::products(
            xs,
            super::matmul::Operand::matrix(lx, false)?,
            ws,
            super::matmul::Operand::matrix(lw, true)?,
            1,
            (rows, k, out),
        );
        if let Some((b, lb)) = b {
            let CpuStorage::F32(bs) = b else {
                candle_core::bail!("linear: f32 only")
            };
            let b = super::kernels::contiguous_slice(bs, lb, "linear bias")?;
            if b.len() != out {
                candle_core::bail!("linear: bias of {} for {out} outputs", b.len())
            }
            add_bias_rows(&mut y, b);
        }
        Ok((CpuStorage::F32(y), Shape::from_dims(&[rows, out])))
    }

    /// ∂x and ∂W, each only where that input is part of the graph: a frozen model's weights
    /// (plain tensors, as the predictors load them) get no ∂W — a third of a backward pass's
    /// products when only the input gradient is wanted (saliency, integrated gradients) — and
    /// a data input gets no ∂x. What is computed is computed as before.
    fn backward(x: &Tensor, w: &Tensor, grad: &Tensor) -> Result<(Option<Tensor>, Option<Tensor>)> {
        use super::matmul::batched_matmul;
        let g = grad.unsqueeze(0)?;
        let gx = if x.track_op() {
            Some(batched_matmul(&g, &w.unsqueeze(0)?)?.squeeze(0)?)
        } else {
            None
        };
        let gw = if w.track_op() {
            let gw = batched_matmul(&x.t()?.unsqueeze(0)?, &g)?;
            Some(gw.squeeze(0)?.t()?.contiguous()?)
        } else {
            None
        };
        Ok((gx, gw))
    }
}

impl candle_core::CustomOp2 for AffineMatMul {
    fn name(&self) -> &'static str {
        "luminome-linear"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        Self::forward(s1, l1, s2, l2, None)
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Self::backward(x, w, grad)
    }
}

impl candle_core::CustomOp3 for AffineMatMul {
    fn name(&self) -> &'static str {
        "luminome-linear"
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
        Self::forward(s1, l1, s2, l2, Some((s3, l3)))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (gx, gw) = Self::backward(x, w, grad)?;
        let gb = b.track_op().then(|| sum_rows(grad)).transpose()?;
        Ok((gx, gw, gb))
    }
}

struct SumRows;

impl candle_core::CustomOp1 for SumRows {
    fn name(&self) -> &'static str {
        "luminome-sum-rows"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(x) = s else {
            candle_core::bail!("sum rows: f32 only")
        };
        let x = match l.contiguous_offsets() {
            Some((a, e)) => &x[a..e],
            None => candle_core::bail!("sum rows: input has to be contiguous"),
        };
        let c = *l.dims().last().unwrap_or(&1);
        let rows = x.len() / c.max(1);
        // Blocks of rows summed in parallel, then the partial sums added.
        let block = rows.div_ceil(rayon::current_num_threads().max(1)).max(64);
        let partial: Vec<Vec<f32>> = x
            .par_chunks(block * c)
            .map(|chunk| {
                let mut acc = vec![0f32; c];
                for row in chunk.chunks(c) {
                    for (a, &v) in acc.iter_mut().zip(row) {
                        *a += v;
                    }
                }
                acc
            })
            .collect();
        let mut out = vec![0f32; c];
        for p in partial {
            for (o, v) in out.iter_mut().zip(p) {
                *o += v;
            }
        }
        Ok((CpuStorage::F32(out), Shape::from_dims(&[c])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device, Var};

    /// The one-op linear layer against the graph it replaced (matmul with the transposed
    /// weight, then the bias add): every bit of the output and of the gradients of x, W, b.
    #[test]
    fn fused_linear_is_the_matmul_and_bias_graph_bit_for_bit() {
        use crate::nn::kernels::test_support::{randn, value_and_grad_bits as bits};
        let f32s = |t: Tensor| t.to_dtype(DType::F32).unwrap();
        for (rows, d_in, d_out, biased) in
            [(37, 5, 7, true), (2304, 128, 384, true), (9, 64, 3, false)]
        {
            let x = Var::from_tensor(&f32s(randn(&[rows, d_in], 1))).unwrap();
            let w = Var::from_tensor(&f32s(randn(&[d_out, d_in], 2))).unwrap();
            let b = Var::from_tensor(&f32s(randn(&[d_out], 3))).unwrap();
            let wt = f32s(randn(&[rows, d_out], 4));
            let layer = Linear {
                weight: w.as_tensor().clone(),
                bias: biased.then(|| b.as_tensor().clone()),
            };
            let fused = layer.forward(x.as_tensor()).unwrap();
            let product = x.as_tensor().matmul(&w.as_tensor().t().unwrap()).unwrap();
            let graph = if biased {
                add_bias(&product, b.as_tensor()).unwrap()
            } else {
                product
            };
            let vars: Vec<&Var> = if biased {
                vec![&x, &w, &b]
            } else {
                vec![&x, &w]
            };
            assert_eq!(
                bits(&fused, &wt, &vars),
                bits(&graph, &wt, &vars),
                "{rows}×{d_in}→{d_out}"
            );
        }
    }

    /// Weights outside the graph (a frozen model's plain tensors) get no gradient, and the
    /// input's gradient keeps every bit it has when the weights are variables.
    #[test]
    fn frozen_weights_get_no_gradient_and_the_input_the_same_one() {
        use crate::nn::kernels::test_support::{randn, value_and_grad_bits as bits};
        let f32s = |t: Tensor| t.to_dtype(DType::F32).unwrap();
        let x = Var::from_tensor(&f32s(randn(&[300, 48], 1))).unwrap();
        let w = f32s(randn(&[40, 48], 2));
        let b = f32s(randn(&[40], 3));
        let wt = f32s(randn(&[300, 40], 4));
        let (wv, bv) = (Var::from_tensor(&w).unwrap(), Var::from_tensor(&b).unwrap());
        let trainable = Linear {
            weight: wv.as_tensor().clone(),
            bias: Some(bv.as_tensor().clone()),
        };
        let frozen = Linear {
            weight: w.clone(),
            bias: Some(b.clone()),
        };
        let y = frozen.forward(x.as_tensor()).unwrap();
        assert_eq!(
            bits(&y, &wt, &[&x]),
            bits(&trainable.forward(x.as_tensor()).unwrap(), &wt, &[&x])
        );
        let grads = (&y * &wt).unwrap().sum_all().unwrap().backward().unwrap();
        assert!(grads.get(&w).is_none() && grads.get(&b).is_none());
        // A data input (not in the graph) gets none either; the weights still get theirs.
        let data = f32s(randn(&[300, 48], 5));
        let y = trainable.forward(&data).unwrap();
        let grads = (&y * &wt).unwrap().sum_all().unwrap().backward().unwrap();
        assert!(grads.get(&data).is_none());
        assert!(grads.get(wv.as_tensor()).is_some() && grads.get(bv.as_tensor()).is_some());
    }

    #[test]
    fn fused_bias_add_has_the_gradients_of_a_broadcast_add() {
        let dev = Device::Cpu;
        let x = Var::from_tensor(&Tensor::randn(0f32, 1.0, (37, 5), &dev).unwrap()).unwrap();
        let b = Var::from_tensor(&Tensor::randn(0f32, 1.0, 5, &dev).unwrap()).unwrap();
        let w = Tensor::randn(0f32, 1.0, (37, 5), &dev).unwrap();
        let fused = add_bias(x.as_tensor(), b.as_tensor()).unwrap();
        let plain = x.as_tensor().broadcast_add(b.as_tensor()).unwrap();
        let d = (&fused - &plain)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert_eq!(d, 0.0);
        let g1 = fused
            .mul(&w)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        let g2 = plain
            .mul(&w)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        for v in [&x, &b] {
            let a = g1.get(v.as_tensor()).unwrap();
            let e = g2.get(v.as_tensor()).unwrap();
            let d = (a - e)
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            assert!(d < 1e-5, "{d}");
        }
        let s: Vec<f32> = sum_rows(&w).unwrap().to_vec1().unwrap();
        let e: Vec<f32> = w.sum(0).unwrap().to_vec1().unwrap();
        assert!(s.iter().zip(&e).all(|(a, b)| (a - b).abs() < 1e-4));
        assert_eq!(w.dtype(), DType::F32);
    }
}
