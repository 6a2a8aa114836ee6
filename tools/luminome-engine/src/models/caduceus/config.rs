//! The published Caduceus config (`config.json` of a Hugging Face checkpoint, `model_type`
//! `caduceus`), read as its authors write it: the field names of `CaduceusConfig` and of
//! mamba_ssm's `Mamba` arguments under `ssm_cfg`. Fields this family does not use (initialiser
//! settings, `auto_map`, `architectures`, ...) are ignored.

use anyhow::{bail, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How the forward and the reverse Mamba of a block are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BidirectionalStrategy {
    /// out_fwd + out_rev
    Add,
    /// out_fwd ⊙ out_rev
    EwMultiply,
}

/// `dt_rank`: a number, or `"auto"` (⌈d_model / 16⌉).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DtRank {
    Auto,
    Fixed(usize),
}

impl Serialize for DtRank {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Auto => s.serialize_str("auto"),
            Self::Fixed(n) => s.serialize_u64(*n as u64),
        }
    }
}

impl<'de> Deserialize<'de> for DtRank {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(usize),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(Self::Fixed(n)),
            Raw::S(s) if s == "auto" => Ok(Self::Auto),
            Raw::S(s) => Err(serde::de::Error::custom(format!(
                "dt_rank must be a number or \"auto\", not {s:?}"
            ))),
        }
    }
}

/// mamba_ssm `Mamba` arguments (`ssm_cfg`), with its defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SsmConfig {
    pub d_state: usize,
    pub d_conv: usize,
    pub expand: usize,
    pub dt_rank: DtRank,
    /// Bias of the depthwise convolution.
    pub conv_bias: bool,
    /// Bias of `in_proj` and `out_proj`.
    pub bias: bool,
}

impl Default for SsmConfig {
    fn default() -> Self {
        Self {
            d_state: 16,
            d_conv: 4,
            expand: 2,
            dt_rank: DtRank::Auto,
            conv_bias: true,
            bias: false,
        }
    }
}

/// `CaduceusConfig`, with the authors' defaults for absent fields (written back, when a
/// Luminome checkpoint carries it, with the fields this family reads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaduceusConfig {
    #[serde(default)]
    pub model_type: Option<String>,
    pub d_model: usize,
    pub n_layer: usize,
    pub vocab_size: usize,
    #[serde(default)]
    pub ssm_cfg: Option<SsmConfig>,
    #[serde(default = "yes")]
    pub rms_norm: bool,
    #[serde(default = "yes")]
    pub residual_in_fp32: bool,
    #[serde(default = "yes")]
    pub fused_add_norm: bool,
    #[serde(default = "eight")]
    pub pad_vocab_size_multiple: usize,
    #[serde(default = "norm_eps")]
    pub norm_epsilon: f64,
    #[serde(default = "yes")]
    pub bidirectional: bool,
    #[serde(default)]
    pub bidirectional_strategy: Option<BidirectionalStrategy>,
    #[serde(default = "yes")]
    pub bidirectional_weight_tie: bool,
    #[serde(default)]
    pub rcps: bool,
    /// Token id → the id of its complement (JSON keys are the ids as strings).
    #[serde(default)]
    pub complement_map: Option<std::collections::BTreeMap<String, i64>>,
}

fn yes() -> bool {
    true
}
fn eight() -> usize {
    8
}
fn norm_eps() -> f64 {
    1e-5
}

impl CaduceusConfig {
    /// Parses `config.json`; `what` names the file in messages.
    pub fn from_json(text: &str, what: &str) -> Result<Self> {
        let cfg: Self = serde_json::from_str(text)
            .map_err(|e| anyhow::anyhow!("{what}: not a Caduceus config.json: {e}"))?;
        if let Some(t) = &cfg.model_type {
            if t != "caduceus" {
                bail!("{what}: model_type is {t:?}; this family loads Caduceus checkpoints (model_type \"caduceus\", e.g. PlantCaduceus)");
            }
        }
        cfg.validate(what)?;
        Ok(cfg)
    }

    pub fn ssm(&self) -> SsmConfig {
        self.ssm_cfg.clone().unwrap_or_default()
    }

    /// The vocabulary as the model allocates it: `vocab_size` rounded up to
    /// `pad_vocab_size_multiple` (Caduceus pads it at construction; a saved config usually holds
    /// the padded size already).
    pub fn padded_vocab(&self) -> usize {
        let m = self.pad_vocab_size_multiple.max(1);
        self.vocab_size.div_ceil(m) * m
    }

    /// Channels inside a Mamba mixer.
    pub fn inner_dim(&self) -> usize {
        self.ssm().expand * self.d_model
    }

    pub fn dt_rank(&self) -> usize {
        match self.ssm().dt_rank {
            DtRank::Auto => self.d_model.div_ceil(16),
            DtRank::Fixed(r) => r,
        }
    }

    pub fn strategy(&self) -> BidirectionalStrategy {
        self.bidirectional_strategy
            .unwrap_or(BidirectionalStrategy::Add)
    }

    /// Width of the residual stream: 2 · d_model for RC-equivariant (RCPS) models, which carry
    /// the forward and the reverse-complement representation side by side.
    pub fn hidden_width(&self) -> usize {
        if self.rcps {
            2 * self.d_model
        } else {
            self.d_model
        }
    }

    /// The complement of every token id below [`Self::padded_vocab`] (ids not in the map are
    /// their own complement, as Caduceus pads the map).
    pub fn complement_ids(&self, what: &str) -> Result<Vec<u32>> {
        let v = self.padded_vocab();
        let mut comp: Vec<u32> = (0..v as u32).collect();
        if let Some(map) = &self.complement_map {
            for (k, &c) in map {
                let id: usize = k.parse().map_err(|_| {
                    anyhow::anyhow!("{what}: complement_map key {k:?} is not a token id")
                })?;
                if id >= v || c < 0 || c as usize >= v {
                    bail!(
                        "{what}: complement_map {k} -> {c} is outside the vocabulary of {v} tokens"
                    );
                }
                comp[id] = c as u32;
            }
        }
        Ok(comp)
    }

    /// Every size checked before anything is allocated (a config.json is user input).
    pub fn validate(&self, what: &str) -> Result<()> {
        let s = self.ssm();
        let checks = [
            (self.d_model, "d_model", 1, 16_384),
            (self.n_layer, "n_layer", 1, 512),
            (self.vocab_size, "vocab_size", 1, 1 << 16),
            (s.d_state, "ssm_cfg.d_state", 1, 1024),
            (s.d_conv, "ssm_cfg.d_conv", 1, 64),
            (s.expand, "ssm_cfg.expand", 1, 16),
            (self.dt_rank(), "ssm_cfg.dt_rank", 1, 16_384),
            (
                self.pad_vocab_size_multiple,
                "pad_vocab_size_multiple",
                1,
                1 << 12,
            ),
        ];
        for (value, name, lo, hi) in checks {
            if !(lo..=hi).contains(&value) {
                bail!("{what}: {name} = {value} is outside {lo}..={hi}");
            }
        }
        if !(self.norm_epsilon > 0.0 && self.norm_epsilon < 1.0) {
            bail!(
                "{what}: norm_epsilon = {} must be in (0, 1)",
                self.norm_epsilon
            );
        }
        if self.rcps && self.complement_map.is_none() {
            bail!("{what}: an RC-equivariant (rcps) model needs its complement_map");
        }
        self.complement_ids(what)?;
        Ok(())
    }
}
