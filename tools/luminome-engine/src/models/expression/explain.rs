//! What `luminome-importance` reads off an expression model: the attention-pooling weights α_i
//! of each region, and each region × feature's contribution to the prediction ŷ by gradient ×
//! input or integrated gradients (from the all-zero input: no motif, no accessibility).

use anyhow::{bail, Result};
use candle_core::{Tensor, Var};

use super::model::ExpressionModel;
use crate::models::region::RegionTensors;

/// α `[B, N]` row-major (0 at padding); attention-pooling models only.
pub fn pooling_weights(model: &ExpressionModel, t: &RegionTensors) -> Result<Vec<f32>> {
    match model.forward(t, None)?.alpha {
        Some(a) => Ok(a.flatten_all()?.to_vec1()?),
        None => bail!("pooling weights exist for the attention-pooling head only; this model reads the TSS region"),
    }
}

/// ∂ŷ/∂x at `x` `[B, N, F]` (each sample's prediction depends on its own input only, so the
/// gradient of the summed predictions is every sample's own).
fn gradient(model: &ExpressionModel, t: &RegionTensors, x: &Tensor) -> Result<Tensor> {
    let v = Var::from_tensor(x)?;
    let y = model
        .forward_features(v.as_tensor(), t, None)?
        .prediction
        .sum_all()?;
    let grads = y.backward()?;
    match grads.get(v.as_tensor()) {
        Some(g) => Ok(g.clone()),
        None => Ok(x.zeros_like()?),
    }
}

/// Contributions `[B, N, F]` row-major of every region × feature to ŷ: gradient × input
/// (`ig_steps` None) or integrated gradients with `ig_steps` midpoint steps from zero.
pub fn contributions(
    model: &ExpressionModel,
    t: &RegionTensors,
    ig_steps: Option<usize>,
) -> Result<Vec<f32>> {
    let x = &t.features;
    let g = match ig_steps {
        None => gradient(model, t, x)?,
        Some(0) => bail!("--ig-steps must be at least 1"),
        Some(k) => {
            let mut sum = x.zeros_like()?;
            for s in 0..k {
                let a = (s as f64 + 0.5) / k as f64;
                sum = (sum + gradient(model, t, &(x * a)?)?)?;
            }
            (sum / k as f64)?
        }
    };
    Ok((g * x)?.flatten_all()?.to_vec1()?)
}
