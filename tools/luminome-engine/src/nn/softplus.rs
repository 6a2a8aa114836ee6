//! softplus with a fused CPU kernel each way (the state-space Δ and expression rates use it).
//!
//! Why fused and vectorised: the selective-scan families compute softplus(Δ) on every
//! [batch, position, channel] element of every layer and direction, and until 2026-11-28 the
//! CPU kernel called libm's scalar `expf` and `log1pf` per element on one thread, with candle's
//! sigmoid for the backward — 12.5 % of a bi-strand benchmark profile (docs/benchmarks.md, "FLOP
//! rates against the core's peak"). Here each way is one branch-free pass, split over rayon's
//! threads and compiled for AVX-512 or AVX2 + FMA where the CPU has them:
//!
//! - softplus(x) = max(x, 0) + ln(1 + t), t = e^(−|x|) ∈ (0, 1] by the polynomial exp of
//!   `kernels.rs` (`exp_f32_fma`, within 3e-7), and ln(1 + t) = 2·atanh(s), s = t / (2 + t) ≤ 1/3,
//!   by its odd series to s¹³ (truncation below 1.4e-8 relative; relative accuracy kept as t → 0).
//! - softplus′(x) = sigmoid(x) = 1 / (1 + t) for x ≥ 0, t / (1 + t) below (no overflow).
//!
//! Every clone gives the same bits (fused multiply-adds are exactly rounded wherever they run).
//! Against the exact function the values are within 4e-7 relative (and 1e-38 absolute where
//! e^x underflows: the exp's input is clamped at −87) and the gradient within 4e-7 — the test
//! bounds both. Not libm's bits: a model trained with the scalar kernel predicts the same to ~1e-6,
//! and the same seed now trains to other bits than before (the output fingerprint's bi-strand
//! and expression files changed with this kernel; nothing else did).

use candle_core::{CpuStorage, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::kernels::{contiguous_slice, num_traits_float::exp_f32_fma, written_by};

/// Elements per parallel task: large enough that splitting costs nothing measurable.
const CHUNK: usize = 1 << 14;

/// softplus(x) = max(x, 0) + ln(1 + exp(−|x|)) (stable for large |x|), with its gradient
/// sigmoid(x): one fused op each way on the CPU, candle ops elsewhere.
pub fn softplus(x: &Tensor) -> Result<Tensor> {
    if super::kernels::cpu_fast_path(x.device()) && x.dtype() == candle_core::DType::F32 {
        x.contiguous()?.apply_op1(Softplus)
    } else {
        x.relu()? + (x.abs()?.neg()?.exp()? + 1.0)?.log()?
    }
}

/// ln(1 + t) for t in [0, 1], as 2·atanh(t / (2 + t)) (see the module documentation).
#[inline(always)]
fn ln_1p_unit(t: f32) -> f32 {
    let s = t / (2.0 + t);
    let s2 = s * s;
    let p = s2.mul_add(1.0 / 13.0, 1.0 / 11.0);
    let p = p.mul_add(s2, 1.0 / 9.0);
    let p = p.mul_add(s2, 1.0 / 7.0);
    let p = p.mul_add(s2, 1.0 / 5.0);
    let p = p.mul_add(s2, 1.0 / 3.0);
    let p = p.mul_add(s2, 1.0);
    2.0 * s * p
}

#[inline(always)]
fn softplus_f32(x: f32) -> f32 {
    x.max(0.0) + ln_1p_unit(exp_f32_fma(-x.abs()))
}

#[inline(always)]
fn sigmoid_f32(x: f32) -> f32 {
    let t = exp_f32_fma(-x.abs());
    let r = 1.0 / (1.0 + t);
    if x >= 0.0 {
        r
    } else {
        t * r
    }
}

// multiversion's dispatcher calls a clone only after detecting its features at run time;
// the unsafe it generates is that call.
#[allow(unsafe_code)]
mod dispatch {
    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(super) fn forward(x: &[f32], y: &mut [f32]) {
        for (y, &x) in y.iter_mut().zip(x) {
            *y = super::softplus_f32(x);
        }
    }

    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(super) fn backward(x: &[f32], g: &[f32], d: &mut [f32]) {
        for ((d, &x), &g) in d.iter_mut().zip(x).zip(g) {
            *d = g * super::sigmoid_f32(x);
        }
    }
}

struct Softplus;

impl candle_core::CustomOp1 for Softplus {
    fn name(&self) -> &'static str {
        "luminome-softplus"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(x) = s else {
            candle_core::bail!("softplus: f32 only")
        };
        let x = contiguous_slice(x, l, "softplus")?;
        let y = written_by(x.len(), |y: &mut [f32]| {
            y.par_chunks_mut(CHUNK)
                .zip(x.par_chunks(CHUNK))
                .for_each(|(y, x)| dispatch::forward(x, y))
        });
        Ok((CpuStorage::F32(y), l.shape().clone()))
    }

    fn bwd(&self, x: &Tensor, _y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(
            x.apply_op2_no_bwd(&g.contiguous()?, &SoftplusBackward)?,
        ))
    }
}

/// g ⊙ sigmoid(x), the softplus's input gradient, in one pass.
struct SoftplusBackward;

impl candle_core::CustomOp2 for SoftplusBackward {
    fn name(&self) -> &'static str {
        "luminome-softplus-backward"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let what = "softplus backward";
        let (CpuStorage::F32(x), CpuStorage::F32(g)) = (s1, s2) else {
            candle_core::bail!("{what}: f32 only")
        };
        let (x, g) = (
            contiguous_slice(x, l1, what)?,
            contiguous_slice(g, l2, what)?,
        );
        if x.len() != g.len() {
            candle_core::bail!("{what}: {} inputs, {} gradients", x.len(), g.len());
        }
        let d = written_by(x.len(), |d: &mut [f32]| {
            d.par_chunks_mut(CHUNK)
                .zip(x.par_chunks(CHUNK).zip(g.par_chunks(CHUNK)))
                .for_each(|(d, (x, g))| dispatch::backward(x, g, d))
        });
        Ok((CpuStorage::F32(d), l1.shape().clone()))
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

    #[test]
    fn the_vectorised_softplus_and_sigmoid_are_within_4e7_of_the_exact_ones() {
        // Over the range the models see and past it: relative error where the value is above
        // the exp's clamp (e^-87), absolute below it.
        let (mut value, mut grad, mut tiny) = (0f64, 0f64, 0f64);
        for i in 0..=400_000 {
            let x = -100.0 + 200.0 * i as f32 / 400_000.0;
            let v = f64::from(x);
            let exact = v.max(0.0) + (-v.abs()).exp().ln_1p();
            let sig = if v >= 0.0 {
                1.0 / (1.0 + (-v).exp())
            } else {
                v.exp() / (1.0 + v.exp())
            };
            let (y, s) = (f64::from(softplus_f32(x)), f64::from(sigmoid_f32(x)));
            if exact > 1e-37 {
                value = value.max(((y - exact) / exact).abs());
                grad = grad.max(((s - sig) / sig).abs());
            } else {
                tiny = tiny.max((y - exact).abs()).max((s - sig).abs());
            }
        }
        assert!(value < 4e-7, "softplus: relative error {value}");
        assert!(grad < 4e-7, "sigmoid: relative error {grad}");
        assert!(tiny < 1e-37, "below e^-87: absolute error {tiny}");
        // The multiversioned kernels over chunks give the per-element functions' bits.
        let x: Vec<f32> = (0..50_000)
            .map(|i| -40.0 + 80.0 * i as f32 / 50_000.0)
            .collect();
        let t = Tensor::new(x.as_slice(), &Device::Cpu).unwrap();
        let y: Vec<f32> = softplus(&t).unwrap().to_vec1().unwrap();
        assert!(x
            .iter()
            .zip(&y)
            .all(|(&x, &y)| y.to_bits() == softplus_f32(x).to_bits()));
    }
}
