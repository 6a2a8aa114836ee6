//! AdamW with decoupled weight decay (Loshchilov & Hutter; PyTorch's `torch.optim.AdamW`):
//!
//! p ← p − lr·wd·p;  m ← β₁m + (1−β₁)g;  v ← β₂v + (1−β₂)g²;
//! p ← p − lr · (m / (1−β₁ᵗ)) / (sqrt(v / (1−β₂ᵗ)) + ε)
//!
//! Weight decay applies to matrices and embeddings (rank ≥ 2), not to biases and layer-norm
//! parameters. The moments can be saved and restored, so a resumed run continues exactly.
//!
//! On the CPU (f32) each parameter is updated in place by [`fused`]: the same f32 operations in
//! the same order as the composed candle ops of the other devices — the same bits — in three
//! passes over the data instead of about fifteen full-size temporaries a parameter, which for a
//! published 50–120 M-parameter encoder were a fifth of a fine-tuning step.

mod fused;

use std::collections::HashMap;

use anyhow::{bail, Context, Result};
use candle_core::{Tensor, Var};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdamWConfig {
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
}

impl Default for AdamWConfig {
    fn default() -> Self {
        Self {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
        }
    }
}

struct ParamState {
    name: String,
    var: Var,
    m: Var,
    v: Var,
    decay: bool,
}

pub struct AdamW {
    cfg: AdamWConfig,
    params: Vec<ParamState>,
    /// Steps taken.
    t: u64,
}

impl AdamW {
    /// `params`: the trainable variables by name (sorted for a stable state layout).
    pub fn new(mut params: Vec<(String, Var)>, cfg: AdamWConfig) -> Result<Self> {
        params.sort_by(|a, b| a.0.cmp(&b.0));
        let params = params
            .into_iter()
            .map(|(name, var)| {
                let zeros = var.as_tensor().zeros_like()?;
                Ok(ParamState {
                    decay: var.rank() >= 2,
                    m: Var::from_tensor(&zeros)?,
                    v: Var::from_tensor(&zeros)?,
                    name,
                    var,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { cfg, params, t: 0 })
    }

    pub fn steps(&self) -> u64 {
        self.t
    }

    /// One update with learning rate `lr`; `grads` by parameter name (a parameter without a
    /// gradient is left alone, its moments untouched).
    pub fn step(&mut self, grads: &HashMap<String, Tensor>, lr: f64) -> Result<()> {
        self.t += 1;
        let c = self.cfg;
        let bc1 = 1.0 - c.beta1.powi(self.t as i32);
        let bc2 = 1.0 - c.beta2.powi(self.t as i32);
        for p in &self.params {
            let Some(g) = grads.get(&p.name) else {
                continue;
            };
            if fused::applies(p, g) {
                fused::update(p, g, &c, lr, bc1, bc2)?;
            } else {
                update_composed(p, g, &c, lr, bc1, bc2)?;
            }
        }
        Ok(())
    }

    /// The moments as named tensors (`adam.m.<param>`, `adam.v.<param>`) and the step count.
    pub fn state(&self) -> (Vec<(String, Tensor)>, u64) {
        let mut out = Vec::with_capacity(self.params.len() * 2);
        for p in &self.params {
            out.push((format!("adam.m.{}", p.name), p.m.as_tensor().clone()));
            out.push((format!("adam.v.{}", p.name), p.v.as_tensor().clone()));
        }
        (out, self.t)
    }

    /// Restores moments and step count saved by [`AdamW::state`].
    pub fn load_state(
        &mut self,
        tensors: &HashMap<String, Tensor>,
        t: u64,
        source: &std::path::Path,
    ) -> Result<()> {
        for p in &self.params {
            for (kind, var) in [("m", &p.m), ("v", &p.v)] {
                let key = format!("adam.{kind}.{}", p.name);
                let saved = tensors.get(&key).with_context(|| {
                    format!("{}: optimizer state {key} is missing", source.display())
                })?;
                if saved.shape() != var.shape() {
                    bail!(
                        "{}: optimizer state {key} has the wrong shape",
                        source.display()
                    );
                }
                var.set(&saved.to_dtype(var.dtype())?)?;
            }
        }
        self.t = t;
        Ok(())
    }
}

/// One AdamW update of `p` from candle ops (any device; the CPU's [`fused`] update computes
/// the same bits in place).
fn update_composed(
    p: &ParamState,
    g: &Tensor,
    c: &AdamWConfig,
    lr: f64,
    bc1: f64,
    bc2: f64,
) -> candle_core::Result<()> {
    let m = ((p.m.as_tensor() * c.beta1)? + (g * (1.0 - c.beta1))?)?;
    let v = ((p.v.as_tensor() * c.beta2)? + (g.sqr()? * (1.0 - c.beta2))?)?;
    let update = ((&m / bc1)? / ((&v / bc2)?.sqrt()? + c.eps)?)?;
    let mut theta = p.var.as_tensor().clone();
    if p.decay && c.weight_decay > 0.0 {
        theta = (theta * (1.0 - lr * c.weight_decay))?;
    }
    p.var.set(&(theta - (update * lr)?)?)?;
    p.m.set(&m)?;
    p.v.set(&v)
}

/// Scales `grads` in place so that their global L2 norm is at most `max_norm`; returns the norm
/// before clipping.
pub fn clip_grad_norm(grads: &mut HashMap<String, Tensor>, max_norm: f64) -> Result<f64> {
    let mut total = 0f64;
    for g in grads.values() {
        total += g
            .sqr()?
            .sum_all()?
            .to_dtype(candle_core::DType::F64)?
            .to_scalar::<f64>()?;
    }
    let norm = total.sqrt();
    if max_norm > 0.0 && norm > max_norm {
        let scale = max_norm / (norm + 1e-6);
        for g in grads.values_mut() {
            *g = (&*g * scale)?;
        }
    }
    Ok(norm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// One AdamW step on p = [1, −2], g = [0.5, 0.5], lr 0.1, wd 0.1, worked by hand:
    /// decay: p·(1 − 0.01) = [0.99, −1.98]; m̂ = g, v̂ = g², update = g/(|g| + ε) ≈ 1 →
    /// p = [0.89, −2.08]. A rank-1 parameter is not decayed: [1 − 0.1, −2 − 0.1].
    #[test]
    fn one_step_matches_the_hand_computed_update() {
        let dev = Device::Cpu;
        let w = Var::from_tensor(&Tensor::new(&[[1f32, -2.0]], &dev).unwrap()).unwrap();
        let b = Var::from_tensor(&Tensor::new(&[1f32, -2.0], &dev).unwrap()).unwrap();
        let cfg = AdamWConfig {
            weight_decay: 0.1,
            ..Default::default()
        };
        let mut opt =
            AdamW::new(vec![("w".into(), w.clone()), ("b".into(), b.clone())], cfg).unwrap();
        let mut grads = HashMap::new();
        grads.insert(
            "w".to_string(),
            Tensor::new(&[[0.5f32, 0.5]], &dev).unwrap(),
        );
        grads.insert("b".to_string(), Tensor::new(&[0.5f32, 0.5], &dev).unwrap());
        opt.step(&grads, 0.1).unwrap();
        let w: Vec<f32> = w.as_tensor().flatten_all().unwrap().to_vec1().unwrap();
        let b: Vec<f32> = b.as_tensor().to_vec1().unwrap();
        assert!(
            (w[0] - 0.89).abs() < 1e-5 && (w[1] + 2.08).abs() < 1e-5,
            "{w:?}"
        );
        assert!(
            (b[0] - 0.9).abs() < 1e-5 && (b[1] + 2.1).abs() < 1e-5,
            "{b:?}"
        );
    }

    #[test]
    fn clipping_bounds_the_global_norm() {
        let dev = Device::Cpu;
        let mut grads = HashMap::new();
        grads.insert("a".to_string(), Tensor::new(&[3f32, 0.0], &dev).unwrap());
        grads.insert("b".to_string(), Tensor::new(&[4f32], &dev).unwrap());
        let norm = clip_grad_norm(&mut grads, 1.0).unwrap();
        assert!((norm - 5.0).abs() < 1e-6);
        let a: Vec<f32> = grads["a"].to_vec1().unwrap();
        assert!((a[0] - 0.6).abs() < 1e-5, "{a:?}");
    }
}
