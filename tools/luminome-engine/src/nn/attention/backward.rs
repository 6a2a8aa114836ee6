//! The backward op: the gradient of the packed projections, per (batch, head).

use std::sync::Arc;

use candle_core::{CpuStorage, Layout, Result, Shape};
use rayon::prelude::*;

use super::pair::{gemm_into, scaled_queries, View, F32, SCRATCH};
use super::Heads;
use crate::nn::dropout::loops as dropout;
use crate::nn::kernels::{contiguous_slice, written_by};
use crate::nn::softmax::rows_f32::softmax_bwd_row;

/// The gradient of `qkv` from the context's gradient `g` `[B, L, D]`, per (batch, head):
/// ∂v = pᵀ·g, ∂p = g·vᵀ, ∂y = ∂p ⊙ mask, ∂s = y ⊙ (∂y − Σ ∂y ⊙ y), ∂q = (∂s·k) · scale,
/// ∂k = (q_sᵀ·∂s)ᵀ — each product as the graph's backward forms it.
pub(super) struct FusedAttentionBackward {
    pub(super) shape: Heads,
    pub(super) scale: f32,
    pub(super) probs: Arc<Vec<f32>>,
    /// The kept dropout decisions (a byte per probability) and 1/(1 − p).
    pub(super) dropout: Option<(Arc<Vec<u8>>, f32)>,
}

impl candle_core::CustomOp2 for FusedAttentionBackward {
    fn name(&self) -> &'static str {
        "luminome-fused-attention-backward"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (CpuStorage::F32(x), CpuStorage::F32(g)) = (s1, s2) else {
            candle_core::bail!("fused attention backward: f32 only")
        };
        let s = self.shape;
        s.check(l1, "fused attention backward")?;
        let (l, dh, d) = (s.len, s.head_dim, s.d());
        if l2.dims() != [s.batch, l, d] {
            candle_core::bail!("fused attention backward: gradient {:?}", l2.dims())
        }
        let x = contiguous_slice(x, l1, "fused attention backward")?;
        let g = contiguous_slice(g, l2, "fused attention backward")?;
        let ll = l * l;
        let pairs = s.batch * s.heads;
        if self.probs.len() != pairs * ll
            || self
                .dropout
                .as_ref()
                .is_some_and(|(kept, _)| kept.len() != pairs * ll)
        {
            candle_core::bail!("fused attention backward: kept probabilities do not fit")
        }
        let out = written_by(x.len(), |out: &mut [f32]| {
            let out_addr = out.as_mut_ptr() as usize;
            (0..s.batch * s.heads).into_par_iter().for_each(|bh| {
                SCRATCH.with_borrow_mut(|scratch| {
                    let sc = scratch.buffers(s, true, true);
                    let (b, h) = (bh / s.heads, bh % s.heads);
                    let base = s.qkv_offset(b, h);
                    let y = &self.probs[bh * ll..][..ll];
                    if let Some((kept, scale)) = &self.dropout {
                        dropout::mask_of(&kept[bh * ll..][..ll], *scale, sc.m);
                    }
                    let dropping = self.dropout.is_some();
                    let gc = View::of(g, b * l * d + h * dh, d, 1);
                    let at = |off: usize| View {
                        addr: out_addr + (base + off) * F32,
                        rs: 3 * d,
                        cs: 1,
                    };
                    let p: &[f32] = if dropping {
                        dropout::product(y, sc.m, sc.a);
                        sc.a
                    } else {
                        y
                    };
                    // ∂v = pᵀ·g, into v's place; ∂p = g·vᵀ.
                    // SAFETY: p and sc.b are this task's L × L buffers, g and x are read
                    // only; the pair writes only its own head's columns of `out` (q, k and v
                    // blocks of sample b), which no other pair writes.
                    #[allow(unsafe_code)]
                    unsafe {
                        gemm_into(l, dh, l, at(2 * d), View::of(p, 0, l, 1).transposed(), gc);
                        gemm_into(
                            l,
                            l,
                            dh,
                            View::of_mut(sc.b, l, 1),
                            gc,
                            View::of(x, base + 2 * d, 3 * d, 1).transposed(),
                        );
                    }
                    // ∂y = ∂p ⊙ m (into `a`: p is no longer needed), then the softmax's.
                    let gy: &[f32] = if dropping {
                        dropout::product(sc.b, sc.m, sc.a);
                        sc.a
                    } else {
                        sc.b
                    };
                    for ((yr, gr), dr) in y
                        .chunks_exact(l)
                        .zip(gy.chunks_exact(l))
                        .zip(sc.c.chunks_exact_mut(l))
                    {
                        softmax_bwd_row(yr, gr, dr);
                    }
                    let ds = View::of(sc.c, 0, l, 1);
                    scaled_queries(x, s, b, h, self.scale, sc.q);
                    // ∂q_s = ∂s·k into q's place (scaled there below); ∂k = ∂sᵀ·q_s
                    // straight into k's place. (The graph forms
                    // ∂kᵀ = q_sᵀ·∂s; each element is the same chain of fused multiply-adds
                    // over the same L products either way — gemm's depth blocks depend on
                    // the depth alone — so the same bits.)
                    // SAFETY: the destinations are this pair's own q and k columns of
                    // `out`; the sources are scratch or read-only inputs.
                    #[allow(unsafe_code)]
                    unsafe {
                        gemm_into(l, dh, l, at(0), ds, View::of(x, base + d, 3 * d, 1));
                        gemm_into(l, dh, l, at(d), ds.transposed(), View::of(sc.q, 0, dh, 1));
                    }
                    let o = out_addr as *mut f32;
                    for i in 0..l {
                        // SAFETY: row i of this pair's q columns in `out` (inside its B·L·3D
                        // elements; no other pair writes them), written by the gemm above.
                        #[allow(unsafe_code)]
                        let row =
                            unsafe { std::slice::from_raw_parts_mut(o.add(base + i * 3 * d), dh) };
                        for v in row {
                            // candle's affine backward: g · scale + 0.
                            *v = *v * self.scale + 0.0;
                        }
                    }
                })
            })
        });
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }
}
