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
