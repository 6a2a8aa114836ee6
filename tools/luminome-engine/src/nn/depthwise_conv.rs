//! The short convolution before each selective scan: depthwise (one K-tap filter per channel),
//! causal in the scan's direction, with its own backward pass.
//!
//!   forward direction:  y_t = b + Σ_j w_j · x_{t−(K−1)+j}
//!   reverse direction:  y_t = b + Σ_j w_j · x_{t+(K−1)−j}   (the same filter on the flipped
//!                        sequence, without flipping it)
//!
//! with zeros past either end. Gradients: dx_s = Σ_j w_j · dy at the output positions that read
//! x_s, dw_j = Σ_{b,t} dy_t · x_{t∓(K−1)±j}, db = Σ_{b,t} dy_t. On the CPU one fused op each way
//! (batch rows in parallel); elsewhere [`depthwise_conv_primitive`], the same sum from candle ops.

use candle_core::{backend::BackendStorage, CpuStorage, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use crate::nn::kernels::{contiguous_slice, num_traits_float::Float};

/// `x` `[B, L, E]`, `w` `[E, K]`, `b` `[E]` → `[B, L, E]`; `reverse`: causal towards position 0.
pub fn depthwise_conv(x: &Tensor, w: &Tensor, b: &Tensor, reverse: bool) -> Result<Tensor> {
    if crate::nn::kernels::cpu_fused(x) {
        x.contiguous()?.apply_op3(
            &w.contiguous()?,
            &b.contiguous()?,
            DepthwiseConv { reverse },
        )
    } else {
        depthwise_conv_primitive(x, w, b, reverse)
    }
}

/// The same convolution from candle primitives (other devices; the reference in tests).
pub fn depthwise_conv_primitive(
    x: &Tensor,
    w: &Tensor,
    b: &Tensor,
    reverse: bool,
) -> Result<Tensor> {
    let (bs, l, e) = x.dims3()?;
    let k = w.dim(1)?;
    let zeros = Tensor::zeros((bs, k - 1, e), x.dtype(), x.device())?;
    let padded = if reverse {
        Tensor::cat(&[x, &zeros], 1)?
    } else {
        Tensor::cat(&[&zeros, x], 1)?
    };
    let mut y = b.unsqueeze(0)?.unsqueeze(0)?.broadcast_as((bs, l, e))?;
    for j in 0..k {
        let tap = w.narrow(1, j, 1)?.squeeze(1)?;
        let offset = if reverse { k - 1 - j } else { j };
        y = (y + padded.narrow(1, offset, l)?.broadcast_mul(&tap)?)?;
    }
    Ok(y)
}

/// The input position tap `j` of output position `t` reads, if inside `0..l`.
#[inline(always)]
fn source(t: usize, j: usize, k: usize, l: usize, reverse: bool) -> Option<usize> {
    if reverse {
        let s = t + (k - 1) - j;
        (s < l).then_some(s)
    } else {
        (t + j).checked_sub(k - 1)
    }
}

#[derive(Clone, Copy)]
struct ConvDims {
    b: usize,
    l: usize,
    e: usize,
    k: usize,
}

fn conv_forward<T: Float>(x: &[T], w: &[T], bias: &[T], d: ConvDims, reverse: bool) -> Vec<T> {
    let ConvDims { l, e, k, .. } = d;
    let mut y = vec![T::zero(); d.b * l * e];
    y.par_chunks_mut(l * e)
        .zip(x.par_chunks(l * e))
        .for_each(|(yr, xr)| {
            for t in 0..l {
                let out = &mut yr[t * e..(t + 1) * e];
                out.copy_from_slice(bias);
                for j in 0..k {
                    if let Some(s) = source(t, j, k, l, reverse) {
                        let xs = &xr[s * e..(s + 1) * e];
                        for c in 0..e {
                            out[c] = out[c] + w[c * k + j] * xs[c];
                        }
                    }
                }
            }
        });
    y
}

/// dx `[B, L, E]`, then dw `[E, K]`, then db `[E]`, flat.
fn conv_backward<T: Float>(x: &[T], dy: &[T], w: &[T], d: ConvDims, reverse: bool) -> Vec<T> {
    let ConvDims { b, l, e, k } = d;
    // Per batch row: its dx rows and its share of dw, db.
    let parts: Vec<(Vec<T>, Vec<T>)> = x
        .par_chunks(l * e)
        .zip(dy.par_chunks(l * e))
        .map(|(xr, dyr)| {
            let mut dx = vec![T::zero(); l * e];
            let mut dwb = vec![T::zero(); e * k + e];
            for t in 0..l {
                let g = &dyr[t * e..(t + 1) * e];
                for c in 0..e {
                    dwb[e * k + c] = dwb[e * k + c] + g[c];
                }
                for j in 0..k {
                    if let Some(s) = source(t, j, k, l, reverse) {
                        let xs = &xr[s * e..(s + 1) * e];
                        let dxs = &mut dx[s * e..(s + 1) * e];
                        for c in 0..e {
                            dxs[c] = dxs[c] + w[c * k + j] * g[c];
                            dwb[c * k + j] = dwb[c * k + j] + g[c] * xs[c];
                        }
                    }
                }
            }
            (dx, dwb)
        })
        .collect();
    let mut out = Vec::with_capacity(b * l * e + e * k + e);
    let mut dwb = vec![T::zero(); e * k + e];
    for (dx, part) in parts {
        out.extend(dx);
        for (o, v) in dwb.iter_mut().zip(part) {
            *o = *o + v;
        }
    }
    out.extend(dwb);
    out
}

struct DepthwiseConv {
    reverse: bool,
}

fn conv_dims(lx: &Layout, lw: &Layout) -> Result<ConvDims> {
    let (&[b, l, e], &[_, k]) = (lx.dims(), lw.dims()) else {
        candle_core::bail!(
            "depthwise conv: unexpected shapes {:?} {:?}",
            lx.dims(),
            lw.dims()
        )
    };
    Ok(ConvDims { b, l, e, k })
}

impl candle_core::CustomOp3 for DepthwiseConv {
    fn name(&self) -> &'static str {
        "luminome-depthwise-conv"
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
        let d = conv_dims(l1, l2)?;
        let out = match (s1, s2, s3) {
            (CpuStorage::F32(x), CpuStorage::F32(w), CpuStorage::F32(b)) => {
                CpuStorage::F32(conv_forward(
                    contiguous_slice(x, l1, "conv")?,
                    contiguous_slice(w, l2, "conv")?,
                    contiguous_slice(b, l3, "conv")?,
                    d,
                    self.reverse,
                ))
            }
            (CpuStorage::F64(x), CpuStorage::F64(w), CpuStorage::F64(b)) => {
                CpuStorage::F64(conv_forward(
                    contiguous_slice(x, l1, "conv")?,
                    contiguous_slice(w, l2, "conv")?,
                    contiguous_slice(b, l3, "conv")?,
                    d,
                    self.reverse,
                ))
            }
            _ => candle_core::bail!("depthwise conv: f32 or f64, got {:?}", s1.dtype()),
        };
        Ok((out, l1.shape().clone()))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _b: &Tensor,
        _y: &Tensor,
        dy: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (bs, l, e) = x.dims3()?;
        let k = w.dim(1)?;
        let packed = Tensor::stack(&[x, dy], 0)?.contiguous()?;
        let flat = packed.apply_op2_no_bwd(
            &w.contiguous()?,
            &DepthwiseConvBackward {
                reverse: self.reverse,
            },
        )?;
        let n = bs * l * e;
        Ok((
            Some(flat.narrow(0, 0, n)?.reshape((bs, l, e))?),
            Some(flat.narrow(0, n, e * k)?.reshape((e, k))?),
            Some(flat.narrow(0, n + e * k, e)?),
        ))
    }
}

/// Inputs: `[2, B, L, E]` (x, dy) and w `[E, K]`; output: dx, dw, db flat.
struct DepthwiseConvBackward {
    reverse: bool,
}

impl candle_core::CustomOp2 for DepthwiseConvBackward {
    fn name(&self) -> &'static str {
        "luminome-depthwise-conv-backward"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (&[_, b, l, e], &[_, k]) = (l1.dims(), l2.dims()) else {
            candle_core::bail!("depthwise conv backward: unexpected shapes")
        };
        let d = ConvDims { b, l, e, k };
        let n = b * l * e;
        let out = match (s1, s2) {
            (CpuStorage::F32(p), CpuStorage::F32(w)) => {
                let p = contiguous_slice(p, l1, "conv bwd")?;
                CpuStorage::F32(conv_backward(
                    &p[..n],
                    &p[n..],
                    contiguous_slice(w, l2, "conv bwd")?,
                    d,
                    self.reverse,
                ))
            }
            (CpuStorage::F64(p), CpuStorage::F64(w)) => {
                let p = contiguous_slice(p, l1, "conv bwd")?;
                CpuStorage::F64(conv_backward(
                    &p[..n],
                    &p[n..],
                    contiguous_slice(w, l2, "conv bwd")?,
                    d,
                    self.reverse,
                ))
            }
            _ => candle_core::bail!("depthwise conv backward: f32 or f64"),
        };
        Ok((out, Shape::from_dims(&[n + e * k + e])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::gradcheck::max_grad_error;
    use crate::nn::kernels::test_support::randn;

    #[test]
    fn the_fused_convolution_equals_the_primitive_one_and_its_gradients_are_right() {
        let x = randn(&[2, 7, 5], 1);
        let w = randn(&[5, 3], 2);
        let b = randn(&[5], 3);
        let wy = randn(&[2, 7, 5], 4);
        for reverse in [false, true] {
            let fused = depthwise_conv(&x, &w, &b, reverse).unwrap();
            let slow = depthwise_conv_primitive(&x, &w, &b, reverse).unwrap();
            let d: f64 = (fused - slow)
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar()
                .unwrap();
            assert!(d < 1e-12, "reverse {reverse}: {d}");
            let loss = |x: &Tensor, w: &Tensor, b: &Tensor| {
                depthwise_conv(x, w, b, reverse)?.mul(&wy)?.sum_all()
            };
            let ex = max_grad_error(&x, 1e-6, &|v| loss(v, &w, &b)).unwrap();
            let ew = max_grad_error(&w, 1e-6, &|v| loss(&x, v, &b)).unwrap();
            let eb = max_grad_error(&b, 1e-6, &|v| loss(&x, &w, v)).unwrap();
            assert!(
                ex < 1e-7 && ew < 1e-7 && eb < 1e-7,
                "reverse {reverse}: {ex} {ew} {eb}"
            );
        }
        // Causality: in the forward direction output t does not read inputs after t.
        let mut later = x.to_vec3::<f64>().unwrap();
        later[0][6][0] += 1.0;
        let later = Tensor::new(later, x.device()).unwrap();
        let a = depthwise_conv(&x, &w, &b, false)
            .unwrap()
            .narrow(1, 0, 6)
            .unwrap();
        let c = depthwise_conv(&later, &w, &b, false)
            .unwrap()
            .narrow(1, 0, 6)
            .unwrap();
        let d: f64 = (a - c)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar()
            .unwrap();
        assert_eq!(d, 0.0);
    }
}
