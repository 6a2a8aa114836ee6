//! The forward op: per (batch, head), q·kᵀ, the biased softmax, dropout, ·v.

use std::sync::{Arc, Mutex};

use candle_core::{CpuStorage, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::backward::FusedAttentionBackward;
use super::pair::{gemm_into, scaled_queries, View, F32, SCRATCH};
use super::Heads;
use crate::nn::dropout::{loops as dropout, KeepWords};
use crate::nn::kernels::{contiguous_slice, written_by};
use crate::nn::softmax::rows_f32::softmax_row_biased;

pub(super) struct FusedAttention {
    shape: Heads,
    scale: f32,
    /// `[B, L]`.
    bias: Arc<Vec<f32>>,
    /// The dropout words of the probabilities (`[B, H, L, L]` of them) when training.
    keep: Option<KeepWords>,
    /// Whether the forward pass keeps the probabilities for a backward pass.
    keep_probs: bool,
    /// `[B, H, L, L]`: the softmax probabilities (before dropout), kept by a training forward.
    probs: Mutex<Option<Arc<Vec<f32>>>>,
    /// The dropout decisions, a byte per probability (1 = kept), kept with the probabilities.
    kept: Mutex<Option<Arc<Vec<u8>>>>,
}

impl FusedAttention {
    /// `bias` `[B, L]`; `keep`: the probabilities' dropout words when training; `keep_probs`:
    /// whether a backward pass will follow (the forward then keeps what it needs).
    pub(super) fn new(
        shape: Heads,
        scale: f32,
        bias: Vec<f32>,
        keep: Option<KeepWords>,
        keep_probs: bool,
    ) -> Self {
        Self {
            shape,
            scale,
            bias: Arc::new(bias),
            keep,
            keep_probs,
            probs: Mutex::new(None),
            kept: Mutex::new(None),
        }
    }
}

impl candle_core::CustomOp1 for FusedAttention {
    fn name(&self) -> &'static str {
        "luminome-fused-attention"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(x) = storage else {
            candle_core::bail!("fused attention: f32 only")
        };
        let s = self.shape;
        s.check(layout, "fused attention")?;
        let x = contiguous_slice(x, layout, "fused attention")?;
        let (l, dh, d) = (s.len, s.head_dim, s.d());
        let ll = l * l;
        let pairs = s.batch * s.heads;
        let keep = self.keep_probs;
        let mut probs: Vec<f32> = Vec::with_capacity(if keep { pairs * ll } else { 0 });
        let probs_addr = probs.as_mut_ptr() as usize;
        let mut kept: Vec<u8> = if keep && self.keep.is_some() {
            vec![0; pairs * ll]
        } else {
            Vec::new()
        };
        let kept_addr = kept.as_mut_ptr() as usize;
        let store_kept = !kept.is_empty();
        let out = written_by(s.batch * l * d, |out: &mut [f32]| {
            let out_addr = out.as_mut_ptr() as usize;
            (0..pairs).into_par_iter().for_each(|bh| {
                SCRATCH.with_borrow_mut(|scratch| {
                    let sc = scratch.buffers(s, self.keep.is_some(), false);
                    let (b, h) = (bh / s.heads, bh % s.heads);
                    let base = s.qkv_offset(b, h);
                    scaled_queries(x, s, b, h, self.scale, sc.q);
                    let y: &mut [f32] = if keep {
                        // SAFETY: pair `bh` alone writes its L × L block of `probs`, whose
                        // capacity covers every pair's.
                        #[allow(unsafe_code)]
                        unsafe {
                            std::slice::from_raw_parts_mut(
                                (probs_addr as *mut f32).add(bh * ll),
                                ll,
                            )
                        }
                    } else {
                        sc.a
                    };
                    // SAFETY: y is this pair's L × L block, q this task's L × Dh buffer, k
                    // lies in `x` (Dh columns of L rows 3·D apart).
                    #[allow(unsafe_code)]
                    unsafe {
                        gemm_into(
                            l,
                            l,
                            dh,
                            View::of_mut(y, l, 1),
                            View::of(sc.q, 0, dh, 1),
                            View::of(x, base + d, 3 * d, 1).transposed(),
                        )
                    };
                    let bias = &self.bias[b * l..][..l];
                    for row in y.chunks_exact_mut(l) {
                        softmax_row_biased(row, bias);
                    }
                    let p: &[f32] = match &self.keep {
                        Some(words) => {
                            words.draw(bh * ll, sc.w);
                            let decisions: &mut [u8] = if store_kept {
                                // SAFETY: pair `bh` alone writes its L × L bytes of `kept`.
                                #[allow(unsafe_code)]
                                unsafe {
                                    std::slice::from_raw_parts_mut(
                                        (kept_addr as *mut u8).add(bh * ll),
                                        ll,
                                    )
                                }
                            } else {
                                sc.k
                            };
                            dropout::decide(sc.w, words.threshold, words.scale, decisions, sc.m);
                            dropout::product(y, sc.m, sc.b);
                            sc.b
                        }
                        None => y,
                    };
                    // SAFETY: p is L × L, v lies in `x`; the pair writes only its own head's
                    // Dh columns of sample b's L rows of `out` (B·L·D elements), which no
                    // other pair writes.
                    #[allow(unsafe_code)]
                    unsafe {
                        gemm_into(
                            l,
                            dh,
                            l,
                            View {
                                addr: out_addr + (b * l * d + h * dh) * F32,
                                rs: d,
                                cs: 1,
                            },
                            View::of(p, 0, l, 1),
                            View::of(x, base + 2 * d, 3 * d, 1),
                        )
                    };
                })
            })
        });
        if keep {
            // SAFETY: every pair wrote its whole block above.
            #[allow(unsafe_code)]
            unsafe {
                probs.set_len(pairs * ll)
            };
            *locked(&self.probs)? = Some(Arc::new(probs));
            *locked(&self.kept)? = store_kept.then(|| Arc::new(kept));
        }
        Ok((CpuStorage::F32(out), Shape::from_dims(&[s.batch, l, d])))
    }

    fn bwd(&self, qkv: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        let probs = locked(&self.probs)?.clone();
        let Some(probs) = probs else {
            candle_core::bail!("fused attention: backward of a forward that kept no probabilities")
        };
        let kept = locked(&self.kept)?.clone();
        let dropout = match (&self.keep, kept) {
            (Some(words), Some(kept)) => Some((kept, words.scale)),
            (None, _) => None,
            (Some(_), None) => {
                candle_core::bail!("fused attention: backward of a forward that kept no dropout")
            }
        };
        let op = FusedAttentionBackward {
            shape: self.shape,
            scale: self.scale,
            probs,
            dropout,
        };
        Ok(Some(qkv.apply_op2_no_bwd(&grad.contiguous()?, &op)?))
    }
}

fn locked<T>(m: &Mutex<T>) -> Result<std::sync::MutexGuard<'_, T>> {
    m.lock()
        .map_err(|_| candle_core::Error::Msg("fused attention: a thread panicked".into()))
}
