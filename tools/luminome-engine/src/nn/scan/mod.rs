//! The selective scan of a Mamba-style state-space layer, with its own backward pass.
//!
//! For each batch row b, channel e and state n, over positions t = 0..L:
//!
//!   h_t = exp(Δ_t · A[e,n]) · h_{t−1} + Δ_t · B_t[n] · x_t,      h_{−1} = 0
//!   y_t = Σ_n C_t[n] · h_t[n] + D[e] · x_t
//!
//! with x, Δ `[B, L, E]` (Δ > 0, input-dependent), B, C `[B, L, N]` (input-dependent, shared by
//! the channels), A `[E, N]` (negative) and D `[E]`. On the CPU it is one fused op: the forward
//! keeps only the running state; the backward recomputes the states of a block of channels
//! (L × channels × N values, cache-sized) and runs the recurrence backwards:
//!
//!   dh_t = dy_t · C_t + exp(Δ_{t+1} A) · dh_{t+1}
//!   dC_t += dy_t · h_t              dD += dy_t · x_t
//!   dΔ_t  = Σ_n dh_t (A · exp(Δ_t A) · h_{t−1} + B_t · x_t)
//!   dA   += dh_t · Δ_t · exp(Δ_t A) · h_{t−1}
//!   dB_t += dh_t · Δ_t · x_t        dx_t = dy_t · D + Σ_n dh_t · Δ_t · B_t
//!
//! Blocks of (row, channels) run in parallel; dB, dC (summed over channels) and dA, dD (summed
//! over rows) are reduced after. On CUDA (f32) the same op runs as kernels (`cuda.rs`: one thread
//! per row and channel). Other devices (Metal, and CUDA in f64) run
//! [`selective_scan_primitive`], the same recurrence from autograd-capable candle ops, one
//! position at a time (correct, slow); the tests check the fused op against it and against finite
//! differences, and `cuda_check` the CUDA kernels against the CPU's.

use candle_core::{backend::BackendStorage, CpuStorage, Layout, Result, Shape, Tensor, D};
use rayon::prelude::*;

use crate::nn::kernels::contiguous_slice;

#[cfg(feature = "cuda")]
mod cuda;
mod kernels;
#[cfg(test)]
mod tests;

use kernels::{BlockGrads, Dims, Inputs, ScanKernels, Scratch};

/// y `[B, L, E]` of the selective scan (see the module documentation); `reverse`: the recurrence
/// runs from the last position to the first (the backward direction of a bidirectional layer,
/// without flipping the sequence).
pub fn selective_scan(
    x: &Tensor,
    delta: &Tensor,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    d: &Tensor,
    reverse: bool,
) -> Result<Tensor> {
    if crate::nn::kernels::cpu_fused(x) || crate::nn::kernels::cuda_fused(x) {
        let xd = Tensor::stack(&[x, delta], 0)?.contiguous()?;
        let bc = Tensor::cat(&[b, c], D::Minus1)?.contiguous()?;
        let ad = Tensor::cat(&[a, &d.unsqueeze(1)?], 1)?.contiguous()?;
        xd.apply_op3(&bc, &ad, SelectiveScan { reverse })
    } else {
        selective_scan_primitive(x, delta, a, b, c, d, reverse)
    }
}

/// The same scan from autograd-capable primitives, one position at a time.
pub fn selective_scan_primitive(
    x: &Tensor,
    delta: &Tensor,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    d: &Tensor,
    reverse: bool,
) -> Result<Tensor> {
    let (bs, l, e) = x.dims3()?;
    let n = a.dim(1)?;
    // [B, L, E, N]
    let decay = delta
        .unsqueeze(3)?
        .broadcast_mul(&a.unsqueeze(0)?.unsqueeze(0)?)?
        .exp()?;
    let input = (delta * x)?.unsqueeze(3)?.broadcast_mul(&b.unsqueeze(2)?)?;
    let mut h = Tensor::zeros((bs, e, n), x.dtype(), x.device())?;
    let mut ys = vec![None; l];
    for step in 0..l {
        let t = if reverse { l - 1 - step } else { step };
        h = ((decay.narrow(1, t, 1)?.squeeze(1)? * h)? + input.narrow(1, t, 1)?.squeeze(1)?)?;
        let ct = c.narrow(1, t, 1)?; // [B, 1, N]
        ys[t] = Some(h.broadcast_mul(&ct)?.sum(D::Minus1)?); // [B, E]
    }
    let ys: Vec<Tensor> = ys.into_iter().flatten().collect();
    let y = Tensor::stack(&ys, 1)?;
    y + x.broadcast_mul(&d.unsqueeze(0)?.unsqueeze(0)?)?
}

struct SelectiveScan {
    reverse: bool,
}

fn scan_forward<T: ScanKernels>(s1: &[T], s2: &[T], s3: &[T], dims: Dims) -> Vec<T> {
    let Dims { b, l, e, .. } = dims;
    let size = b * l * e;
    let (x, delta) = s1.split_at(size);
    let inputs = Inputs {
        x,
        delta,
        dy: &[],
        bc: s2,
        ad: s3,
    };
    let blocks = dims.blocks();
    let parts: Vec<Vec<T>> = blocks
        .par_iter()
        .map(|&blk| T::forward(dims, blk, inputs))
        .collect();
    let mut y = vec![T::zero(); size];
    for (&(row, e0, e1), part) in blocks.iter().zip(&parts) {
        let w = e1 - e0;
        for t in 0..l {
            let at = (row * l + t) * e + e0;
            y[at..at + w].copy_from_slice(&part[t * w..(t + 1) * w]);
        }
    }
    y
}

impl candle_core::CustomOp3 for SelectiveScan {
    fn name(&self) -> &'static str {
        "luminome-selective-scan"
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
        let dims = Dims::of(l1, l2, self.reverse)?;
        let shape = Shape::from_dims(&[dims.b, dims.l, dims.e]);
        let out = match (s1, s2, s3) {
            (CpuStorage::F32(a), CpuStorage::F32(b), CpuStorage::F32(c)) => {
                CpuStorage::F32(scan_forward(
                    contiguous_slice(a, l1, "scan")?,
                    contiguous_slice(b, l2, "scan")?,
                    contiguous_slice(c, l3, "scan")?,
                    dims,
                ))
            }
            (CpuStorage::F64(a), CpuStorage::F64(b), CpuStorage::F64(c)) => {
                CpuStorage::F64(scan_forward(
                    contiguous_slice(a, l1, "scan")?,
                    contiguous_slice(b, l2, "scan")?,
                    contiguous_slice(c, l3, "scan")?,
                    dims,
                ))
            }
            _ => candle_core::bail!("selective scan: f32 or f64, got {:?}", s1.dtype()),
        };
        Ok((out, shape))
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
        let dims = Dims::of(l1, l2, self.reverse)?;
        cuda::forward(dims, (s1, l1), (s2, l2), (s3, l3))
    }

    fn bwd(
        &self,
        xd: &Tensor,
        bc: &Tensor,
        ad: &Tensor,
        _y: &Tensor,
        dy: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (_, b, l, e) = xd.dims4()?;
        let n2 = bc.dim(2)?;
        let packed = Tensor::cat(&[xd, &dy.unsqueeze(0)?], 0)?.contiguous()?;
        let flat = packed.apply_op3_no_bwd(
            &bc.contiguous()?,
            &ad.contiguous()?,
            &SelectiveScanBackward {
                reverse: self.reverse,
            },
        )?;
        let size = b * l * e;
        let dxd = flat.narrow(0, 0, 2 * size)?.reshape((2, b, l, e))?;
        let dbc = flat.narrow(0, 2 * size, b * l * n2)?.reshape((b, l, n2))?;
        let dad = flat
            .narrow(0, 2 * size + b * l * n2, e * (n2 / 2 + 1))?
            .reshape((e, n2 / 2 + 1))?;
        Ok((Some(dxd), Some(dbc), Some(dad)))
    }
}

/// Inputs: `[3, B, L, E]` (x, Δ, dy), `[B, L, 2N]`, `[E, N+1]`; output: the flat gradients of
/// (x, Δ), (B, C), (A, D), in that order.
struct SelectiveScanBackward {
    reverse: bool,
}

fn scan_backward<T: ScanKernels>(s1: &[T], s2: &[T], s3: &[T], dims: Dims) -> Vec<T> {
    let Dims { b, l, e, n, .. } = dims;
    let size = b * l * e;
    let (x, rest) = s1.split_at(size);
    let (delta, dy) = rest.split_at(size);
    let inputs = Inputs {
        x,
        delta,
        dy,
        bc: s2,
        ad: s3,
    };
    let blocks = dims.blocks();
    let parts: Vec<BlockGrads<T>> = blocks
        .par_iter()
        .map_init(
            || Scratch::new(&dims),
            |scratch, &blk| T::backward(dims, blk, inputs, scratch),
        )
        .collect();
    let mut out = vec![T::zero(); 2 * size + b * l * 2 * n + e * (n + 1)];
    let (dxd, rest) = out.split_at_mut(2 * size);
    let (dbc, dad) = rest.split_at_mut(b * l * 2 * n);
    let (dx, ddelta) = dxd.split_at_mut(size);
    for (&(row, e0, e1), g) in blocks.iter().zip(&parts) {
        let w = e1 - e0;
        for t in 0..l {
            let at = (row * l + t) * e + e0;
            dx[at..at + w].copy_from_slice(&g.dx[t * w..(t + 1) * w]);
            ddelta[at..at + w].copy_from_slice(&g.ddelta[t * w..(t + 1) * w]);
        }
        let rows = &mut dbc[row * l * 2 * n..(row + 1) * l * 2 * n];
        for (o, &v) in rows.iter_mut().zip(&g.dbc) {
            *o = *o + v;
        }
        let chans = &mut dad[e0 * (n + 1)..e1 * (n + 1)];
        for (o, &v) in chans.iter_mut().zip(&g.dad) {
            *o = *o + v;
        }
    }
    out
}

impl candle_core::CustomOp3 for SelectiveScanBackward {
    fn name(&self) -> &'static str {
        "luminome-selective-scan-backward"
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
        let dims = Dims::of(l1, l2, self.reverse)?;
        let Dims { b, l, e, n, .. } = dims;
        let len = 2 * b * l * e + b * l * 2 * n + e * (n + 1);
        let out = match (s1, s2, s3) {
            (CpuStorage::F32(a), CpuStorage::F32(bb), CpuStorage::F32(c)) => {
                CpuStorage::F32(scan_backward(
                    contiguous_slice(a, l1, "scan bwd")?,
                    contiguous_slice(bb, l2, "scan bwd")?,
                    contiguous_slice(c, l3, "scan bwd")?,
                    dims,
                ))
            }
            (CpuStorage::F64(a), CpuStorage::F64(bb), CpuStorage::F64(c)) => {
                CpuStorage::F64(scan_backward(
                    contiguous_slice(a, l1, "scan bwd")?,
                    contiguous_slice(bb, l2, "scan bwd")?,
                    contiguous_slice(c, l3, "scan bwd")?,
                    dims,
                ))
            }
            _ => candle_core::bail!("selective scan backward: f32 or f64"),
        };
        Ok((out, Shape::from_dims(&[len])))
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
        let dims = Dims::of(l1, l2, self.reverse)?;
        cuda::backward(dims, (s1, l1), (s2, l2), (s3, l3))
    }
}
