//! Rotary positions in the "rotate half" convention (RoFormer as ESM and the Nucleotide
//! Transformer v2 apply it; Luminome's own encoder with `--attention rotary`): the first and
//! second halves of each head's last dimension form the pairs, rotated by the angle of their
//! position.
//!
//! On CUDA (f32) one kernel each way (`nn/cuda_elementwise.rs`): the backward is the rotation by
//! the opposite angle. Candle's primitives take four strided products, a sum, a difference and a
//! concatenation forward and about twice that backward, on the queries and keys of every layer.
//! Elsewhere the primitives run as before (CPU bits unchanged); the op's CPU code below, in f64,
//! is what its test and the device check compare against.

use candle_core::{CpuStorage, Layout, Result, Shape, Tensor, D};

use super::kernels::{cuda_fused, f64_elements, f64_to_dtype_of};

/// `x` `[…, L, 2h]` rotated by position: y₁ = x₁ cos − x₂ sin, y₂ = x₂ cos + x₁ sin, with
/// `cos` and `sin` `[L, h]` (row p: the angles of position p).
pub fn rotate_half(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    if cuda_fused(x) {
        let op = RotateHalf { sign: 1.0 };
        x.contiguous()?
            .apply_op3(&cos.contiguous()?, &sin.contiguous()?, op)
    } else {
        rotate_half_primitive(x, cos, sin)
    }
}

/// The same rotation from autograd-capable primitives (the CPU's path, bit for bit as before).
pub fn rotate_half_primitive(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    let half = x.dim(D::Minus1)? / 2;
    let x1 = x.narrow(D::Minus1, 0, half)?;
    let x2 = x.narrow(D::Minus1, half, half)?;
    let r1 = (x1.broadcast_mul(cos)? - x2.broadcast_mul(sin)?)?;
    let r2 = (x2.broadcast_mul(cos)? + x1.broadcast_mul(sin)?)?;
    Tensor::cat(&[r1, r2], D::Minus1)
}

/// The rotation by `sign` × the tables' angles (−1: the backward, rotating back).
struct RotateHalf {
    sign: f64,
}

impl candle_core::CustomOp3 for RotateHalf {
    fn name(&self) -> &'static str {
        "luminome-rotate-half"
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
        let what = "rotary positions";
        let x = f64_elements(s1, l1, what)?;
        let (cos, sin) = (f64_elements(s2, l2, what)?, f64_elements(s3, l3, what)?);
        let dims = l1.dims();
        let (len, width) = match dims {
            [.., len, width] if width % 2 == 0 && *width > 0 => (*len, *width),
            _ => candle_core::bail!("rotary positions: x {dims:?}"),
        };
        let h = width / 2;
        if l2.dims() != [len, h] || l3.dims() != [len, h] {
            candle_core::bail!("rotary positions: x {dims:?}, tables {:?}", l2.dims());
        }
        let mut y = vec![0f64; x.len()];
        for (r, (xr, yr)) in x.chunks(width).zip(y.chunks_mut(width)).enumerate() {
            let at = (r % len) * h;
            for j in 0..h {
                let (c, s) = (cos[at + j], self.sign * sin[at + j]);
                yr[j] = xr[j] * c - xr[h + j] * s;
                yr[h + j] = xr[h + j] * c + xr[j] * s;
            }
        }
        Ok((f64_to_dtype_of(s1, y), l1.shape().clone()))
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
        let sign = self.sign as f32;
        let y = super::cuda_elementwise::rotate_half((s1, l1), (s2, l2), (s3, l3), sign)?;
        Ok((y, l1.shape().clone()))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        _y: &Tensor,
        dy: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        // A rotation's transpose is the rotation back; the tables are constants.
        let back = RotateHalf { sign: -self.sign };
        let dx = dy.contiguous()?.apply_op3_no_bwd(cos, sin, &back)?;
        Ok((Some(dx), None, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::gradcheck::max_grad_error;
    use crate::nn::kernels::test_support::{f64_values, randn, weights};

    #[test]
    fn the_fused_rotation_is_the_primitive_one_with_its_gradient() {
        let (len, h) = (5, 3);
        let angles: Vec<f64> = (0..len * h).map(|i| 0.37 * i as f64).collect();
        let table = |f: fn(f64) -> f64| {
            let v: Vec<f64> = angles.iter().map(|&a| f(a)).collect();
            Tensor::from_vec(v, (len, h), &candle_core::Device::Cpu).unwrap()
        };
        let (cos, sin) = (table(f64::cos), table(f64::sin));
        let fused = |x: &Tensor| x.apply_op3(&cos, &sin, RotateHalf { sign: 1.0 });
        let x = randn(&[2, 3, len, 2 * h], 4);
        let d = f64_values(&fused(&x).unwrap())
            .iter()
            .zip(f64_values(&rotate_half_primitive(&x, &cos, &sin).unwrap()))
            .map(|(a, b)| (a - b).abs())
            .fold(0f64, f64::max);
        assert!(d < 1e-12, "fused against primitive {d}");
        let w = weights(&[2, 3, len, 2 * h]);
        let err = max_grad_error(&x, 1e-6, &|x| fused(x)?.mul(&w)?.sum_all()).unwrap();
        assert!(err < 1e-7, "gradient error {err}");
        // Tables of another length than the rows' positions are refused.
        let short = randn(&[2, 3, len + 1, 2 * h], 5);
        assert!(fused(&short).is_err());
    }
}
