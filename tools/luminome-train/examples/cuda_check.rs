//! CUDA against the CPU for every op the engine writes and every step-trained family (forward
//! values and gradients; `luminome_train::device_check`). Run on a GPU host with a build that has
//! the `cuda` feature (bench/gpu/build_cuda.sh builds it, bench/gpu/run_gpu.sh runs it):
//!
//!     cuda_check [cuda:N]          # `cpu`: the CPU's primitive fallbacks instead (what CI tests)

use anyhow::{bail, Result};
use luminome_train::device_check::{compare, Target};

fn main() -> Result<()> {
    let spec = std::env::args().nth(1).unwrap_or_else(|| "cuda".into());
    let device = luminome_engine::parse_device(&spec)?;
    let target = if device.is_cpu() {
        Target::CpuFallbacks
    } else {
        Target::Device(device)
    };
    let report = compare(&target)?;
    // f32 on two devices: other summation orders (cuBLAS, reductions) give ~1e-6 relative; 1e-4
    // leaves room for deep stacks and saturated softmaxes.
    let tol = 1e-4;
    let mut failed = false;
    println!("check\tforward_rel_diff\tgradient_rel_diff\tverdict");
    for (name, f, b) in &report {
        let ok = *f <= tol && *b <= tol;
        failed |= !ok;
        println!(
            "{name}\t{f:.3e}\t{b:.3e}\t{}",
            if ok { "ok" } else { "DIFFERS" }
        );
    }
    if failed {
        bail!("{spec} and the CPU differ by more than {tol:e} (relative)");
    }
    Ok(())
}
