//! Element-wise ops of the published backbones on CUDA, each one kernel each way where candle's
//! primitives take several broadcasting launches: the gated feed-forward unit (`nn/gated.rs`),
//! rotary positions (`nn/rotary.rs`) and the layer norm's scale and shift (`nn/layer_norm.rs`).
//!
//! Why: after the row kernels (`nn/cuda_rows.rs`), an NT-v2 50m fine-tuning step on an H200
//! still ran 2.1× PyTorch's, its GPU time in candle's `bmul`/`badd`/`bsub` kernels and the copies
//! around `narrow` and `cat` (docs/benchmarks.md, "GPU (CUDA), H200"): rotary positions are ~7
//! launches forward and ~15 backward per tensor, SwiGLU and GEGLU ~12 on the widest activation.
//! Here one thread computes one output pair; nothing is reduced, so results do not depend on the
//! launch shape.

// Kernel launches are foreign calls (cudarc marks them unsafe); the arguments are checked
// against the kernels' signatures by hand, and every buffer is sized here from the layouts.
#![allow(unsafe_code)]

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{CudaFunction, PushKernelArg};
use candle_core::cuda_backend::WrapErr;
use candle_core::{CudaDevice, CudaStorage, Layout, Result};

use super::cuda_nvrtc::{input, int, kernel_output, per_item};

// NVRTC compiles without the C headers: 64-bit indices are `idx_t`.
const SOURCE: &str = r#"
typedef unsigned long long idx_t;

// The gate's activation: 0 SiLU, 1 GELU (erf form).
__device__ float act(float a, int kind) {
    if (kind == 0) return a / (1.f + expf(-a));
    return 0.5f * a * (1.f + erff(a * 0.70710678118654752f));
}

__device__ float act_grad(float a, int kind) {
    if (kind == 0) {
        float s = 1.f / (1.f + expf(-a));
        return s * (1.f + a * (1.f - s));
    }
    return 0.5f * (1.f + erff(a * 0.70710678118654752f))
        + a * 0.39894228040143268f * expf(-0.5f * a * a);
}

// y[r, j] = act(g[r, j]) * g[r, f + j] over rows of 2f.
extern "C" __global__ void glu_fwd(const float* __restrict__ g, float* __restrict__ y,
        idx_t items, int f, int kind) {
    idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= items) return;
    idx_t r = i / f;
    int j = (int)(i - r * f);
    const float* gr = g + r * 2 * f;
    y[i] = act(gr[j], kind) * gr[f + j];
}

// dg[r, j] = dy * g[r, f + j] * act'(g[r, j]), dg[r, f + j] = dy * act(g[r, j]).
extern "C" __global__ void glu_bwd(const float* __restrict__ g, const float* __restrict__ dy,
        float* __restrict__ dg, idx_t items, int f, int kind) {
    idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= items) return;
    idx_t r = i / f;
    int j = (int)(i - r * f);
    idx_t at = r * 2 * f;
    float a = g[at + j], b = g[at + f + j], o = dy[i];
    dg[at + j] = o * b * act_grad(a, kind);
    dg[at + f + j] = o * act(a, kind);
}

// Rotary positions, "rotate half": rows of 2h (the last dimension of [B, H, L, 2h]) at position
// r % L; y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin. sign -1 rotates back (the backward).
extern "C" __global__ void rotate_half(const float* __restrict__ x, const float* __restrict__ cos_t,
        const float* __restrict__ sin_t, float* __restrict__ y, idx_t items, int len, int h,
        float sign) {
    idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= items) return;
    idx_t r = i / h;
    int j = (int)(i - r * h);
    idx_t t = (idx_t)(r % len) * h + j;
    float c = cos_t[t], s = sign * sin_t[t];
    idx_t at = r * 2 * h;
    float x1 = x[at + j], x2 = x[at + h + j];
    y[at + j] = x1 * c - x2 * s;
    y[at + h + j] = x2 * c + x1 * s;
}

// y = x * gamma + beta, gamma and beta per column of rows of n.
extern "C" __global__ void scale_shift(const float* __restrict__ x,
        const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ y,
        idx_t items, int n) {
    idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= items) return;
    int j = (int)(i % n);
    y[i] = x[i] * gamma[j] + beta[j];
}
"#;

fn function(dev: &CudaDevice, name: &str) -> Result<CudaFunction> {
    super::cuda_nvrtc::function(dev, SOURCE, &[], name, "element-wise kernels")
}

/// The last dimension of `l`, which must be even, halved, and the number of output items.
fn halves(l: &Layout, what: &str) -> Result<(usize, i32)> {
    let n = l.dims().last().copied().unwrap_or(0);
    if n == 0 || n % 2 != 0 {
        candle_core::bail!("{what}: the last dimension ({n}) must be even and non-zero");
    }
    Ok((l.shape().elem_count() / 2, int(n / 2, what)?))
}

/// act(g₁) ⊙ g₂ of the halves of `g`'s last dimension; `kind` 0 SiLU, 1 GELU.
pub(crate) fn glu(s: &CudaStorage, l: &Layout, kind: i32) -> Result<CudaStorage> {
    let dev = s.device().clone();
    let g = input(s, l, "gated unit")?;
    let (items, f) = halves(l, "gated unit")?;
    let y = kernel_output(&dev, items)?;
    let func = function(&dev, "glu_fwd")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    let items_arg = items as u64;
    launch.arg(&g).arg(&y).arg(&items_arg).arg(&f).arg(&kind);
    unsafe { launch.launch(per_item(items)) }.w()?;
    Ok(CudaStorage::wrap_cuda_slice(y, dev))
}

/// The gated unit's gradient with respect to `g` from `g` and the output's gradient.
pub(crate) fn glu_backward(
    (sg, lg): (&CudaStorage, &Layout),
    (sd, ld): (&CudaStorage, &Layout),
    kind: i32,
) -> Result<CudaStorage> {
    let dev = sg.device().clone();
    let what = "gated unit backward";
    let (g, dy) = (input(sg, lg, what)?, input(sd, ld, what)?);
    let (items, f) = halves(lg, what)?;
    if ld.shape().elem_count() != items {
        candle_core::bail!("{what}: input {:?}, gradient {:?}", lg.dims(), ld.dims());
    }
    let dg = kernel_output(&dev, 2 * items)?;
    let func = function(&dev, "glu_bwd")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    let items_arg = items as u64;
    launch
        .arg(&g)
        .arg(&dy)
        .arg(&dg)
        .arg(&items_arg)
        .arg(&f)
        .arg(&kind);
    unsafe { launch.launch(per_item(items)) }.w()?;
    Ok(CudaStorage::wrap_cuda_slice(dg, dev))
}

/// `x` `[…, L, 2h]` rotated by the tables' first L rows `[L, h]`; `sign` −1 rotates back.
pub(crate) fn rotate_half(
    (sx, lx): (&CudaStorage, &Layout),
    (sc, lc): (&CudaStorage, &Layout),
    (ss, ls): (&CudaStorage, &Layout),
    sign: f32,
) -> Result<CudaStorage> {
    let dev = sx.device().clone();
    let what = "rotary positions";
    let (x, cos, sin) = (
        input(sx, lx, what)?,
        input(sc, lc, what)?,
        input(ss, ls, what)?,
    );
    let (items, h) = halves(lx, what)?;
    let dims = lx.dims();
    let len = if dims.len() >= 2 {
        dims[dims.len() - 2]
    } else {
        1
    };
    if lc.dims() != [len, h as usize] || ls.dims() != lc.dims() {
        candle_core::bail!(
            "{what}: x {dims:?}, tables {:?} / {:?}",
            lc.dims(),
            ls.dims()
        );
    }
    let y = kernel_output(&dev, 2 * items)?;
    let func = function(&dev, "rotate_half")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    let (items_arg, len) = (items as u64, int(len, what)?);
    launch.arg(&x).arg(&cos).arg(&sin).arg(&y);
    launch.arg(&items_arg).arg(&len).arg(&h).arg(&sign);
    unsafe { launch.launch(per_item(items)) }.w()?;
    Ok(CudaStorage::wrap_cuda_slice(y, dev))
}

/// x ⊙ γ + β over rows of γ's length.
pub(crate) fn scale_shift(
    (sx, lx): (&CudaStorage, &Layout),
    (sg, lg): (&CudaStorage, &Layout),
    (sb, lb): (&CudaStorage, &Layout),
) -> Result<CudaStorage> {
    let dev = sx.device().clone();
    let what = "layer norm affine";
    let (x, g, b) = (
        input(sx, lx, what)?,
        input(sg, lg, what)?,
        input(sb, lb, what)?,
    );
    let n = lg.shape().elem_count();
    let items = lx.shape().elem_count();
    if n == 0 || lb.shape().elem_count() != n || items % n != 0 {
        candle_core::bail!(
            "{what}: x {:?}, γ {:?}, β {:?}",
            lx.dims(),
            lg.dims(),
            lb.dims()
        );
    }
    let y = kernel_output(&dev, items)?;
    let func = function(&dev, "scale_shift")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    let (items_arg, n) = (items as u64, int(n, what)?);
    launch
        .arg(&x)
        .arg(&g)
        .arg(&b)
        .arg(&y)
        .arg(&items_arg)
        .arg(&n);
    unsafe { launch.launch(per_item(items)) }.w()?;
    Ok(CudaStorage::wrap_cuda_slice(y, dev))
}
