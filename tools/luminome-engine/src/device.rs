//! `--device cpu|cuda[:N]|metal` → a candle device, with a clear error when the build lacks it.

use anyhow::{bail, Context, Result};
use candle_core::Device;

/// Parses a device string. CUDA and Metal need the `cuda` / `metal` cargo features.
pub fn parse_device(spec: &str) -> Result<Device> {
    let spec = spec.trim();
    if spec == "cpu" {
        return Ok(Device::Cpu);
    }
    let (name, ordinal) = match spec.split_once(':') {
        Some((n, o)) => (
            n,
            o.parse::<usize>()
                .with_context(|| format!("--device {spec}: {o:?} is not a device number"))?,
        ),
        None => (spec, 0),
    };
    match name {
        "cuda" => {
            if !cfg!(feature = "cuda") {
                bail!("--device {spec}: this build has no CUDA support; rebuild with `--features cuda` (or use --device cpu)");
            }
            #[cfg(feature = "cuda")]
            {
                let missing = missing_cuda_libraries();
                if !missing.is_empty() {
                    bail!(
                        "--device {spec}: cannot load {} (no NVIDIA driver or CUDA libraries \
                         found; LD_LIBRARY_PATH={}); this binary runs on the CPU with --device cpu",
                        missing.join(", "),
                        std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
                    );
                }
            }
            Device::new_cuda(ordinal)
                .with_context(|| format!("--device {spec}: cannot open the CUDA device"))
        }
        "metal" => {
            if !cfg!(feature = "metal") {
                bail!("--device {spec}: this build has no Metal support; rebuild with `--features metal` (or use --device cpu)");
            }
            Device::new_metal(ordinal)
                .with_context(|| format!("--device {spec}: cannot open the Metal device"))
        }
        _ => bail!("--device {spec}: unknown device (expected cpu, cuda, cuda:N or metal)"),
    }
}

/// The CUDA libraries a CUDA run loads that cannot be found. A CUDA build links none of them
/// (cudarc's dynamic loading, vendor/README.md): it starts on any machine, and opens them only
/// when `--device cuda` asks for them — where cudarc would panic on a missing one, so they are
/// looked for first.
#[cfg(feature = "cuda")]
fn missing_cuda_libraries() -> Vec<&'static str> {
    use candle_core::cuda_backend::cudarc;
    // Each call tries to open the library by its usual file names (dlopen through libloading,
    // which runs its initialisers, as loading it for use would) and closes it again.
    #[allow(unsafe_code)]
    let found = unsafe {
        [
            (
                "libcuda (the NVIDIA driver)",
                cudarc::driver::sys::is_culib_present(),
            ),
            ("libcublas", cudarc::cublas::sys::is_culib_present()),
            ("libcublasLt", cudarc::cublaslt::sys::is_culib_present()),
            ("libcurand", cudarc::curand::sys::is_culib_present()),
            ("libnvrtc", cudarc::nvrtc::sys::is_culib_present()),
        ]
    };
    found
        .iter()
        .filter(|(_, present)| !present)
        .map(|(name, _)| *name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_parses_and_unknown_is_refused() {
        assert!(parse_device("cpu").unwrap().is_cpu());
        let err = parse_device("tpu").unwrap_err().to_string();
        assert!(err.contains("unknown device"), "{err}");
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_without_the_feature_says_how_to_get_it() {
        let err = parse_device("cuda:0").unwrap_err().to_string();
        assert!(
            err.contains("no CUDA support") && err.contains("--features cuda"),
            "{err}"
        );
    }
}
