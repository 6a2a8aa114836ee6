//! Layer normalisation (with its scale and shift when nothing is differentiated) and softmax
//! over the last dimension on CUDA, forward and backward: one warp per row, compiled at first use
//! with NVRTC (the library candle already loads), as the selective scan's kernels are
//! (`nn/scan/cuda.rs`; the module cache is `nn/cuda_nvrtc.rs`).
//!
//! Why kernels: without them these ops were built on CUDA from candle's primitives — a layer norm
//! is ~8 launches (sum, divide, subtract, square, sum, add, sqrt, divide) through candle's
//! broadcasting element-wise path, a biased softmax ~6 — and an NT-v2 50m fine-tuning step on an
//! H200 spent most of its forward there (docs/benchmarks.md, "GPU (CUDA), H200, 2026-11-27
//! (second session)": `badd`/`bmul`/`bsub`/`bdiv` at 50–130 µs a launch on 11 MB tensors).
//!
//! The arithmetic is the CPU kernels' (two-pass mean and variance, max-subtracted softmax); sums
//! are per lane then a fixed shuffle tree, so a step gives the same bytes every time on one GPU
//! (not the CPU's bits: its sums run over sixteen lanes).

// Kernel launches are foreign calls (cudarc marks them unsafe); the arguments are checked
// against the kernels' signatures by hand, and every buffer is sized here from the layouts.
#![allow(unsafe_code)]

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::WrapErr;
use candle_core::{CudaDevice, CudaStorage, Layout, Result};

use super::cuda_nvrtc::{input, kernel_output};

// NVRTC compiles without the C headers: 64-bit indices are `idx_t`, -inf is spelt as its bits.
const SOURCE: &str = r#"
typedef unsigned long long idx_t;

__device__ float warp_sum(float v) {
    for (int k = 16; k > 0; k >>= 1) v += __shfl_xor_sync(0xffffffff, v, k);
    return v;
}

__device__ float warp_max(float v) {
    for (int k = 16; k > 0; k >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, k));
    return v;
}

// The mean and 1/sqrt(var + eps) of a row, every lane getting both.
__device__ void row_stats(const float* x, int n, float eps, int lane, float* mean, float* inv) {
    float s = 0.f;
    for (int j = lane; j < n; j += 32) s += x[j];
    float m = warp_sum(s) / n;
    float v = 0.f;
    for (int j = lane; j < n; j += 32) { float d = x[j] - m; v += d * d; }
    *mean = m;
    *inv = 1.f / sqrtf(warp_sum(v) / n + eps);
}

extern "C" __global__ void normalize_fwd(const float* __restrict__ x, float* __restrict__ y,
        int rows, int n, float eps) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* xr = x + (idx_t)row * n;
    float* yr = y + (idx_t)row * n;
    float mean, inv;
    row_stats(xr, n, eps, lane, &mean, &inv);
    for (int j = lane; j < n; j += 32) yr[j] = (xr[j] - mean) * inv;
}

// x̂ · gamma + beta per row, for a model that is not being differentiated (no x̂ kept).
extern "C" __global__ void normalize_affine_fwd(const float* __restrict__ x,
        const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ y,
        int rows, int n, float eps) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* xr = x + (idx_t)row * n;
    float* yr = y + (idx_t)row * n;
    float mean, inv;
    row_stats(xr, n, eps, lane, &mean, &inv);
    for (int j = lane; j < n; j += 32) yr[j] = (xr[j] - mean) * inv * gamma[j] + beta[j];
}

// dx = (g - mean(g) - y * mean(g * y)) / sqrt(var + eps), y = the normalised x.
extern "C" __global__ void normalize_bwd(const float* __restrict__ x, const float* __restrict__ y,
        const float* __restrict__ g, float* __restrict__ dx, int rows, int n, float eps) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    idx_t at = (idx_t)row * n;
    float mean, inv;
    row_stats(x + at, n, eps, lane, &mean, &inv);
    float sg = 0.f, sgy = 0.f;
    for (int j = lane; j < n; j += 32) { sg += g[at + j]; sgy += g[at + j] * y[at + j]; }
    float mg = warp_sum(sg) / n, mgy = warp_sum(sgy) / n;
    for (int j = lane; j < n; j += 32) dx[at + j] = (g[at + j] - mg - y[at + j] * mgy) * inv;
}

// softmax(x + bias) per row; the bias row of row r is bias + (r / per) * n, none when per == 0.
extern "C" __global__ void softmax_fwd(const float* __restrict__ x, const float* __restrict__ bias,
        float* __restrict__ y, int rows, int n, int per) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* xr = x + (idx_t)row * n;
    const float* br = per ? bias + (idx_t)(row / per) * n : 0;
    float* yr = y + (idx_t)row * n;
    float m = __int_as_float(0xff800000);
    for (int j = lane; j < n; j += 32) m = fmaxf(m, xr[j] + (br ? br[j] : 0.f));
    m = warp_max(m);
    float s = 0.f;
    for (int j = lane; j < n; j += 32) {
        float e = expf(xr[j] + (br ? br[j] : 0.f) - m);
        yr[j] = e;
        s += e;
    }
    float inv = 1.f / warp_sum(s);
    for (int j = lane; j < n; j += 32) yr[j] *= inv;
}

// dx = y * (g - sum(g * y)) per row.
extern "C" __global__ void softmax_bwd(const float* __restrict__ y, const float* __restrict__ g,
        float* __restrict__ dx, int rows, int n) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    idx_t at = (idx_t)row * n;
    float s = 0.f;
    for (int j = lane; j < n; j += 32) s += g[at + j] * y[at + j];
    s = warp_sum(s);
    for (int j = lane; j < n; j += 32) dx[at + j] = y[at + j] * (g[at + j] - s);
}
"#;

fn function(dev: &CudaDevice, name: &str) -> Result<CudaFunction> {
    super::cuda_nvrtc::function(dev, SOURCE, &[], name, "row kernels")
}

/// Rows of `n` elements, four rows (warps) a block.
fn per_row(rows: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (rows.div_ceil(4) as u32, 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// (rows, n) of a layout whose last dimension is a row, as the kernels' ints.
fn rows_of(l: &Layout, what: &str) -> Result<(usize, i32, i32)> {
    let n = l.dims().last().copied().unwrap_or(1).max(1);
    let rows = l.shape().elem_count() / n;
    let int = |v: usize| {
        i32::try_from(v).map_err(|_| candle_core::Error::Msg(format!("{what}: {v} > i32")))
    };
    Ok((rows, int(rows)?, int(n)?))
}

/// x̂ = (x − mean) / √(var + eps) per row.
pub(crate) fn normalize(s: &CudaStorage, l: &Layout, eps: f64) -> Result<CudaStorage> {
    let dev = s.device().clone();
    let x = input(s, l, "layer norm")?;
    let (rows, rows_i, n) = rows_of(l, "layer norm")?;
    let y = kernel_output(&dev, l.shape().elem_count())?;
    let func = function(&dev, "normalize_fwd")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    let eps = eps as f32;
    launch.arg(&x).arg(&y).arg(&rows_i).arg(&n).arg(&eps);
    unsafe { launch.launch(per_row(rows)) }.w()?;
    Ok(CudaStorage::wrap_cuda_slice(y, dev))
}

/// x̂ ⊙ γ + β per row in one pass (the inference layer norm).
pub(crate) fn normalize_affine(
    (sx, lx): (&CudaStorage, &Layout),
    (sg, lg): (&CudaStorage, &Layout),
    (sb, lb): (&CudaStorage, &Layout),
    eps: f64,
) -> Result<CudaStorage> {
    let dev = sx.device().clone();
    let what = "layer norm";
    let (x, g, b) = (
        input(sx, lx, what)?,
        input(sg, lg, what)?,
        input(sb, lb, what)?,
    );
    let (rows, rows_i, n) = rows_of(lx, what)?;
    if lg.shape().elem_count() != n as usize || lb.shape().elem_count() != n as usize {
        candle_core::bail!(
            "{what}: rows of {n}, γ of {:?}, β of {:?}",
            lg.dims(),
            lb.dims()
        );
    }
    let y = kernel_output(&dev, lx.shape().elem_count())?;
    let func = function(&dev, "normalize_affine_fwd")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    let eps = eps as f32;
    launch.arg(&x).arg(&g).arg(&b).arg(&y);
    launch.arg(&rows_i).arg(&n).arg(&eps);
    unsafe { launch.launch(per_row(rows)) }.w()?;
    Ok(CudaStorage::wrap_cuda_slice(y, dev))
}

/// The layer norm's dx from x, x̂ and the gradient of x̂.
pub(crate) fn normalize_backward(
    (sx, lx): (&CudaStorage, &Layout),
    (sy, ly): (&CudaStorage, &Layout),
    (sg, lg): (&CudaStorage, &Layout),
    eps: f64,
) -> Result<CudaStorage> {
    let dev = sx.device().clone();
    let what = "layer norm backward";
    let (x, y, g) = (
        input(sx, lx, what)?,
        input(sy, ly, what)?,
        input(sg, lg, what)?,
    );
    let (rows, rows_i, n) = rows_of(lx, what)?;
    let dx = kernel_output(&dev, lx.shape().elem_count())?;
    let func = function(&dev, "normalize_bwd")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    let eps = eps as f32;
    launch.arg(&x).arg(&y).arg(&g).arg(&dx);
    launch.arg(&rows_i).arg(&n).arg(&eps);
    unsafe { launch.launch(per_row(rows)) }.w()?;
    Ok(CudaStorage::wrap_cuda_slice(dx, dev))
}

/// softmax(x + bias) per row; `bias` rows tile the score rows (`per` score rows to a bias row).
pub(crate) fn softmax(
    (sx, lx): (&CudaStorage, &Layout),
    bias: Option<((&CudaStorage, &Layout), usize)>,
) -> Result<CudaStorage> {
    let dev = sx.device().clone();
    let x = input(sx, lx, "softmax")?;
    let (rows, rows_i, n) = rows_of(lx, "softmax")?;
    let (b, per) = match bias {
        Some(((sb, lb), per)) => (input(sb, lb, "softmax bias")?, per),
        // No bias: the kernel reads none when per is 0; x stands in for the pointer.
        None => (input(sx, lx, "softmax")?, 0),
    };
    let per =
        i32::try_from(per).map_err(|_| candle_core::Error::Msg("softmax: rows > i32".into()))?;
    let y = kernel_output(&dev, lx.shape().elem_count())?;
    let func = function(&dev, "softmax_fwd")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    launch
        .arg(&x)
        .arg(&b)
        .arg(&y)
        .arg(&rows_i)
        .arg(&n)
        .arg(&per);
    unsafe { launch.launch(per_row(rows)) }.w()?;
    Ok(CudaStorage::wrap_cuda_slice(y, dev))
}

/// The softmax's dx from its output y and the gradient of y.
pub(crate) fn softmax_backward(
    (sy, ly): (&CudaStorage, &Layout),
    (sg, lg): (&CudaStorage, &Layout),
) -> Result<CudaStorage> {
    let dev = sy.device().clone();
    let what = "softmax backward";
    let (y, g) = (input(sy, ly, what)?, input(sg, lg, what)?);
    let (rows, rows_i, n) = rows_of(ly, what)?;
    let dx = kernel_output(&dev, ly.shape().elem_count())?;
    let func = function(&dev, "softmax_bwd")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    launch.arg(&y).arg(&g).arg(&dx).arg(&rows_i).arg(&n);
    unsafe { launch.launch(per_row(rows)) }.w()?;
    Ok(CudaStorage::wrap_cuda_slice(dx, dev))
}
