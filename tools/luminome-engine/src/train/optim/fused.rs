//! AdamW in place on the CPU: per parameter, the first moment, the second moment, then the
//! weights, each one pass over contiguous f32 storage split over rayon's threads.
//!
//! Every element goes through the f32 operations the composed path ([`super::AdamW::step`] on
//! other devices) applies, in its order: candle computes `tensor * s` as `x · f32(s) + 0`,
//! `tensor / s` as `x · f32(1/s) + 0` and `tensor + s` as `x · 1 + f32(s)`, each rounded to f32,
//! so the kernels below write those expressions literally (the `+ 0.0` too: it turns −0 into +0,
//! as candle's does) and give the same bits (`fused_update_is_the_composed_update_bit_for_bit`).

use candle_core::{CpuStorage, Layout, Tensor};
use rayon::prelude::*;

use super::{AdamWConfig, ParamState};
use crate::nn::kernels::{contiguous_slice, cpu_fused};

/// Elements per piece of work handed to a thread.
const PIECE: usize = 1 << 16;

/// Whether the in-place CPU update applies: f32 on the CPU (fallbacks not forced), every
/// operand contiguous.
pub(super) fn applies(p: &ParamState, g: &Tensor) -> bool {
    let all = [p.var.as_tensor(), p.m.as_tensor(), p.v.as_tensor(), g];
    all.iter()
        .all(|t| cpu_fused(t) && t.dtype() == candle_core::DType::F32 && t.is_contiguous())
        && g.shape() == p.var.shape()
}

/// One AdamW update of `p` with gradient `g` in place (see the module documentation).
pub(super) fn update(
    p: &ParamState,
    g: &Tensor,
    c: &AdamWConfig,
    lr: f64,
    bc1: f64,
    bc2: f64,
) -> candle_core::Result<()> {
    p.m.as_tensor().inplace_op2(
        g,
        &AdamWMoment {
            keep: c.beta1 as f32,
            gain: (1.0 - c.beta1) as f32,
            square: false,
        },
    )?;
    p.v.as_tensor().inplace_op2(
        g,
        &AdamWMoment {
            keep: c.beta2 as f32,
            gain: (1.0 - c.beta2) as f32,
            square: true,
        },
    )?;
    let shrink = (p.decay && c.weight_decay > 0.0).then_some((1.0 - lr * c.weight_decay) as f32);
    p.var.as_tensor().inplace_op3(
        p.m.as_tensor(),
        p.v.as_tensor(),
        &AdamWWeights {
            unbias1: (1.0 / bc1) as f32,
            unbias2: (1.0 / bc2) as f32,
            eps: c.eps as f32,
            shrink,
            lr: lr as f32,
        },
    )
}

fn f32_mut<'a>(
    s: &'a mut CpuStorage,
    l: &Layout,
    what: &str,
) -> candle_core::Result<&'a mut [f32]> {
    let CpuStorage::F32(v) = s else {
        candle_core::bail!("{what}: f32 only")
    };
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&mut v[a..b]),
        None => candle_core::bail!("{what}: the parameter has to be contiguous"),
    }
}

fn f32_ref<'a>(s: &'a CpuStorage, l: &Layout, what: &str) -> candle_core::Result<&'a [f32]> {
    let CpuStorage::F32(v) = s else {
        candle_core::bail!("{what}: f32 only")
    };
    contiguous_slice(v, l, what)
}

/// `m ← m·β + (1−β)·g` (or `g²` for the second moment).
struct AdamWMoment {
    keep: f32,
    gain: f32,
    square: bool,
}

impl candle_core::InplaceOp2 for AdamWMoment {
    fn name(&self) -> &'static str {
        "adamw-moment"
    }

    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<()> {
        let m = f32_mut(s1, l1, self.name())?;
        let g = f32_ref(s2, l2, self.name())?;
        if m.len() != g.len() {
            candle_core::bail!("{}: {} and {} elements", self.name(), m.len(), g.len())
        }
        let (keep, gain, square) = (self.keep, self.gain, self.square);
        m.par_chunks_mut(PIECE)
            .zip(g.par_chunks(PIECE))
            .for_each(|(m, g)| {
                for (m, &g) in m.iter_mut().zip(g) {
                    let g = if square { g * g } else { g };
                    *m = (*m * keep + 0.0) + (g * gain + 0.0);
                }
            });
        Ok(())
    }
}

/// `p ← p·shrink − lr · (m/(1−β₁ᵗ)) / (√(v/(1−β₂ᵗ)) + ε)`.
struct AdamWWeights {
    unbias1: f32,
    unbias2: f32,
    eps: f32,
    shrink: Option<f32>,
    lr: f32,
}

impl candle_core::InplaceOp3 for AdamWWeights {
    fn name(&self) -> &'static str {
        "adamw-weights"
    }

    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<()> {
        let p = f32_mut(s1, l1, self.name())?;
        let m = f32_ref(s2, l2, self.name())?;
        let v = f32_ref(s3, l3, self.name())?;
        if p.len() != m.len() || p.len() != v.len() {
            candle_core::bail!("{}: operands of different sizes", self.name())
        }
        let Self {
            unbias1,
            unbias2,
            eps,
            shrink,
            lr,
        } = *self;
        p.par_chunks_mut(PIECE)
            .zip(m.par_chunks(PIECE).zip(v.par_chunks(PIECE)))
            .for_each(|(p, (m, v))| {
                for ((p, &m), &v) in p.iter_mut().zip(m).zip(v) {
                    let step = (m * unbias1 + 0.0) / ((v * unbias2 + 0.0).sqrt() * 1.0 + eps);
                    let theta = match shrink {
                        Some(s) => *p * s + 0.0,
                        None => *p,
                    };
                    *p = theta - (step * lr + 0.0);
                }
            });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{update_composed, AdamW, AdamWConfig};
    use super::*;
    use crate::nn::kernels::test_support::f32_bits as bits;
    use candle_core::{Device, Var};

    /// Pseudo-random f32 values with zeros, negative zeros and tiny and large magnitudes.
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut x = seed;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match i % 97 {
                    0 => 0.0,
                    1 => -0.0,
                    2 => 1e-30,
                    _ => ((x % 20001) as f32 - 10000.0) * 10f32.powi((x % 7) as i32 - 4),
                }
            })
            .collect()
    }

    #[test]
    fn fused_update_is_the_composed_update_bit_for_bit() {
        let n = 3 * PIECE + 17;
        let param = |seed| {
            Var::from_tensor(&Tensor::from_vec(values(n, seed), (n, 1), &Device::Cpu).unwrap())
                .unwrap()
        };
        let c = AdamWConfig::default();
        for (decay, steps) in [(true, 3), (false, 2)] {
            let make = || {
                let mut opt = AdamW::new(vec![("w".into(), param(1))], c).unwrap();
                opt.params[0].decay = decay;
                opt.params[0]
                    .m
                    .set(&param(2).as_tensor().abs().unwrap())
                    .unwrap();
                opt.params[0]
                    .v
                    .set(&param(3).as_tensor().sqr().unwrap())
                    .unwrap();
                opt
            };
            let (fused, composed) = (make(), make());
            for t in 1..=steps {
                let g = param(10 + t).as_tensor().clone();
                let (bc1, bc2) = (1.0 - c.beta1.powi(t as i32), 1.0 - c.beta2.powi(t as i32));
                let lr = 1e-3 * t as f64;
                assert!(applies(&fused.params[0], &g));
                update(&fused.params[0], &g, &c, lr, bc1, bc2).unwrap();
                update_composed(&composed.params[0], &g, &c, lr, bc1, bc2).unwrap();
                let (a, b) = (&fused.params[0], &composed.params[0]);
                assert_eq!(bits(a.m.as_tensor()), bits(b.m.as_tensor()), "m, step {t}");
                assert_eq!(bits(a.v.as_tensor()), bits(b.v.as_tensor()), "v, step {t}");
                assert_eq!(
                    bits(a.var.as_tensor()),
                    bits(b.var.as_tensor()),
                    "w, step {t}"
                );
            }
        }
    }
}
