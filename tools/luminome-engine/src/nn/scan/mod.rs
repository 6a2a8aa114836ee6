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

use crate::nn::kernels::{contiguous_slice, written_by};

#[cfg(feature = "cuda")]
mod cuda;
mod kernels;
#[cfg(test)]
mod tests;

use kernels::{BlockGrads, ChannelRows, Dims, Inputs, ScanKernels, Scratch};

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
    if crate::nn::kernels::cpu_fused(x) {
        // x and Δ as they are (a copy of both was a sixth of the op's time); B‖C and A‖D, small,
        // packed into one input.
        let bc = Tensor::cat(&[b, c], D::Minus1)?.flatten_all()?;
        let ad = Tensor::cat(&[a, &d.unsqueeze(1)?], 1)?.flatten_all()?;
        let bcad = Tensor::cat(&[bc, ad], 0)?;
        let n = a.dim(1)?;
        x.contiguous()?
            .apply_op3(&delta.contiguous()?, &bcad, SelectiveScanCpu { reverse, n })
    } else if crate::nn::kernels::cuda_fused(x) {
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

/// The op CUDA runs (`cuda.rs`): inputs x‖Δ `[2, B, L, E]`, B‖C `[B, L, 2N]`, A‖D `[E, N+1]`.
/// On the CPU it computes what [`SelectiveScanCpu`] does.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
struct SelectiveScan {
    reverse: bool,
}

/// The inputs of a packed op: x‖Δ(‖dy) in `s1`, B‖C, A‖D.
fn packed_inputs<'a, T>(s1: &'a [T], bc: &'a [T], ad: &'a [T], dims: &Dims) -> Inputs<'a, T> {
    let size = dims.b * dims.l * dims.e;
    let (x, rest) = s1.split_at(size);
    let (delta, dy) = rest.split_at(size);
    Inputs {
        x,
        delta,
        dy,
        bc,
        ad,
    }
}

fn scan_forward<T: ScanKernels>(inputs: Inputs<T>, dims: Dims) -> Vec<T> {
    let Dims { b, l, e, .. } = dims;
    let size = b * l * e;
    if rows_fill_the_pool(b) {
        // Each row's channels are one block, computed into its place in the output (the blocks
        // of channels below cost a copy of the whole output, ~3 % of the forward on Zen 5). A
        // channel's output does not depend on the blocks it is computed in: the same bits.
        return written_by(size, |y: &mut [T]| {
            y.par_chunks_mut(l * e)
                .enumerate()
                .for_each(|(row, slab)| T::forward(dims, (row, 0, e), inputs, slab));
        });
    }
    let blocks = dims.blocks();
    let parts: Vec<Vec<T>> = blocks
        .par_iter()
        .map(|&(row, e0, e1)| {
            written_by(l * (e1 - e0), |y| {
                T::forward(dims, (row, e0, e1), inputs, y)
            })
        })
        .collect();
    // Every element is written: the blocks cover every row and channel.
    written_by(size, |y: &mut [T]| {
        for (&(row, e0, e1), part) in blocks.iter().zip(&parts) {
            copy_block_rows(y, part, (row, e0, e1), &dims);
        }
    })
}

/// Whether `rows` batch rows, one job each, keep the thread pool evenly busy: as many rows as
/// threads or a multiple, or at least four per thread. Otherwise the rows are cut into blocks of
/// channels.
fn rows_fill_the_pool(rows: usize) -> bool {
    rows_fill_the_pool_with(rows, rayon::current_num_threads())
}

fn rows_fill_the_pool_with(rows: usize, threads: usize) -> bool {
    rows >= threads && (rows.is_multiple_of(threads) || rows >= 4 * threads)
}

/// Copies a block's `[L, w]` values into their rows and channels of a `[B, L, E]` output.
fn copy_block_rows<T: Copy>(
    out: &mut [T],
    part: &[T],
    (row, e0, e1): (usize, usize, usize),
    dims: &Dims,
) {
    let (l, e, w) = (dims.l, dims.e, e1 - e0);
    for t in 0..l {
        let at = (row * l + t) * e + e0;
        out[at..at + w].copy_from_slice(&part[t * w..(t + 1) * w]);
    }
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
                    packed_inputs(
                        contiguous_slice(a, l1, "scan")?,
                        contiguous_slice(b, l2, "scan")?,
                        contiguous_slice(c, l3, "scan")?,
                        &dims,
                    ),
                    dims,
                ))
            }
            (CpuStorage::F64(a), CpuStorage::F64(b), CpuStorage::F64(c)) => {
                CpuStorage::F64(scan_forward(
                    packed_inputs(
                        contiguous_slice(a, l1, "scan")?,
                        contiguous_slice(b, l2, "scan")?,
                        contiguous_slice(c, l3, "scan")?,
                        &dims,
                    ),
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
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
struct SelectiveScanBackward {
    reverse: bool,
}

fn scan_backward<T: ScanKernels>(inputs: Inputs<T>, dims: Dims) -> Vec<T> {
    let Dims { b, l, e, n, .. } = dims;
    let size = b * l * e;
    let blocks = dims.blocks();
    // dx and dΔ are written whole by the blocks; dB‖dC and dA‖dD are sums from zero.
    written_by(2 * size + b * l * 2 * n + e * (n + 1), |out: &mut [T]| {
        let (dxd, rest) = out.split_at_mut(2 * size);
        let (dbc, dad) = rest.split_at_mut(b * l * 2 * n);
        let (dx, ddelta) = dxd.split_at_mut(size);
        let parts = if rows_fill_the_pool(b) {
            block_grads_in_place(inputs, dims, (dx, ddelta))
        } else {
            block_grads_copied(inputs, dims, &blocks, (dx, ddelta))
        };
        dbc.fill(T::zero());
        dad.fill(T::zero());
        for (&(row, e0, e1), g) in blocks.iter().zip(&parts) {
            let rows = &mut dbc[row * l * 2 * n..(row + 1) * l * 2 * n];
            for (o, &v) in rows.iter_mut().zip(&g.dbc) {
                *o = *o + v;
            }
            let chans = &mut dad[e0 * (n + 1)..e1 * (n + 1)];
            for (o, &v) in chans.iter_mut().zip(&g.dad) {
                *o = *o + v;
            }
        }
    })
}

/// The blocks' gradients, one job per batch row (its blocks in turn), each block writing dx and
/// dΔ into its row of the outputs, as the forward does with y (the zero-fills and copies this
/// saves were ~5 % of the scan benchmark's forward + backward on Zen 5). The blocks and their
/// order are those of `dims.blocks()`, so every value has the bits of `block_grads_copied`'s.
fn block_grads_in_place<T: ScanKernels>(
    inputs: Inputs<T>,
    dims: Dims,
    (dx, ddelta): (&mut [T], &mut [T]),
) -> Vec<BlockGrads<T>> {
    let (l, e) = (dims.l, dims.e);
    let rows: Vec<Vec<BlockGrads<T>>> = dx
        .par_chunks_mut(l * e)
        .zip(ddelta.par_chunks_mut(l * e))
        .enumerate()
        .map_init(
            || Scratch::new(&dims),
            |scratch, (row, (dx, ddelta))| {
                dims.blocks_of_row(row)
                    .into_iter()
                    .map(|blk| {
                        let out = ChannelRows {
                            dx: &mut *dx,
                            ddelta: &mut *ddelta,
                            stride: e,
                            col: blk.1,
                        };
                        T::backward(dims, blk, inputs, scratch, out)
                    })
                    .collect()
            },
        )
        .collect();
    rows.into_iter().flatten().collect()
}

/// The blocks' gradients, one job per block (as many as there are blocks of 64 channels, for
/// fewer batch rows than threads), each block's dx and dΔ computed into its own `[L, w]` and
/// copied into its rows and channels of the outputs.
fn block_grads_copied<T: ScanKernels>(
    inputs: Inputs<T>,
    dims: Dims,
    blocks: &[(usize, usize, usize)],
    (dx, ddelta): (&mut [T], &mut [T]),
) -> Vec<BlockGrads<T>> {
    let l = dims.l;
    let parts: Vec<(BlockGrads<T>, Vec<T>)> = blocks
        .par_iter()
        .map_init(
            || Scratch::new(&dims),
            |scratch, &(row, e0, e1)| {
                let w = e1 - e0;
                let mut grads = None;
                let own = written_by(2 * l * w, |own: &mut [T]| {
                    let (dx, ddelta) = own.split_at_mut(l * w);
                    let out = ChannelRows {
                        dx,
                        ddelta,
                        stride: w,
                        col: 0,
                    };
                    grads = Some(T::backward(dims, (row, e0, e1), inputs, scratch, out));
                });
                (grads.expect("the block's gradients"), own)
            },
        )
        .collect();
    let mut grads = Vec::with_capacity(parts.len());
    for (&(row, e0, e1), (g, own)) in blocks.iter().zip(parts) {
        let (part_dx, part_ddelta) = own.split_at(l * (e1 - e0));
        copy_block_rows(dx, part_dx, (row, e0, e1), &dims);
        copy_block_rows(ddelta, part_ddelta, (row, e0, e1), &dims);
        grads.push(g);
    }
    grads
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
                    packed_inputs(
                        contiguous_slice(a, l1, "scan bwd")?,
                        contiguous_slice(bb, l2, "scan bwd")?,
                        contiguous_slice(c, l3, "scan bwd")?,
                        &dims,
                    ),
                    dims,
                ))
            }
            (CpuStorage::F64(a), CpuStorage::F64(bb), CpuStorage::F64(c)) => {
                CpuStorage::F64(scan_backward(
                    packed_inputs(
                        contiguous_slice(a, l1, "scan bwd")?,
                        contiguous_slice(bb, l2, "scan bwd")?,
                        contiguous_slice(c, l3, "scan bwd")?,
                        &dims,
                    ),
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

/// The CPU's op: inputs x, Δ `[B, L, E]` and B‖C‖A‖D flattened into one (`[B, L, 2N]` then
/// `[E, N+1]`), so that x and Δ are read where they are.
#[derive(Clone, Copy)]
struct SelectiveScanCpu {
    reverse: bool,
    n: usize,
}

/// The inputs of the CPU ops: x, Δ, dy (empty in the forward pass) and the packed B‖C‖A‖D.
fn cpu_inputs<'a, T>(
    (x, delta, dy): (&'a [T], &'a [T], &'a [T]),
    bcad: &'a [T],
    dims: &Dims,
) -> Result<Inputs<'a, T>> {
    let size = dims.b * dims.l * dims.e;
    let bc_len = dims.b * dims.l * 2 * dims.n;
    if x.len() != size
        || delta.len() != size
        || !(dy.is_empty() || dy.len() == size)
        || bcad.len() != bc_len + dims.e * (dims.n + 1)
    {
        candle_core::bail!("selective scan: inputs of unexpected sizes")
    }
    let (bc, ad) = bcad.split_at(bc_len);
    Ok(Inputs {
        x,
        delta,
        dy,
        bc,
        ad,
    })
}

/// The f32 or f64 slices of three CPU inputs of one dtype.
fn cpu_slices<'a, T: candle_core::WithDType>(
    ins: [(&'a CpuStorage, &Layout); 3],
    what: &str,
) -> Result<[&'a [T]; 3]> {
    let mut out: [&[T]; 3] = [&[]; 3];
    for (o, (s, l)) in out.iter_mut().zip(ins) {
        *o = contiguous_slice(s.as_slice::<T>()?, l, what)?;
    }
    Ok(out)
}

impl SelectiveScanCpu {
    fn dims(&self, x: &Layout) -> Result<Dims> {
        let &[b, l, e] = x.dims() else {
            candle_core::bail!("selective scan: x of shape {:?}", x.dims())
        };
        Ok(Dims::new((b, l, e), self.n, self.reverse))
    }
}

impl candle_core::CustomOp3 for SelectiveScanCpu {
    fn name(&self) -> &'static str {
        "luminome-selective-scan-cpu"
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
        let dims = self.dims(l1)?;
        let ins = [(s1, l1), (s2, l2), (s3, l3)];
        let out = match s1 {
            CpuStorage::F32(_) => {
                let [x, delta, bcad] = cpu_slices::<f32>(ins, "scan")?;
                let inputs = cpu_inputs((x, delta, &[]), bcad, &dims)?;
                CpuStorage::F32(scan_forward(inputs, dims))
            }
            CpuStorage::F64(_) => {
                let [x, delta, bcad] = cpu_slices::<f64>(ins, "scan")?;
                let inputs = cpu_inputs((x, delta, &[]), bcad, &dims)?;
                CpuStorage::F64(scan_forward(inputs, dims))
            }
            _ => candle_core::bail!("selective scan: f32 or f64, got {:?}", s1.dtype()),
        };
        Ok((out, Shape::from_dims(l1.dims())))
    }

    fn bwd(
        &self,
        x: &Tensor,
        delta: &Tensor,
        bcad: &Tensor,
        _y: &Tensor,
        dy: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (b, l, e) = x.dims3()?;
        let size = b * l * e;
        let flat = x.apply_op3_no_bwd(
            delta,
            &dy.contiguous()?,
            &SelectiveScanCpuBackward {
                scan: *self,
                bcad: bcad.clone(),
            },
        )?;
        let dx = flat.narrow(0, 0, size)?.reshape((b, l, e))?;
        let ddelta = flat.narrow(0, size, size)?.reshape((b, l, e))?;
        let dbcad = flat.narrow(0, 2 * size, bcad.elem_count())?;
        Ok((Some(dx), Some(ddelta), Some(dbcad)))
    }
}

/// Inputs: x, Δ, dy `[B, L, E]`, with the forward's packed B‖C‖A‖D held here; output: the flat
/// gradients of x, Δ, (B, C), (A, D), in that order.
struct SelectiveScanCpuBackward {
    scan: SelectiveScanCpu,
    bcad: Tensor,
}

impl candle_core::CustomOp3 for SelectiveScanCpuBackward {
    fn name(&self) -> &'static str {
        "luminome-selective-scan-cpu-backward"
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
        let dims = self.scan.dims(l1)?;
        let (storage, layout) = self.bcad.storage_and_layout();
        let candle_core::Storage::Cpu(bcad) = &*storage else {
            candle_core::bail!("selective scan backward: B, C, A, D not on the CPU")
        };
        let ins = [(s1, l1), (s2, l2), (s3, l3)];
        let out = match s1 {
            CpuStorage::F32(_) => {
                let [x, delta, dy] = cpu_slices::<f32>(ins, "scan bwd")?;
                let bcad = contiguous_slice(bcad.as_slice::<f32>()?, layout, "scan bwd")?;
                CpuStorage::F32(scan_backward(
                    cpu_inputs((x, delta, dy), bcad, &dims)?,
                    dims,
                ))
            }
            CpuStorage::F64(_) => {
                let [x, delta, dy] = cpu_slices::<f64>(ins, "scan bwd")?;
                let bcad = contiguous_slice(bcad.as_slice::<f64>()?, layout, "scan bwd")?;
                CpuStorage::F64(scan_backward(
                    cpu_inputs((x, delta, dy), bcad, &dims)?,
                    dims,
                ))
            }
            _ => candle_core::bail!("selective scan backward: f32 or f64"),
        };
        let Dims { b, l, e, n, .. } = dims;
        let len = 2 * b * l * e + b * l * 2 * n + e * (n + 1);
        Ok((out, Shape::from_dims(&[len])))
    }
}
