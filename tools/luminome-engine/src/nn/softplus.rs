//! softplus with a fused CPU kernel and its own backward (the state-space Δ and expression
//! rates use it).

use candle_core::{Result, Tensor};

/// softplus(x) = max(x, 0) + ln(1 + exp(−|x|)) (stable for large |x|), with its gradient
/// sigmoid(x): one fused op each way on the CPU, candle ops elsewhere.
pub fn softplus(x: &Tensor) -> Result<Tensor> {
    if super::kernels::cpu_fast_path(x.device()) && x.dtype() == candle_core::DType::F32 {
        x.contiguous()?.apply_op1(Softplus)
    } else {
        x.relu()? + (x.abs()?.neg()?.exp()? + 1.0)?.log()?
    }
}

struct Softplus;

impl candle_core::CustomOp1 for Softplus {
    fn name(&self) -> &'static str {
        "luminome-softplus"
    }

    fn cpu_fwd(
        &self,
        s: &candle_core::CpuStorage,
        l: &candle_core::Layout,
    ) -> Result<(candle_core::CpuStorage, candle_core::Shape)> {
        let candle_core::CpuStorage::F32(x) = s else {
            candle_core::bail!("softplus: f32 only")
        };
        let x = crate::nn::kernels::contiguous_slice(x, l, "softplus")?;
        let y = x
            .iter()
            .map(|&v| v.max(0.0) + (-v.abs()).exp().ln_1p())
            .collect();
        Ok((candle_core::CpuStorage::F32(y), l.shape().clone()))
    }

    fn bwd(&self, x: &Tensor, _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some((g * candle_nn::ops::sigmoid(x)?)?))
    }
}
