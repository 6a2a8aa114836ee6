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

#[cfg(test)]
mod tests {
    use candle_core::{Device, Tensor, Var};

    use super::*;

    #[test]
    fn the_fused_softplus_matches_its_formula_and_gradient() {
        let x = Tensor::new(&[-30f32, -2.0, -0.1, 0.0, 0.3, 5.0, 40.0], &Device::Cpu).unwrap();
        let var = Var::from_tensor(&x).unwrap();
        let y = softplus(var.as_tensor()).unwrap();
        let grads = y.sum_all().unwrap().backward().unwrap();
        let g: Vec<f32> = grads.get(var.as_tensor()).unwrap().to_vec1().unwrap();
        let y: Vec<f32> = y.to_vec1().unwrap();
        for (i, &v) in x.to_vec1::<f32>().unwrap().iter().enumerate() {
            let v = f64::from(v);
            let want = v.max(0.0) + (1.0 + (-v.abs()).exp()).ln();
            assert!(
                (f64::from(y[i]) - want).abs() < 1e-6 * want.max(1.0),
                "softplus({v})"
            );
            let sig = 1.0 / (1.0 + (-v).exp());
            assert!((f64::from(g[i]) - sig).abs() < 1e-6, "softplus'({v})");
        }
    }
}
