//! The selective scan on CUDA: the fused op's forward and backward as kernels, compiled at first
//! use with NVRTC (the library candle already loads) for the model's state size N.
//!
//! Why kernels: the primitive fallback runs the recurrence one position at a time from candle
//! ops, ~6 launches per position, direction, layer and strand — on the first GPU run (H200,
//! 2026-11-26) a d 384 × 8 bi-strand model scored 61 SNVs/s that way and its training step took
//! over 24 s. Here one thread runs the whole recurrence of one (row, channel), its N states in
//! registers, the way the CPU kernel runs one block of channels.
//!
//! The same arithmetic as the CPU kernel (`kernels.rs`), with the C library's `expf` (the CPU
//! uses a polynomial exp within 2 ulp). Sums over channels (dB, dC) and rows (dA, dD) are written
//! per thread and reduced by separate kernels in a fixed order — no atomics — so a step gives the
//! same bytes every time on one GPU. The backward keeps every state of the recurrence
//! (`B·L·N·E` floats, as the CPU recomputes them per block) and two arrays of the same size for
//! the dB and dC terms before their sum over channels: 1.2 GB for batch 16 × 512 at E 768, N 16.

// Kernel launches are foreign calls (cudarc marks them unsafe); the arguments are checked
// against the kernels' signatures by hand, and every buffer is sized here from the same dims.
#![allow(unsafe_code)]

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{
    CudaFunction, CudaSlice, CudaView, LaunchConfig, PushKernelArg,
};
use candle_core::cuda_backend::WrapErr;
use candle_core::{CudaDevice, CudaStorage, Layout, Result, Shape};

use super::kernels::Dims;

// NVRTC compiles without the C headers (no size_t): 64-bit indices are `idx_t`.
const SOURCE: &str = r#"
#define N SCAN_N
typedef unsigned long long idx_t;

extern "C" __global__ void scan_forward(const float* __restrict__ xd, const float* __restrict__ bc,
        const float* __restrict__ ad, float* __restrict__ y, int B, int L, int E, int reverse) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * E) return;
    int b = idx / E, e = idx - b * E;
    idx_t size = (idx_t)B * L * E;
    const float* x = xd;
    const float* dl = xd + size;
    float a[N], h[N];
#pragma unroll
    for (int j = 0; j < N; j++) { a[j] = ad[e * (N + 1) + j]; h[j] = 0.f; }
    float d = ad[e * (N + 1) + N];
    for (int s = 0; s < L; s++) {
        int t = reverse ? L - 1 - s : s;
        idx_t i = ((idx_t)b * L + t) * E + e;
        float xt = x[i], dt = dl[i], dvx = dt * xt;
        const float* bt = bc + ((idx_t)b * L + t) * 2 * N;
        float acc = d * xt;
#pragma unroll
        for (int j = 0; j < N; j++) {
            h[j] = expf(dt * a[j]) * h[j] + dvx * bt[j];
            acc += bt[N + j] * h[j];
        }
        y[i] = acc;
    }
}

// One (row, channel) per thread. hs: the states in scan order, [B, L, N, E]; db, dc: the terms of
// dB and dC before their sum over channels, [B, L, N, E] by position; da [B, E, N], dd [B, E]:
// before the sum over rows. out: dx then dDelta, [B, L, E] each.
extern "C" __global__ void scan_backward(const float* __restrict__ p, const float* __restrict__ bc,
        const float* __restrict__ ad, float* __restrict__ hs, float* __restrict__ db,
        float* __restrict__ dc, float* __restrict__ da_rows, float* __restrict__ dd_rows,
        float* __restrict__ out, int B, int L, int E, int reverse) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * E) return;
    int b = idx / E, e = idx - b * E;
    idx_t size = (idx_t)B * L * E;
    const float* x = p;
    const float* dl = p + size;
    const float* dy = p + 2 * size;
    float a[N], h[N], next[N], da[N];
#pragma unroll
    for (int j = 0; j < N; j++) { a[j] = ad[e * (N + 1) + j]; h[j] = 0.f; next[j] = 0.f; da[j] = 0.f; }
    float d = ad[e * (N + 1) + N];
    for (int s = 0; s < L; s++) {
        int t = reverse ? L - 1 - s : s;
        idx_t i = ((idx_t)b * L + t) * E + e;
        float dt = dl[i], dvx = dt * x[i];
        const float* bt = bc + ((idx_t)b * L + t) * 2 * N;
#pragma unroll
        for (int j = 0; j < N; j++) {
            h[j] = expf(dt * a[j]) * h[j] + dvx * bt[j];
            hs[(((idx_t)b * L + s) * N + j) * E + e] = h[j];
        }
    }
    float dd = 0.f;
    for (int s = L - 1; s >= 0; s--) {
        int t = reverse ? L - 1 - s : s;
        idx_t i = ((idx_t)b * L + t) * E + e;
        float xt = x[i], dt = dl[i], dyt = dy[i], dvx = dt * xt;
        const float* bt = bc + ((idx_t)b * L + t) * 2 * N;
        float dxt = dyt * d, ddt = 0.f;
        dd += dyt * xt;
#pragma unroll
        for (int j = 0; j < N; j++) {
            idx_t at = (((idx_t)b * L + s) * N + j) * E + e;
            float ht = hs[at];
            float hprev = s > 0 ? hs[at - (idx_t)N * E] : 0.f;
            float decay = expf(dt * a[j]);
            float dh = dyt * bt[N + j] + next[j];
            float gprev = dh * decay * hprev;
            ddt += gprev * a[j] + dh * bt[j] * xt;
            da[j] += gprev * dt;
            dxt += dh * dt * bt[j];
            next[j] = dh * decay;
            idx_t term = (((idx_t)b * L + t) * N + j) * E + e;
            dc[term] = dyt * ht;
            db[term] = dh * dvx;
        }
        out[i] = dxt;
        out[size + i] = ddt;
    }
#pragma unroll
    for (int j = 0; j < N; j++) da_rows[((idx_t)b * E + e) * N + j] = da[j];
    dd_rows[(idx_t)b * E + e] = dd;
}

// One warp per (row, position, state): the sum over channels of db and dc into dB || dC of out
// (at offset, [B, L, 2N]), lanes then a fixed shuffle tree.
extern "C" __global__ void scan_sum_channels(const float* __restrict__ db,
        const float* __restrict__ dc, float* __restrict__ out, idx_t offset, int rows, int E) {
    int r = blockIdx.x;
    if (r >= rows) return;
    int lane = threadIdx.x;
    const float* pb = db + (idx_t)r * E;
    const float* pc = dc + (idx_t)r * E;
    float sb = 0.f, sc = 0.f;
    for (int e = lane; e < E; e += 32) { sb += pb[e]; sc += pc[e]; }
    for (int k = 16; k > 0; k >>= 1) {
        sb += __shfl_down_sync(0xffffffff, sb, k);
        sc += __shfl_down_sync(0xffffffff, sc, k);
    }
    if (lane == 0) {
        int pos = r / N, j = r - pos * N;
        out[offset + (idx_t)pos * 2 * N + j] = sb;
        out[offset + (idx_t)pos * 2 * N + N + j] = sc;
    }
}

// One thread per (channel, state or D): the sum over rows into dA || dD of out (at offset,
// [E, N + 1]), rows in order.
extern "C" __global__ void scan_sum_rows(const float* __restrict__ da_rows,
        const float* __restrict__ dd_rows, float* __restrict__ out, idx_t offset, int B, int E) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= E * (N + 1)) return;
    int e = idx / (N + 1), j = idx - e * (N + 1);
    float s = 0.f;
    for (int b = 0; b < B; b++)
        s += j < N ? da_rows[((idx_t)b * E + e) * N + j] : dd_rows[(idx_t)b * E + e];
    out[offset + idx] = s;
}
"#;

/// A kernel compiled for the state size `n` (one module per size and CUDA context).
fn function(dev: &CudaDevice, n: usize, name: &str) -> Result<CudaFunction> {
    let options = [format!("-DSCAN_N={n}")];
    crate::nn::cuda_nvrtc::function(dev, SOURCE, &options, name, "selective scan")
}

/// One thread per item, blocks of 128.
fn per_item(items: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (items.div_ceil(128) as u32, 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn input<'a>(s: &'a CudaStorage, l: &Layout, what: &str) -> Result<CudaView<'a, f32>> {
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(s.as_cuda_slice::<f32>()?.slice(a..b)),
        None => candle_core::bail!("selective scan ({what}): input has to be contiguous"),
    }
}

fn as_i32(v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| candle_core::Error::Msg(format!("selective scan: {v} > i32")))
}

/// y `[B, L, E]` from (x‖Δ) `[2, B, L, E]`, (B‖C) `[B, L, 2N]`, (A‖D) `[E, N+1]`.
pub(super) fn forward(
    dims: Dims,
    (s1, l1): (&CudaStorage, &Layout),
    (s2, l2): (&CudaStorage, &Layout),
    (s3, l3): (&CudaStorage, &Layout),
) -> Result<(CudaStorage, Shape)> {
    let dev = s1.device().clone();
    let (xd, bc, ad) = (
        input(s1, l1, "x")?,
        input(s2, l2, "B, C")?,
        input(s3, l3, "A, D")?,
    );
    let (b, l, e) = (as_i32(dims.b)?, as_i32(dims.l)?, as_i32(dims.e)?);
    let reverse = i32::from(dims.is_reverse());
    let y = dev.alloc_zeros::<f32>(dims.b * dims.l * dims.e)?;
    let func = function(&dev, dims.n, "scan_forward")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    launch.arg(&xd).arg(&bc).arg(&ad).arg(&y);
    launch.arg(&b).arg(&l).arg(&e).arg(&reverse);
    unsafe { launch.launch(per_item(dims.b * dims.e)) }.w()?;
    let shape = Shape::from_dims(&[dims.b, dims.l, dims.e]);
    Ok((CudaStorage::wrap_cuda_slice(y, dev), shape))
}

/// The flat gradients (x‖Δ, B‖C, A‖D) from (x‖Δ‖dy) `[3, B, L, E]`, (B‖C), (A‖D).
pub(super) fn backward(
    dims: Dims,
    (s1, l1): (&CudaStorage, &Layout),
    (s2, l2): (&CudaStorage, &Layout),
    (s3, l3): (&CudaStorage, &Layout),
) -> Result<(CudaStorage, Shape)> {
    let dev = s1.device().clone();
    let (p, bc, ad) = (
        input(s1, l1, "x")?,
        input(s2, l2, "B, C")?,
        input(s3, l3, "A, D")?,
    );
    let Dims { b, l, e, n, .. } = dims;
    let size = b * l * e;
    let len = 2 * size + b * l * 2 * n + e * (n + 1);
    let out = dev.alloc_zeros::<f32>(len)?;
    let scratch = |count: usize| -> Result<CudaSlice<f32>> { dev.alloc_zeros::<f32>(count) };
    let (hs, db, dc) = (scratch(size * n)?, scratch(size * n)?, scratch(size * n)?);
    let (da_rows, dd_rows) = (scratch(b * e * n)?, scratch(b * e)?);
    let (bi, li, ei) = (as_i32(b)?, as_i32(l)?, as_i32(e)?);
    let reverse = i32::from(dims.is_reverse());
    let stream = dev.cuda_stream();

    let func = function(&dev, n, "scan_backward")?;
    let mut launch = stream.launch_builder(&func);
    launch.arg(&p).arg(&bc).arg(&ad).arg(&hs).arg(&db).arg(&dc);
    launch.arg(&da_rows).arg(&dd_rows).arg(&out);
    launch.arg(&bi).arg(&li).arg(&ei).arg(&reverse);
    unsafe { launch.launch(per_item(b * e)) }.w()?;

    let rows = b * l * n;
    let (rows_i, offset_bc) = (as_i32(rows)?, 2 * size);
    let func = function(&dev, n, "scan_sum_channels")?;
    let mut launch = stream.launch_builder(&func);
    launch
        .arg(&db)
        .arg(&dc)
        .arg(&out)
        .arg(&offset_bc)
        .arg(&rows_i)
        .arg(&ei);
    let warps = LaunchConfig {
        grid_dim: (rows as u32, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    unsafe { launch.launch(warps) }.w()?;

    let offset_ad = 2 * size + b * l * 2 * n;
    let func = function(&dev, n, "scan_sum_rows")?;
    let mut launch = stream.launch_builder(&func);
    launch
        .arg(&da_rows)
        .arg(&dd_rows)
        .arg(&out)
        .arg(&offset_ad)
        .arg(&bi)
        .arg(&ei);
    unsafe { launch.launch(per_item(e * (n + 1))) }.w()?;
    Ok((
        CudaStorage::wrap_cuda_slice(out, dev),
        Shape::from_dims(&[len]),
    ))
}
