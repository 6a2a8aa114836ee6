//! Multi-head self-attention as one op each way on the CPU (f32): from the packed projections
//! `qkv` `[B, L, 3·H·Dh]` (a linear layer's output, q, k and v side by side, heads inside each)
//! to the context `[B, L, H·Dh]`, and back to the gradient of `qkv`.
//!
//! The graph this replaces — split and permute `qkv` into `[B, H, L, Dh]` (a copy), scale q (a
//! pass), q·kᵀ, biased softmax, dropout, p·v, transpose the context back (a copy) — wrote every
//! intermediate to memory and read it back: at L 512 the scores alone are 64 MB a layer, written
//! by the product, read and written by the softmax and again by the dropout, read by p·v. Here
//! each (batch, head) is one task on the rayon threads, its L × L block stays in the core's
//! cache from product to product, q, k and v are read where the projection wrote them and the
//! context is written where the output projection reads it. A training forward keeps only the
//! softmax probabilities and the dropout decisions, a byte each (the backward pass needs them;
//! the dropped probabilities and the scaled queries are recomputed there), an inference forward
//! keeps nothing. The dropout words are drawn per pair where they are used (`DropoutRng::
//! reserve`: the same words as one mask drawn for the whole tensor).
//!
//! Every number is the one the unfused graph computes: the same gemm (one single-threaded call
//! per product, the same m, n, k and the same orientation of each output, so the same kernel
//! and the same order of the sums), the same row softmax and dropout products, the same
//! `x · scale + 0` candle's affine op computes. The tests compare every bit of the outputs and
//! gradients with the graph. Other devices, genetic attention and rotary positions use the graph.

use std::sync::{Arc, Mutex};

use candle_core::{CpuStorage, DType, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::dropout::{loops as dropout, DropoutRng, KeepWords};
use super::kernels::{contiguous_slice, cpu_fast_path, written_by};
use super::softmax::rows_f32::{softmax_bwd_row, softmax_row_biased};

/// Whether [`fused_self_attention`] runs for these projections: f32 on the CPU, at least two
/// positions and two features per head (below that gemm takes vector paths that depend on the
/// operands' strides, and the graph's bits would not be kept).
pub fn fused_attention_applies(qkv: &Tensor, heads: usize) -> bool {
    let Ok((_, l, three_d)) = qkv.dims3() else {
        return false;
    };
    cpu_fast_path(qkv.device())
        && qkv.dtype() == DType::F32
        && heads > 0
        && three_d % (3 * heads) == 0
        && three_d / (3 * heads) >= 2
        && l >= 2
}

/// softmax(q·kᵀ / √Dh + bias) · v per head, with dropout on the probabilities when `rng` is
/// given: `qkv` `[B, L, 3·D]` (q, k, v, each `[H, Dh]` per position), `bias` `[B, 1, 1, L]` (0 at
/// tokens, −1e9 at padding; no gradient) → `[B, L, D]`. Check [`fused_attention_applies`] first.
pub fn fused_self_attention(
    qkv: &Tensor,
    bias: &Tensor,
    heads: usize,
    dropout: f64,
    rng: Option<&DropoutRng>,
) -> Result<Tensor> {
    let (b, l, three_d) = qkv.dims3()?;
    if !fused_attention_applies(qkv, heads) {
        candle_core::bail!("fused attention: {:?} with {heads} heads", qkv.dims())
    }
    let head_dim = three_d / 3 / heads;
    let bias: Vec<f32> = bias.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
    if bias.len() != b * l {
        candle_core::bail!("fused attention: a bias of {} for {b} × {l}", bias.len())
    }
    // Reserved here, where the graph's dropout on the probabilities drew its mask: each pair
    // draws its own L × L words where it uses them (in parallel, in cache), the same words.
    let keep = match rng {
        Some(r) if dropout > 0.0 => Some(r.reserve(b * heads * l * l, dropout)),
        _ => None,
    };
    let op = FusedAttention {
        shape: Heads {
            batch: b,
            len: l,
            heads,
            head_dim,
        },
        // As `q * scale` (candle's affine op) rounds it.
        scale: (1.0 / (head_dim as f64).sqrt()) as f32,
        bias: Arc::new(bias),
        keep,
        keep_probs: qkv.track_op(),
        probs: Mutex::new(None),
        kept: Mutex::new(None),
    };
    qkv.contiguous()?.apply_op1(op)
}

#[derive(Clone, Copy)]
struct Heads {
    batch: usize,
    len: usize,
    heads: usize,
    head_dim: usize,
}

impl Heads {
    fn d(&self) -> usize {
        self.heads * self.head_dim
    }

    /// Where head `h` of sample `b` starts in `qkv`'s q block (its k block is `d()` further, v
    /// `2·d()`), rows `3·d()` apart.
    fn qkv_offset(&self, b: usize, h: usize) -> usize {
        b * self.len * 3 * self.d() + h * self.head_dim
    }

    fn check(&self, layout: &Layout, what: &str) -> Result<()> {
        if layout.dims() != [self.batch, self.len, 3 * self.d()] {
            candle_core::bail!("{what}: input {:?}", layout.dims())
        }
        Ok(())
    }
}

/// Bytes per element.
const F32: usize = std::mem::size_of::<f32>();

/// A matrix inside a buffer: its first element's address and its row and column strides.
#[derive(Clone, Copy)]
struct View {
    addr: usize,
    rs: usize,
    cs: usize,
}

impl View {
    fn of(s: &[f32], offset: usize, rs: usize, cs: usize) -> Self {
        Self {
            addr: s.as_ptr() as usize + offset * F32,
            rs,
            cs,
        }
    }

    /// A destination: its address taken from a mutable borrow.
    fn of_mut(s: &mut [f32], rs: usize, cs: usize) -> Self {
        Self {
            addr: s.as_mut_ptr() as usize,
            rs,
            cs,
        }
    }

    fn transposed(self) -> Self {
        Self {
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }
}

/// `dst` (m × n) = `lhs` (m × k) · `rhs` (k × n), one single-threaded gemm call, `dst` written
/// (not read): the call `nn::matmul::products` makes for one batch element.
///
/// SAFETY (the callers'): every view lies inside a live buffer of f32 for the extents given,
/// and no other thread reads or writes `dst`'s elements during the call.
#[allow(unsafe_code)]
unsafe fn gemm_into(m: usize, n: usize, k: usize, dst: View, lhs: View, rhs: View) {
    gemm::gemm(
        m,
        n,
        k,
        dst.addr as *mut f32,
        dst.cs as isize,
        dst.rs as isize,
        false,
        lhs.addr as *const f32,
        lhs.cs as isize,
        lhs.rs as isize,
        rhs.addr as *const f32,
        rhs.cs as isize,
        rhs.rs as isize,
        0.0,
        1.0,
        false,
        false,
        false,
        gemm::Parallelism::None,
    )
}

/// Writes the `len` × `head_dim` queries of one head, scaled as candle's affine op computes
/// `q * scale` (`x · scale + 0`), into `dst`.
fn scaled_queries(x: &[f32], s: Heads, b: usize, h: usize, scale: f32, dst: &mut [f32]) {
    let (dh, row) = (s.head_dim, 3 * s.d());
    let base = s.qkv_offset(b, h);
    for (i, out) in dst.chunks_exact_mut(dh).take(s.len).enumerate() {
        for (o, &v) in out.iter_mut().zip(&x[base + i * row..][..dh]) {
            *o = v * scale + 0.0;
        }
    }
}

/// A thread's working buffers, kept for the life of the thread (rayon's threads live as long
/// as the process): allocating them per call had every call fault fresh, kernel-zeroed pages in
/// (a quarter of the op's time at L 512). At L 512 they hold 3 MB per thread.
#[derive(Default)]
struct Scratch {
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    q: Vec<f32>,
    m: Vec<f32>,
    w: Vec<u32>,
    k: Vec<u8>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// One pair's buffers: `a`, `b`, `c` L × L (scores or probabilities, dropped probabilities,
/// their gradients), `q` L × Dh (scaled queries). Their contents are
/// whatever an earlier pair left: every use writes before it reads.
struct Buffers<'a> {
    a: &'a mut [f32],
    b: &'a mut [f32],
    c: &'a mut [f32],
    q: &'a mut [f32],
    /// L × L dropout mask values (1/(1 − p) or 0).
    m: &'a mut [f32],
    /// L × L dropout words and decisions (a dropping forward pass).
    w: &'a mut [u32],
    k: &'a mut [u8],
}

impl Scratch {
    /// `dropout`: a forward pass that drops probabilities; `backward`: the backward pass.
    fn buffers(&mut self, s: Heads, dropout: bool, backward: bool) -> Buffers<'_> {
        fn fit<T: Copy + Default>(v: &mut Vec<T>, n: usize) -> &mut [T] {
            if v.len() < n {
                v.resize(n, T::default());
            }
            &mut v[..n]
        }
        let (ll, ld) = (s.len * s.len, s.len * s.head_dim);
        let when = |n: usize, needed: bool| if needed { n } else { 0 };
        Buffers {
            a: fit(&mut self.a, ll),
            b: fit(&mut self.b, when(ll, dropout || backward)),
            c: fit(&mut self.c, when(ll, backward)),
            q: fit(&mut self.q, ld),
            m: fit(&mut self.m, when(ll, dropout)),
            w: fit(&mut self.w, when(ll, dropout && !backward)),
            k: fit(&mut self.k, when(ll, dropout && !backward)),
        }
    }
}

fn locked<T>(m: &Mutex<T>) -> Result<std::sync::MutexGuard<'_, T>> {
    m.lock()
        .map_err(|_| candle_core::Error::Msg("fused attention: a thread panicked".into()))
}

struct FusedAttention {
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

/// The gradient of `qkv` from the context's gradient `g` `[B, L, D]`, per (batch, head):
/// ∂v = pᵀ·g, ∂p = g·vᵀ, ∂y = ∂p ⊙ mask, ∂s = y ⊙ (∂y − Σ ∂y ⊙ y), ∂q = (∂s·k) · scale,
/// ∂k = (q_sᵀ·∂s)ᵀ — each product as the graph's backward forms it.
struct FusedAttentionBackward {
    shape: Heads,
    scale: f32,
    probs: Arc<Vec<f32>>,
    /// The kept dropout decisions (a byte per probability) and 1/(1 − p).
    dropout: Option<(Arc<Vec<u8>>, f32)>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::kernels::test_support::{randn, value_and_grad_bits};
    use crate::nn::{attention_bias, batched_matmul, maybe_dropout, softmax_last_dim_biased};
    use candle_core::{Device, Var};

    /// The graph `SelfAttention` runs without the fused op (backbones/transformer/attention.rs).
    fn graph(
        qkv: &Tensor,
        bias: &Tensor,
        heads: usize,
        p: f64,
        rng: Option<&DropoutRng>,
    ) -> Tensor {
        let (b, l, three_d) = qkv.dims3().unwrap();
        let dh = three_d / 3 / heads;
        let qkv = qkv
            .reshape((b, l, 3, heads, dh))
            .unwrap()
            .permute((2, 0, 3, 1, 4))
            .unwrap()
            .contiguous()
            .unwrap();
        let q = (qkv.get(0).unwrap() * (1.0 / (dh as f64).sqrt())).unwrap();
        let (k, v) = (qkv.get(1).unwrap(), qkv.get(2).unwrap());
        let s = batched_matmul(&q, &k.t().unwrap()).unwrap();
        let y = softmax_last_dim_biased(&s, bias).unwrap();
        let y = maybe_dropout(&y, p, rng).unwrap();
        batched_matmul(&y, &v)
            .unwrap()
            .transpose(1, 2)
            .unwrap()
            .reshape((b, l, three_d / 3))
            .unwrap()
    }

    #[test]
    fn fused_attention_is_the_graph_bit_for_bit_values_and_gradients() {
        // Sizes around gemm's blocks and the softmax's eight lanes; padding; with and without
        // dropout.
        for (b, l, heads, dh, p) in [
            (2, 7, 3, 5, 0.0),
            (2, 9, 2, 2, 0.2),
            (3, 72, 4, 32, 0.1),
            (1, 130, 2, 16, 0.3),
        ] {
            let d = heads * dh;
            let x = randn(&[b, l, 3 * d], 1).to_dtype(DType::F32).unwrap();
            let qkv = Var::from_tensor(&x).unwrap();
            let mut m = vec![1f32; b * l];
            m[l - l / 3..l].fill(0.0); // the first sample ends in padding
            let mask = Tensor::from_vec(m, (b, l), &Device::Cpu).unwrap();
            let bias = attention_bias(&mask, DType::F32).unwrap();
            let w = randn(&[b, l, d], 2).to_dtype(DType::F32).unwrap();
            let r1 = DropoutRng::new(4);
            let r2 = DropoutRng::new(4);
            let want = graph(qkv.as_tensor(), &bias, heads, p, Some(&r1));
            let got = fused_self_attention(qkv.as_tensor(), &bias, heads, p, Some(&r2)).unwrap();
            assert_eq!(
                value_and_grad_bits(&got, &w, &[&qkv]),
                value_and_grad_bits(&want, &w, &[&qkv]),
                "b {b} l {l} heads {heads} dh {dh} p {p}"
            );
            // The stream moved past the same words: the next dropout draws the same mask.
            assert_eq!(r1.mask(100, 0.5), r2.mask(100, 0.5));
            // Inference (nothing tracked, nothing kept): the same values.
            let plain = fused_self_attention(&x, &bias, heads, p, None).unwrap();
            let want = graph(&x, &bias, heads, p, None);
            let bits = |t: &Tensor| -> Vec<u32> {
                let v: Vec<f32> = t.flatten_all().unwrap().to_vec1().unwrap();
                v.iter().map(|v| v.to_bits()).collect()
            };
            assert_eq!(bits(&plain), bits(&want));
        }
    }

    #[test]
    fn shapes_the_fused_op_cannot_keep_bits_for_are_left_to_the_graph() {
        let t = |dims: &[usize]| Tensor::zeros(dims, DType::F32, &Device::Cpu).unwrap();
        assert!(fused_attention_applies(&t(&[2, 8, 24]), 4));
        assert!(!fused_attention_applies(&t(&[2, 8, 24]), 8)); // one feature per head
        assert!(!fused_attention_applies(&t(&[2, 1, 24]), 4)); // one position
        assert!(!fused_attention_applies(&t(&[2, 8, 25]), 4)); // not 3 · heads · Dh
        let f64s = Tensor::zeros((2, 8, 24), DType::F64, &Device::Cpu).unwrap();
        assert!(!fused_attention_applies(&f64s, 4));
    }
}
