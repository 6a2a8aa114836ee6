//! What every NVRTC-compiled kernel file shares (`nn/cuda_rows.rs`, `nn/cuda_elementwise.rs`,
//! `nn/scan/cuda.rs`): one module cache per CUDA context, source and compile options, f32 views
//! of contiguous inputs, output buffers and the one-thread-per-item launch shape.

// Allocating without zero-filling is a foreign call cudarc marks unsafe; see `kernel_output`.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{
    CudaFunction, CudaModule, CudaSlice, CudaView, LaunchConfig,
};
use candle_core::cuda_backend::cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
use candle_core::cuda_backend::WrapErr;
use candle_core::{CudaDevice, CudaStorage, DType, Layout, Result};

/// (context, source, options) → the compiled module.
type ModuleCache = Mutex<HashMap<(usize, usize, String), Arc<CudaModule>>>;

/// Kernel `name` of `source` compiled with `options`, the module compiled once per CUDA context;
/// `what` names the kernel file in an NVRTC error.
pub(crate) fn function(
    dev: &CudaDevice,
    source: &'static str,
    options: &[String],
    name: &str,
    what: &str,
) -> Result<CudaFunction> {
    static MODULES: OnceLock<ModuleCache> = OnceLock::new();
    let stream = dev.cuda_stream();
    let context = stream.context();
    let key = (
        Arc::as_ptr(context) as usize,
        source.as_ptr() as usize,
        options.join(" "),
    );
    let mut modules = MODULES.get_or_init(Default::default).lock().unwrap();
    let module = match modules.get(&key) {
        Some(m) => m.clone(),
        None => {
            let opts = CompileOptions {
                options: options.to_vec(),
                ..Default::default()
            };
            let ptx = compile_ptx_with_opts(source, opts)
                .map_err(|e| candle_core::Error::Msg(format!("{what}: NVRTC: {e:?}")))?;
            let m = context.load_module(ptx).w()?;
            modules.insert(key, m.clone());
            m
        }
    };
    module.load_function(name).w()
}

/// The f32 elements of a contiguous input.
pub(crate) fn input<'a>(s: &'a CudaStorage, l: &Layout, what: &str) -> Result<CudaView<'a, f32>> {
    if s.dtype() != DType::F32 {
        candle_core::bail!("{what} on CUDA: f32 only, got {:?}", s.dtype());
    }
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(s.as_cuda_slice::<f32>()?.slice(a..b)),
        None => candle_core::bail!("{what}: input has to be contiguous"),
    }
}

/// A buffer of `len` f32 for a kernel that writes every element of it: not zero-filled first
/// (a memset launch and a pass over the memory saved per op). Only for such kernels — the
/// callers here launch one that writes each index below `len` before anything reads it.
pub(crate) fn kernel_output(dev: &CudaDevice, len: usize) -> Result<CudaSlice<f32>> {
    // SAFETY: the memory is device memory of the right size, never read by the host; every
    // caller's kernel writes each element before the result is returned.
    unsafe { dev.alloc::<f32>(len) }
}

/// One thread per item, blocks of 256.
pub(crate) fn per_item(items: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (items.div_ceil(256).max(1) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `v` as a kernel's `int`.
pub(crate) fn int(v: usize, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| candle_core::Error::Msg(format!("{what}: {v} > i32")))
}
