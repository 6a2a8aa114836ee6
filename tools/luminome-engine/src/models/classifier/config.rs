//! The sequence-classifier family's config: a backbone, an adapter and the classes.

use anyhow::{bail, Result};
use candle_nn::{VarBuilder, VarMap};
use serde::{Deserialize, Serialize};

use super::model::Classifier;
use crate::backbones::BackboneConfig;
use crate::input::strand::ReverseComplement;
use crate::models::token::check_classes;
use crate::models::FamilyConfig;

/// Which sequence-classification adapter sits on the backbone (the adapters spec; docs/engine.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdapterKind {
    /// LinearCLS: y = W h_[CLS].
    Cls,
    /// LinearMeanPool: y = W (Σ h_i m_i / (Σ m_i + ε)).
    Mean,
    /// LinearMaxPool: y = W max_{m_i = 1} h_i.
    Max,
    /// DynamicGated: gates from [h_CLS; h_i] and q_CLSᵀ k_i, gated masked sum, LayerNorm, linear.
    Gated,
    /// GatedMax: DynamicGated's logits plus a linear map of the max-pooled states.
    #[serde(rename = "gated-max")]
    GatedMax,
}

impl AdapterKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Cls => "cls",
            Self::Mean => "mean",
            Self::Max => "max",
            Self::Gated => "gated",
            Self::GatedMax => "gated-max",
        }
    }
}

impl AdapterKind {
    /// Whether the adapter has DynamicGated's gates (and its gate score scale).
    pub fn has_gates(self) -> bool {
        matches!(self, Self::Gated | Self::GatedMax)
    }
}

impl std::str::FromStr for AdapterKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "cls" => Ok(Self::Cls),
            "mean" => Ok(Self::Mean),
            "max" => Ok(Self::Max),
            "gated" => Ok(Self::Gated),
            "gated-max" => Ok(Self::GatedMax),
            _ => bail!("unknown adapter {s:?} (expected cls, mean, max, gated or gated-max)"),
        }
    }
}

/// A sequence classifier: a backbone and an adapter. Serialised with the backbone as one key
/// (`"encoder": {...}` for the transformer) beside the adapter and classes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassifierConfig {
    #[serde(flatten)]
    pub backbone: BackboneConfig,
    pub adapter: AdapterKind,
    pub num_classes: usize,
    /// The dataset label value of each class index (class i ↔ label_values[i]).
    pub label_values: Vec<i64>,
    /// Predictions average the logits of the sequence and of its reverse complement (CNN
    /// backbone only: its input is one-hot, where the reverse complement is a permutation).
    /// Training runs one strand at a time (with `--rc-augment`, either at random); evaluation,
    /// prediction and importance see the average. Absent from older checkpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rc_average: Option<ReverseComplement>,
    /// DynamicGated: the factor on the gate score, α_i = σ(s · q_CLSᵀ k_i). New runs store
    /// 1/√D (the dot-product convention): the spec's unscaled score let one CNN run's α
    /// saturate at 0 for every token, after which no gradient reached the gates again
    /// (docs/engine.md). Absent (unscaled, s = 1) in checkpoints written before, which keep
    /// their outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate_score_scale: Option<f64>,
}

impl FamilyConfig for ClassifierConfig {
    const FAMILY: &'static str = "sequence classifier";
    type Model = Classifier;

    fn validate(&self) -> Result<()> {
        self.backbone.validate()?;
        if self.rc_average.is_some() && !matches!(self.backbone, BackboneConfig::Cnn(_)) {
            bail!("reverse-complement-averaged prediction needs the CNN backbone (its input is one-hot bases)");
        }
        if let Some(s) = self.gate_score_scale {
            if !self.adapter.has_gates() || !s.is_finite() || s <= 0.0 {
                bail!("gate_score_scale {s} needs the gated adapter and a positive finite value");
            }
        }
        check_classes(self.num_classes, &self.label_values)
    }

    fn build(&self, vb: VarBuilder) -> candle_core::Result<Classifier> {
        Classifier::new(self, vb)
    }

    /// A published backbone's weights are always copied from its checkpoint right after the
    /// build (`classify --init`), so only the adapter is drawn: drawing the encoder's 50–120 M
    /// values first took seconds and changed nothing (every draw is keyed by its name, so the
    /// adapter's values are the same either way).
    fn init(&self, varmap: &VarMap, seed: u64) -> Result<()> {
        let skip = match self.backbone {
            BackboneConfig::Dnabert2(_) | BackboneConfig::NtV2(_) => {
                Some(format!("{}.", self.backbone.prefix()))
            }
            _ => None,
        };
        let draw = |name: &str| skip.as_deref().is_none_or(|p| !name.starts_with(p));
        crate::nn::init::init_parameters(varmap, seed, Some(&draw)).map_err(Into::into)
    }
}
