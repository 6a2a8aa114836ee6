//! The gated feed-forward unit of the published backbones: act(g₁) ⊙ g₂ over the two halves of
//! the last dimension — SwiGLU in the Nucleotide Transformer v2 (SiLU), GEGLU in DNABERT-2
//! (GELU, erf form).
//!
//! On CUDA (f32) one kernel each way (`nn/cuda_elementwise.rs`) where the primitives take two
//! strided copies, the activation, a product and, backward, ~10 more launches on the widest
//! activation of the model. Elsewhere — the CPU included — the primitives run as before, so CPU
//! results keep their bits (the op's CPU code below is the reference its tests and the device
//! check compare against, in f64 arithmetic; it is not the CPU's training path). DeepLIFT's
//! rules (`nn/deeplift.rs`) replace the activation's gradient, so under them the primitives run
//! on every device.

use candle_core::{CpuStorage, Layout, Result, Shape, Tensor, D};

use super::kernels::{cuda_fused, f64_elements, f64_to_dtype_of};

/// The gate's activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateActivation {
    /// x · σ(x) (SwiGLU).
    Silu,
    /// x · Φ(x), the erf form (GEGLU).
    GeluErf,
}

impl GateActivation {
    /// The kernels' `kind` argument.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    fn code(self) -> i32 {
        match self {
            Self::Silu => 0,
            Self::GeluErf => 1,
        }
    }

    fn value(self, a: f64) -> f64 {
        match self {
            Self::Silu => a / (1.0 + (-a).exp()),
            Self::GeluErf => a * normal_cdf(a),
        }
    }

    fn derivative(self, a: f64) -> f64 {
        match self {
            Self::Silu => {
                let s = 1.0 / (1.0 + (-a).exp());
                s * (1.0 + a * (1.0 - s))
            }
            Self::GeluErf => {
                let pdf = (-0.5 * a * a).exp() / (2.0 * std::f64::consts::PI).sqrt();
                normal_cdf(a) + a * pdf
            }
        }
    }
}

fn normal_cdf(a: f64) -> f64 {
    0.5 * (1.0 + candle_core::cpu::erf::erf_f64(a * std::f64::consts::FRAC_1_SQRT_2))
}

/// act(g[…, :f]) ⊙ g[…, f:] for `g` `[…, 2f]`, with its gradient.
pub fn gated_unit(g: &Tensor, act: GateActivation) -> Result<Tensor> {
    if cuda_fused(g) && !super::deeplift::active() {
        g.contiguous()?.apply_op1(GatedUnit { act })
    } else {
        gated_unit_primitive(g, act)
    }
}

/// The same unit from autograd-capable primitives (the CPU's path: the ops the families ran
/// before the CUDA kernel, bit for bit).
pub fn gated_unit_primitive(g: &Tensor, act: GateActivation) -> Result<Tensor> {
    let f = half_width(g.dims())?;
    let gate = g.narrow(D::Minus1, 0, f)?;
    let linear = g.narrow(D::Minus1, f, f)?;
    let gate = match act {
        GateActivation::Silu => gate.silu()?,
        GateActivation::GeluErf => super::deeplift::gelu(&gate)?,
    };
    gate * linear
}

fn half_width(dims: &[usize]) -> Result<usize> {
    match dims.last() {
        Some(&n) if n > 0 && n % 2 == 0 => Ok(n / 2),
        _ => candle_core::bail!("gated unit: the last dimension of {dims:?} must be even"),
    }
}

/// The output shape: the last dimension halved.
fn halved(l: &Layout) -> Result<Shape> {
    let mut dims = l.dims().to_vec();
    let f = half_width(&dims)?;
    *dims.last_mut().expect("checked non-empty") = f;
    Ok(Shape::from(dims))
}

/// Applies `row` to each row of 2f of `g` (with the row's number), in f64; f32 or f64.
fn map_rows(
    g: (&CpuStorage, &Layout),
    row: impl Fn(&[f64], usize, &mut Vec<f64>),
) -> Result<CpuStorage> {
    let (s, l) = g;
    let values = f64_elements(s, l, "gated unit")?;
    let f = half_width(l.dims())?;
    let mut out = Vec::with_capacity(values.len());
    for (r, chunk) in values.chunks(2 * f).enumerate() {
        row(chunk, r, &mut out);
    }
    Ok(f64_to_dtype_of(s, out))
}

struct GatedUnit {
    act: GateActivation,
}

impl candle_core::CustomOp1 for GatedUnit {
    fn name(&self) -> &'static str {
        "luminome-gated-unit"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let act = self.act;
        let out = map_rows((s, l), |g, _, out| {
            let (a, b) = g.split_at(g.len() / 2);
            out.extend(a.iter().zip(b).map(|(&a, &b)| act.value(a) * b));
        })?;
        Ok((out, halved(l)?))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s: &candle_core::CudaStorage,
        l: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        let y = super::cuda_elementwise::glu(s, l, self.act.code())?;
        Ok((y, halved(l)?))
    }

    fn bwd(&self, g: &Tensor, _y: &Tensor, dy: &Tensor) -> Result<Option<Tensor>> {
        let op = GatedUnitBackward { act: self.act };
        Ok(Some(g.apply_op2_no_bwd(&dy.contiguous()?, &op)?))
    }
}

/// d(act(g₁) ⊙ g₂)/dg from g and the output's gradient.
struct GatedUnitBackward {
    act: GateActivation,
}

impl candle_core::CustomOp2 for GatedUnitBackward {
    fn name(&self) -> &'static str {
        "luminome-gated-unit-backward"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let act = self.act;
        let dy = f64_elements(s2, l2, "gated unit backward")?;
        let f = half_width(l1.dims())?;
        if dy.len() * 2 != l1.shape().elem_count() {
            candle_core::bail!(
                "gated unit backward: input {:?}, gradient {:?}",
                l1.dims(),
                l2.dims()
            );
        }
        let out = map_rows((s1, l1), |g, r, out| {
            let (a, b) = g.split_at(f);
            let dy = &dy[r * f..(r + 1) * f];
            out.extend(
                a.iter()
                    .zip(b)
                    .zip(dy)
                    .map(|((&a, &b), &d)| d * b * act.derivative(a)),
            );
            out.extend(a.iter().zip(dy).map(|(&a, &d)| d * act.value(a)));
        })?;
        Ok((out, l1.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        let dg = super::cuda_elementwise::glu_backward((s1, l1), (s2, l2), self.act.code())?;
        Ok((dg, l1.shape().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::gradcheck::max_grad_error;
    use crate::nn::kernels::test_support::{f64_values, randn, weights};

    /// The op (its CPU reference, as on CUDA) bypassing the entry's device gate.
    fn fused(g: &Tensor, act: GateActivation) -> Result<Tensor> {
        g.contiguous()?.apply_op1(GatedUnit { act })
    }

    #[test]
    fn the_fused_gated_unit_is_the_primitive_one_with_its_gradient() {
        for act in [GateActivation::Silu, GateActivation::GeluErf] {
            let g = randn(&[3, 4, 10], 7);
            let w = weights(&[3, 4, 5]);
            let (a, b) = (
                fused(&g, act).unwrap(),
                gated_unit_primitive(&g, act).unwrap(),
            );
            assert_eq!(a.dims(), [3, 4, 5]);
            let d = f64_values(&a)
                .iter()
                .zip(f64_values(&b))
                .map(|(x, y)| (x - y).abs())
                .fold(0f64, f64::max);
            assert!(d < 1e-12, "{act:?}: fused against primitive {d}");
            let err = max_grad_error(&g, 1e-6, &|g| fused(g, act)?.mul(&w)?.sum_all()).unwrap();
            assert!(err < 1e-6, "{act:?}: gradient error {err}");
        }
        // An odd width is refused, not split unevenly.
        assert!(fused(&randn(&[2, 5], 1), GateActivation::Silu).is_err());
    }
}
