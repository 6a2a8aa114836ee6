//! Padding masks: the additive attention bias and the masked mean and max that every pooling
//! uses, so padded positions never reach a result or receive a gradient.

use candle_core::{DType, Result, Tensor};

/// Large negative additive bias for masked attention scores. Finite, so a row with every key
/// masked gives a uniform distribution instead of NaN.
pub const MASK_BIAS: f64 = -1e9;

/// `[B, L]` 0/1 mask → `[B, 1, 1, L]` additive attention bias (0 where kept, [`MASK_BIAS`] where
/// padded), in `dtype`.
pub fn attention_bias(mask: &Tensor, dtype: DType) -> Result<Tensor> {
    let (b, l) = mask.dims2()?;
    let m = mask.to_dtype(dtype)?;
    ((m - 1.0)? * (-MASK_BIAS))?.reshape((b, 1, 1, l))
}

/// Masked mean over dimension 1 of `[B, L, D]`: Σ h_i m_i / (Σ m_i + eps).
pub fn masked_mean(h: &Tensor, mask: &Tensor, eps: f64) -> Result<Tensor> {
    let m = mask.to_dtype(h.dtype())?.unsqueeze(2)?;
    let num = h.broadcast_mul(&m)?.sum(1)?;
    let den = (m.sum(1)? + eps)?;
    num.broadcast_div(&den)
}

/// Masked max over dimension 1 of `[B, L, D]`: padded positions can never be the maximum.
pub fn masked_max(h: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let m = mask.to_dtype(h.dtype())?.unsqueeze(2)?;
    // Padded positions get −1e9 added: their value can never win against a real token, and the
    // gradient of max only flows to the winning position.
    let bias = ((m - 1.0)? * (-MASK_BIAS))?;
    let pooled = h.broadcast_add(&bias)?.max(1)?;
    if super::deeplift::active() {
        return super::deeplift::masked_max(h, mask, &pooled);
    }
    Ok(pooled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::gradcheck::max_grad_error;
    use crate::nn::kernels::test_support::{randn, weights};
    use crate::nn::softmax::softmax_last_dim;
    use candle_core::{Device, Var};

    #[test]
    fn masked_pooling_gradients_match_finite_differences_and_ignore_padding() {
        let h = randn(&[2, 5, 3], 7);
        let mask = Tensor::new(
            &[[1f64, 1., 1., 0., 0.], [1., 1., 1., 1., 0.]],
            &Device::Cpu,
        )
        .unwrap();
        let w = weights(&[2, 3]);
        let e_mean = max_grad_error(&h, 1e-6, &|h| {
            masked_mean(h, &mask, 1e-9)?.mul(&w)?.sum_all()
        })
        .unwrap();
        let e_max =
            max_grad_error(&h, 1e-6, &|h| masked_max(h, &mask)?.mul(&w)?.sum_all()).unwrap();
        assert!(e_mean < 1e-6 && e_max < 1e-6, "{e_mean} {e_max}");
        // Padded positions get no gradient.
        let var = Var::from_tensor(&h).unwrap();
        let g = masked_max(var.as_tensor(), &mask)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        let g = g
            .get(var.as_tensor())
            .unwrap()
            .get(0)
            .unwrap()
            .narrow(0, 3, 2)
            .unwrap();
        assert_eq!(
            g.abs()
                .unwrap()
                .sum_all()
                .unwrap()
                .to_scalar::<f64>()
                .unwrap(),
            0.0
        );
    }

    #[test]
    fn masked_attention_gives_padded_keys_zero_weight() {
        let scores = Tensor::zeros((1, 1, 2, 4), DType::F32, &Device::Cpu).unwrap();
        let mask = Tensor::new(&[[1f32, 1., 0., 0.]], &Device::Cpu).unwrap();
        let p = softmax_last_dim(
            &scores
                .broadcast_add(&attention_bias(&mask, DType::F32).unwrap())
                .unwrap(),
        )
        .unwrap();
        let p: Vec<f32> = p.flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(&p[..4], &[0.5, 0.5, 0.0, 0.0]);
    }
}
