//! Batched matrix product for attention (`q·kᵀ`, `p·v` and their gradients): one gemm per
//! batch element, the batch elements spread over the rayon threads.
//!
//! candle's CPU matmul loops over the batch on the calling thread and asks gemm to split each
//! product; attention's products are small (72 × 72 × 32 at the benchmark size), so gemm runs
//! each on one thread and the second core idles through all of them — the largest serial part
//! of a two-thread step. It also zero-fills every output before gemm overwrites it. Here each
//! batch element is one single-threaded gemm call (the same gemm, with the same strides and the
//! same k order, so the same bits as candle's matmul), the elements run in parallel, and the
//! output is written once. Other devices and dtypes use candle's matmul.

use candle_core::{backend::BackendStorage, CpuStorage, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::kernels::{cpu_fast_path, num_traits_float::Float};

/// `a` `[..., m, k]` × `b` `[..., k, n]` → `[..., m, n]`, the leading (batch) dimensions equal,
/// differentiable in both. Any strides in the last two dimensions (a transposed view needs no
/// copy).
pub fn batched_matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let fused = cpu_fast_path(a.device())
        && a.dtype() == b.dtype()
        && matches!(a.dtype(), candle_core::DType::F32 | candle_core::DType::F64)
        && a.rank() >= 3
        && a.rank() == b.rank()
        && batch_of(a.layout()).is_some()
        && batch_of(b.layout()).is_some();
    if fused {
        a.apply_op2(b, BatchedMatMul)
    } else {
        device_matmul(a, b)
    }
}

/// `a.matmul(b)` on any device. candle's CUDA (and Metal) matmul takes each operand only
/// contiguous or as a transposed view of a contiguous one — a row or column slice of a wider
/// matrix is refused ("matmul is only supported for contiguous tensors", the first GPU run,
/// 2026-11-26) — where its CPU gemm takes any strides; there such an operand is copied first.
pub fn device_matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.device().is_cpu() {
        return a.matmul(b);
    }
    gemm_ready(a)?.matmul(&gemm_ready(b)?)
}

/// `t` itself when a GPU gemm reads it as it is (contiguous, or the transpose of a contiguous
/// tensor in its last two dimensions), else a contiguous copy.
fn gemm_ready(t: &Tensor) -> Result<Tensor> {
    let transposed_contiguous =
        t.rank() >= 2 && t.transpose(t.rank() - 2, t.rank() - 1)?.is_contiguous();
    if t.is_contiguous() || transposed_contiguous {
        Ok(t.clone())
    } else {
        t.contiguous()
    }
}

/// The batch size and the stride between batch elements of a `[..., r, c]` layout, when its
/// batch dimensions are one regular stride (a contiguous tensor or a transposed view of one);
/// `None` otherwise.
fn batch_of(l: &Layout) -> Option<(usize, usize)> {
    let dims = l.dims();
    let strides = l.stride();
    let r = dims.len();
    if r < 3 {
        return None;
    }
    let batch: usize = dims[..r - 2].iter().product();
    // Collapse the batch dimensions innermost first; a dimension of size 1 has no stride.
    let mut stride = None;
    let mut expected = None;
    for i in (0..r - 2).rev() {
        if dims[i] == 1 {
            continue;
        }
        match expected {
            None => stride = Some(strides[i]),
            Some(e) if e != strides[i] => return None,
            Some(_) => {}
        }
        expected = Some(strides[i] * dims[i]);
    }
    Some((batch, stride.unwrap_or(0)))
}

/// One operand's view: where batch element 0 starts, the batch stride, and the row and column
/// strides of each matrix.
#[derive(Clone, Copy)]
pub(super) struct Operand {
    start: usize,
    batch_stride: usize,
    rs: isize,
    cs: isize,
}

impl Operand {
    /// A matrix `[r, c]` of a 2-D layout (any strides), or its transpose.
    pub(super) fn matrix(l: &Layout, transposed: bool) -> Result<Self> {
        let s = l.stride();
        if s.len() != 2 {
            candle_core::bail!("matrix operand: rank {} is not 2", s.len())
        }
        let (rs, cs) = if transposed {
            (s[1], s[0])
        } else {
            (s[0], s[1])
        };
        Ok(Self {
            start: l.start_offset(),
            batch_stride: 0,
            rs: rs as isize,
            cs: cs as isize,
        })
    }
}

fn operand(l: &Layout) -> Result<(usize, Operand)> {
    let Some((batch, batch_stride)) = batch_of(l) else {
        candle_core::bail!("batched matmul: batch dimensions are not one regular stride")
    };
    let s = l.stride();
    let r = s.len();
    Ok((
        batch,
        Operand {
            start: l.start_offset(),
            batch_stride,
            rs: s[r - 2] as isize,
            cs: s[r - 1] as isize,
        },
    ))
}

/// The products of `batch` pairs into a new contiguous `[batch, m, n]` buffer.
pub(super) fn products<T: 'static + Float>(
    a: &[T],
    oa: Operand,
    b: &[T],
    ob: Operand,
    batch: usize,
    (m, k, n): (usize, usize, usize),
) -> Vec<T> {
    let len = batch * m * n;
    let mut out: Vec<T> = Vec::with_capacity(len);
    if k == 0 {
        // Nothing to sum: gemm would leave the output unwritten.
        out.resize(len, T::zero());
        return out;
    }
    // Raw addresses cross the thread boundary as integers; every batch element writes only its
    // own m × n block, and gemm (alpha = 0, read_dst = false) writes every element of it.
    let dst = out.as_mut_ptr() as usize;
    let (pa, pb) = (a.as_ptr() as usize, b.as_ptr() as usize);
    let one = |i: usize, par: gemm::Parallelism| {
        let size = std::mem::size_of::<T>();
        // SAFETY: the offsets stay inside the operands' storages (candle checked the layouts
        // against them) and inside `out`'s capacity; blocks of different `i` are disjoint.
        #[allow(unsafe_code)]
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                (dst + i * m * n * size) as *mut T,
                1,
                n as isize,
                false,
                (pa + (oa.start + i * oa.batch_stride) * size) as *const T,
                oa.cs,
                oa.rs,
                (pb + (ob.start + i * ob.batch_stride) * size) as *const T,
                ob.cs,
                ob.rs,
                T::zero(),
                T::from_usize(1),
                false,
                false,
                false,
                par,
            )
        }
    };
    let threads = rayon::current_num_threads();
    if threads > 1 && batch >= threads {
        (0..batch)
            .into_par_iter()
            .for_each(|i| one(i, gemm::Parallelism::None));
    } else {
        let par = if threads > 1 {
            gemm::Parallelism::Rayon(threads)
        } else {
            gemm::Parallelism::None
        };
        (0..batch).for_each(|i| one(i, par));
    }
    // SAFETY: every element of the `len` was written by one gemm call above.
    #[allow(unsafe_code)]
    unsafe {
        out.set_len(len)
    };
    out
}

struct BatchedMatMul;

impl candle_core::CustomOp2 for BatchedMatMul {
    fn name(&self) -> &'static str {
        "luminome-batched-matmul"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (da, db) = (l1.dims(), l2.dims());
        let r = da.len();
        if r < 3 || db.len() != r || da[..r - 2] != db[..r - 2] || da[r - 1] != db[r - 2] {
            candle_core::bail!("batched matmul: shapes {da:?} and {db:?} do not multiply")
        }
        let (m, k, n) = (da[r - 2], da[r - 1], db[r - 1]);
        let (batch, oa) = operand(l1)?;
        let (_, ob) = operand(l2)?;
        let mut shape = da.to_vec();
        shape[r - 1] = n;
        let storage = match (s1, s2) {
            (CpuStorage::F32(a), CpuStorage::F32(b)) => {
                CpuStorage::F32(products(a, oa, b, ob, batch, (m, k, n)))
            }
            (CpuStorage::F64(a), CpuStorage::F64(b)) => {
                CpuStorage::F64(products(a, oa, b, ob, batch, (m, k, n)))
            }
            _ => candle_core::bail!("batched matmul: unsupported dtype {:?}", s1.dtype()),
        };
        Ok((storage, Shape::from(shape)))
    }

    /// As candle's matmul backward: ∂a = g·bᵀ, ∂b = aᵀ·g (transposed views, no copies).
    fn bwd(
        &self,
        a: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let grad = if batch_of(grad.layout()).is_some() {
            grad.clone()
        } else {
            grad.contiguous()?
        };
        // Each side only where it is part of the graph (see linear.rs).
        let ga = a
            .track_op()
            .then(|| batched_matmul(&grad, &b.t()?))
            .transpose()?;
        let gb = b
            .track_op()
            .then(|| batched_matmul(&a.t()?, &grad))
            .transpose()?;
        Ok((ga, gb))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::kernels::test_support::{randn, value_and_grad_bits, weights};
    use candle_core::{DType, Device, Var};

    /// q·kᵀ and p·v as attention forms them, with their gradients: every bit as candle's
    /// matmul gives them.
    #[test]
    fn attention_products_and_gradients_are_candles_bit_for_bit() {
        for (b, h, l, dh) in [(2, 3, 7, 5), (4, 4, 72, 32), (1, 2, 33, 16)] {
            let q =
                Var::from_tensor(&randn(&[b, h, l, dh], 1).to_dtype(DType::F32).unwrap()).unwrap();
            let k =
                Var::from_tensor(&randn(&[b, h, l, dh], 2).to_dtype(DType::F32).unwrap()).unwrap();
            let v =
                Var::from_tensor(&randn(&[b, h, l, dh], 3).to_dtype(DType::F32).unwrap()).unwrap();
            let w = weights(&[b, h, l, dh]).to_dtype(DType::F32).unwrap();
            let graph = |mm: &dyn Fn(&Tensor, &Tensor) -> Result<Tensor>| {
                let s = mm(q.as_tensor(), &k.as_tensor().t().unwrap()).unwrap();
                let p = crate::nn::softmax_last_dim(&s).unwrap();
                let y = mm(&p, v.as_tensor()).unwrap();
                value_and_grad_bits(&y, &w, &[&q, &k, &v])
            };
            let ours = graph(&|a, b| batched_matmul(a, b));
            let candles = graph(&|a, b| a.matmul(b));
            assert_eq!(ours, candles, "b {b} h {h} l {l} dh {dh}");
        }
    }

    #[test]
    fn three_dimensional_f64_products_match_a_hand_computed_one() {
        // [[1, 2], [3, 4]] · [[5], [6]] = [[17], [39]]; second batch element doubled.
        let a = Tensor::from_vec(
            vec![1f64, 2., 3., 4., 2., 4., 6., 8.],
            (2, 2, 2),
            &Device::Cpu,
        )
        .unwrap();
        let b = Tensor::from_vec(vec![5f64, 6., 5., 6.], (2, 2, 1), &Device::Cpu).unwrap();
        let y = batched_matmul(&a, &b).unwrap();
        assert_eq!(
            y.flatten_all().unwrap().to_vec1::<f64>().unwrap(),
            vec![17., 39., 34., 78.]
        );
        assert_eq!(y.dims(), &[2, 2, 1]);
    }

    #[test]
    fn mismatched_shapes_are_refused_not_multiplied() {
        let a = Tensor::zeros((2, 3, 4), DType::F32, &Device::Cpu).unwrap();
        let b = Tensor::zeros((2, 5, 6), DType::F32, &Device::Cpu).unwrap();
        assert!(batched_matmul(&a, &b).is_err());
        let c = Tensor::zeros((3, 4, 6), DType::F32, &Device::Cpu).unwrap();
        assert!(batched_matmul(&a, &c).is_err());
    }
}
