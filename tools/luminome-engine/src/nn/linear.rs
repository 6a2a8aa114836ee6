//! A linear layer y = x Wᵀ + b whose bias add is one fused op on the CPU, with a backward that
//! sums the gradient over rows in a single contiguous pass. candle's broadcast add reduces the
//! bias gradient element by element with index arithmetic, which was one of the larger costs of
//! a training step. Parameter names are candle-nn's (`weight` [out, in], `bias` [out]).

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
        let y = x.reshape((rows, in_dim))?.matmul(&self.weight.t()?)?;
        let y = match &self.bias {
            Some(b) => add_bias(&y, b)?,
            None => y,
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
        let c = b.len();
        let mut out = x.to_vec();
        out.par_chunks_mut(c * 64).for_each(|block| {
            for row in block.chunks_mut(c) {
                for (o, &bi) in row.iter_mut().zip(b) {
                    *o += bi;
                }
            }
        });
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        _b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((Some(grad.clone()), Some(sum_rows(grad)?)))
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
