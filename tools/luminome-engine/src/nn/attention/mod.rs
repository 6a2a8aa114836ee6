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
//!
//! Files: this one the entry points and the shape of the heads; `pair` what one (batch, head)
//! task works with (views into the buffers, the gemm call, its thread-kept scratch);
//! `forward` and `backward` the two ops.

mod backward;
mod forward;
mod pair;
#[cfg(test)]
mod tests;

use candle_core::{DType, Layout, Result, Tensor};

use super::dropout::DropoutRng;
use super::kernels::cpu_fast_path;
use forward::FusedAttention;

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
    let shape = Heads {
        batch: b,
        len: l,
        heads,
        head_dim,
    };
    // As `q * scale` (candle's affine op) rounds it.
    let scale = (1.0 / (head_dim as f64).sqrt()) as f32;
    let op = FusedAttention::new(shape, scale, bias, keep, qkv.track_op());
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
