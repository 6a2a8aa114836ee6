//! Building blocks every model family shares.
//!
//! candle-nn's fast softmax and layer-norm kernels have no backward pass: training through them
//! silently stops the gradient. The ops here have one. On the CPU they are fused custom ops
//! (forward and backward each one pass over the data, rows in parallel); on other devices they
//! fall back to compositions of autograd-capable candle primitives. Both paths are checked
//! against finite differences ([`gradcheck`]).
//!
//! - [`linear`]: a linear layer whose product and bias add (and their backward) are one op.
//! - [`layer_norm`], [`softmax`]: the differentiable kernels above; [`gelu`]: GELU (erf form)
//!   one vectorised pass each way (within 2.2e-7 of the exact values; not candle's bits).
//! - [`matmul`]: attention's batched products, the batch spread over the threads;
//!   [`attention`]: standard multi-head attention as one op each way (same bits as the graph).
//! - [`masking`]: padding masks (attention bias, masked mean and max).
//! - [`deeplift`]: DeepLIFT's rules (rescale, midpoint, layer norm, max pooling) for attribution
//!   against references, switched on by a scope.
//! - [`scan`]: the selective scan of Mamba-style state-space layers (CPU op, CUDA kernels);
//!   [`depthwise_conv`]: the short causal convolution before it (the bi-strand and Caduceus
//!   families' mixers).
//! - [`gated`]: the published backbones' gated feed-forward unit (SwiGLU, GEGLU); [`rotary`]:
//!   rotary positions — one CUDA kernel each way, candle's primitives elsewhere.
//! - [`dropout`]: seeded dropout; [`init`]: seeded initialisation.
//!
//! Every custom op here (and the few beside their model), its CUDA path or primitive fallback
//! and the test that checks it: the table in docs/engine.md, "The fused ops and their CUDA
//! paths", which `tests/device_paths.rs` checks against this source.

#[cfg(feature = "cuda")]
mod cuda_elementwise;
#[cfg(feature = "cuda")]
mod cuda_nvrtc;
#[cfg(feature = "cuda")]
mod cuda_rows;
pub(crate) mod kernels;

pub mod attention;
pub mod deeplift;
pub mod depthwise_conv;
pub mod dropout;
pub mod gated;
pub mod gelu;
pub mod gradcheck;
pub mod init;
pub mod layer_norm;
pub mod linear;
pub mod masking;
pub mod matmul;
pub mod rotary;
pub mod scan;
pub mod softmax;
pub mod softplus;

pub use attention::{fused_attention_applies, fused_self_attention};
pub use dropout::{maybe_dropout, residual_dropout, DropoutRng};
pub use gated::{gated_unit, GateActivation};
pub use gelu::gelu;
pub use kernels::force_primitive_ops;
pub use layer_norm::{normalize_last_dim, normalize_last_dim_primitive, LayerNorm};
pub use linear::{add_bias, sum_rows, Linear};
pub use masking::{attention_bias, masked_max, masked_mean, MASK_BIAS};
pub use matmul::batched_matmul;
pub use rotary::rotate_half;
pub use softmax::{softmax_last_dim, softmax_last_dim_biased, softmax_last_dim_primitive};
pub use softplus::softplus;
