//! The four sequence-classification adapters of the adapters spec (docs/engine.md) and
//! gated-max (DynamicGated plus a max-pooled head, the default), each in its own file, behind
//! one enum. They read hidden states `[B, L, D]` and the padding mask of any
//! backbone.

pub mod dynamic_gated;
pub mod gated_max;
pub mod linear_cls;
pub mod linear_max_pool;
pub mod linear_mean_pool;

use candle_core::{Result, Tensor};
use candle_nn::VarBuilder;

pub use dynamic_gated::{DynamicGated, GatedOutput};
pub use gated_max::GatedMax;
pub use linear_cls::LinearCls;
pub use linear_max_pool::LinearMaxPool;
pub use linear_mean_pool::LinearMeanPool;

use super::config::AdapterKind;

#[derive(Debug, Clone)]
pub enum Adapter {
    Cls(LinearCls),
    Mean(LinearMeanPool),
    Max(LinearMaxPool),
    Gated(DynamicGated),
    GatedMax(GatedMax),
}

/// Logits, and for the gated adapter its gates g_i^final ⊙ m_i `[B, L, D]`.
#[derive(Debug, Clone)]
pub struct AdapterOutput {
    pub logits: Tensor,
    pub gates: Option<Tensor>,
}

impl Adapter {
    pub fn new(
        kind: AdapterKind,
        d_model: usize,
        num_outputs: usize,
        layer_norm_eps: f64,
        gate_score_scale: Option<f64>,
        vb: VarBuilder,
    ) -> Result<Self> {
        Ok(match kind {
            AdapterKind::Cls => Self::Cls(LinearCls::new(d_model, num_outputs, vb)?),
            AdapterKind::Mean => Self::Mean(LinearMeanPool::new(d_model, num_outputs, vb)?),
            AdapterKind::Max => Self::Max(LinearMaxPool::new(d_model, num_outputs, vb)?),
            AdapterKind::Gated => Self::Gated(
                DynamicGated::new(d_model, num_outputs, layer_norm_eps, vb)?
                    .with_score_scale(gate_score_scale),
            ),
            AdapterKind::GatedMax => Self::GatedMax(GatedMax::new(
                d_model,
                num_outputs,
                layer_norm_eps,
                gate_score_scale,
                vb,
            )?),
        })
    }

    /// `h`: encoder output `[B, L, D]`; `mask`: `[B, L]`.
    pub fn forward(&self, h: &Tensor, mask: &Tensor) -> Result<AdapterOutput> {
        Ok(match self {
            Self::Cls(a) => AdapterOutput {
                logits: a.forward(h)?,
                gates: None,
            },
            Self::Mean(a) => AdapterOutput {
                logits: a.forward(h, mask)?,
                gates: None,
            },
            Self::Max(a) => AdapterOutput {
                logits: a.forward(h, mask)?,
                gates: None,
            },
            Self::Gated(a) => {
                let o = a.forward(h, mask)?;
                AdapterOutput {
                    logits: o.logits,
                    gates: Some(o.gates),
                }
            }
            Self::GatedMax(a) => {
                let o = a.forward(h, mask)?;
                AdapterOutput {
                    logits: o.logits,
                    gates: Some(o.gates),
                }
            }
        })
    }
}
