//! The tabular family's config: the table schema and the architecture.

use anyhow::{bail, Result};
use candle_nn::{VarBuilder, VarMap};
use serde::{Deserialize, Serialize};

use super::model::TabularModel;
use super::schema::TabularSchema;
use crate::backbones::transformer::{AttentionKind, EncoderConfig, PositionEncoding};
use crate::models::FamilyConfig;

/// The network on top of the encoded columns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum TabularArch {
    /// Feature-tokenizer transformer (FT-Transformer, Gorishniy et al. 2021): one token per
    /// column (a number x: x·w_j + b_j, a missing number: m_j; a category: its embedding), a
    /// [CLS] token, the suite's pre-LN encoder blocks, a linear head on [CLS].
    FtTransformer {
        d_model: usize,
        num_layers: usize,
        num_heads: usize,
        ffn_dim: usize,
        dropout: f64,
        /// Standard or genetic attention (absent for standard).
        #[serde(default, skip_serializing_if = "AttentionKind::is_standard")]
        attention: AttentionKind,
    },
    /// The baseline: [standardised numbers, missing flags, category embeddings] →
    /// (Linear → ReLU → dropout) × layers → Linear.
    Mlp {
        hidden: usize,
        num_layers: usize,
        dropout: f64,
        category_dim: usize,
    },
}

impl TabularArch {
    pub fn name(&self) -> &'static str {
        match self {
            Self::FtTransformer { .. } => "ft-transformer",
            Self::Mlp { .. } => "mlp",
        }
    }

    /// Width of one category embedding.
    pub fn category_dim(&self) -> usize {
        match *self {
            Self::FtTransformer { d_model, .. } => d_model,
            Self::Mlp { category_dim, .. } => category_dim,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TabularConfig {
    pub schema: TabularSchema,
    pub arch: TabularArch,
    /// Binary models: a sample is called positive when P(positive) ≥ this (chosen on the
    /// validation rows with --threshold youden); `None`: the most probable class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
}

impl TabularConfig {
    /// The transformer blocks' settings (the token fields are unused: columns are embedded by
    /// the model itself and carry no positions).
    pub fn blocks(&self) -> Option<EncoderConfig> {
        match self.arch {
            TabularArch::FtTransformer {
                d_model,
                num_layers,
                num_heads,
                ffn_dim,
                dropout,
                attention,
            } => Some(EncoderConfig {
                vocab_size: 1,
                d_model,
                num_layers,
                num_heads,
                ffn_dim,
                dropout,
                max_length: self.schema.columns.len() + 1,
                position: PositionEncoding::Learned,
                layer_norm_eps: 1e-5,
                pad_id: 0,
                attention,
            }),
            TabularArch::Mlp { .. } => None,
        }
    }
}

impl FamilyConfig for TabularConfig {
    const FAMILY: &'static str = "tabular classifier";
    type Model = TabularModel;

    fn validate(&self) -> Result<()> {
        self.schema.validate()?;
        let width_ok = |w: usize| (1..=1 << 14).contains(&w);
        match self.arch {
            TabularArch::FtTransformer { num_layers, .. } => {
                let b = self.blocks().expect("transformer");
                b.validate()?;
                if !width_ok(b.d_model) || !width_ok(b.ffn_dim) || num_layers > 64 {
                    bail!("transformer sizes out of range (d_model and FFN width 1-16384, at most 64 layers)");
                }
            }
            TabularArch::Mlp {
                hidden,
                num_layers,
                dropout,
                category_dim,
            } => {
                if !width_ok(hidden)
                    || !width_ok(category_dim)
                    || num_layers == 0
                    || num_layers > 64
                {
                    bail!("MLP sizes out of range (widths 1-16384, 1-64 layers)");
                }
                if !(0.0..1.0).contains(&dropout) {
                    bail!("dropout must be in [0, 1), got {dropout}");
                }
            }
        }
        let slots: usize = self.schema.category_slots().iter().sum();
        if slots.saturating_mul(self.arch.category_dim()) > 1 << 28 {
            bail!("the category embeddings would hold more than 2^28 numbers");
        }
        if let Some(t) = self.threshold {
            if !(0.0..=1.0).contains(&t) || self.schema.classes.len() != 2 {
                bail!("a decision threshold is a probability, for two classes (got {t})");
            }
        }
        Ok(())
    }

    fn build(&self, vb: VarBuilder) -> candle_core::Result<TabularModel> {
        TabularModel::new(self, vb)
    }

    fn init(&self, varmap: &VarMap, seed: u64) -> Result<()> {
        super::model::init_tabular_parameters(varmap, seed)
    }
}
