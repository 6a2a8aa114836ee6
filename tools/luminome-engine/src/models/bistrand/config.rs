//! The bi-strand masked LM's config, its validation and its initialisation.

use anyhow::{bail, Result};
use candle_core::Tensor;
use candle_nn::{VarBuilder, VarMap};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::model::BiStrandModel;
use crate::models::caduceus::CaduceusConfig;
use crate::models::FamilyConfig;
use crate::nn::init::init_parameters;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BiStrandConfig {
    /// The nucleotide vocabulary (10 tokens: 5 specials, A C G T N).
    pub vocab_size: usize,
    /// Hidden width D of each strand.
    pub d_model: usize,
    /// Bidirectional state-space layers per strand.
    pub num_layers: usize,
    /// State size N of the selective scan.
    pub d_state: usize,
    /// Inner channels E = expand · D.
    pub expand: usize,
    /// Taps of the causal depthwise convolution.
    pub d_conv: usize,
    /// Rank of the input-dependent Δ projection.
    pub dt_rank: usize,
    /// Heads of the cross-attention between the strands.
    pub cross_heads: usize,
    /// Cross-attention A→B and B→A (off: two independent strands, for comparison).
    pub cross_attention: bool,
    /// One set of weights for both strands (embedding, layers, cross-attention, fusion, head).
    pub tie_strands: bool,
    /// Longest row accepted (the state-space layers themselves have no length limit).
    pub max_length: usize,
    pub dropout: f64,
    pub layer_norm_eps: f64,
    /// A published encoder under each strand instead of the spec's own embedding → Conv → SSM
    /// stack (`--encoder`); absent in checkpoints without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoder: Option<PublishedEncoder>,
}

/// A published Caduceus model as each strand's encoder (docs/bistrand.md, "From a published
/// encoder"): its embedding and blocks give H_ssm, its LM head is not used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedEncoder {
    /// Where its initial weights came from (a folder or hf:ORG/NAME), for the record.
    pub source: String,
    pub caduceus: CaduceusConfig,
    /// Not trained: its output is detached and its parameters left out of the optimizer.
    pub frozen: bool,
}

/// The bases the LM heads predict, in class order.
pub const BASES: [&str; 4] = ["A", "C", "G", "T"];

impl BiStrandConfig {
    pub fn inner_dim(&self) -> usize {
        self.expand * self.d_model
    }

    /// Parameters of the model, computed from the sizes alone (to refuse absurd metadata before
    /// anything is allocated).
    pub fn parameter_count(&self) -> u128 {
        let (d, e, n, r, k) = (
            self.d_model as u128,
            self.inner_dim() as u128,
            self.d_state as u128,
            self.dt_rank as u128,
            self.d_conv as u128,
        );
        let direction = e * k + e + e * (r + 2 * n) + (r + 2 * n) + r * e + e + e * n + e;
        let layer = 2 * d + d * 2 * e + 2 * e + 2 * direction + e * d + d;
        let strand = self.vocab_size as u128 * d + self.num_layers as u128 * layer + 2 * d;
        let cross = if self.cross_attention {
            4 * (d * d + d)
        } else {
            0
        };
        let fuse_in = if self.cross_attention { 2 * d } else { d };
        let per_strand = strand + cross + fuse_in * d + d + 4 * d + 4;
        if self.tie_strands {
            per_strand
        } else {
            2 * per_strand
        }
    }
}

impl FamilyConfig for BiStrandConfig {
    const FAMILY: &'static str = "bi-strand masked LM";
    type Model = BiStrandModel;

    fn validate(&self) -> Result<()> {
        let sizes = [
            ("d_model", self.d_model),
            ("num_layers", self.num_layers),
            ("d_state", self.d_state),
            ("expand", self.expand),
            ("d_conv", self.d_conv),
            ("dt_rank", self.dt_rank),
            ("cross_heads", self.cross_heads),
            ("max_length", self.max_length),
        ];
        if let Some((name, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            bail!("{name} must be positive");
        }
        if let Some(enc) = &self.encoder {
            enc.caduceus.validate("the published encoder's config")?;
            if enc.caduceus.d_model != self.d_model
                || enc.caduceus.padded_vocab() != self.vocab_size
            {
                bail!(
                    "d_model {} and vocab_size {} must be the published encoder's ({} and {})",
                    self.d_model,
                    self.vocab_size,
                    enc.caduceus.d_model,
                    enc.caduceus.padded_vocab()
                );
            }
        } else if self.vocab_size < 10 {
            bail!(
                "the vocabulary must be the nucleotide one (10 tokens), got {}",
                self.vocab_size
            );
        }
        if self.d_conv > 64 || self.d_state > 1024 || self.max_length > 1 << 24 {
            bail!(
                "d_conv {} (≤ 64), d_state {} (≤ 1024) or max_length {} (≤ 16777216) out of range",
                self.d_conv,
                self.d_state,
                self.max_length
            );
        }
        if !self.d_model.is_multiple_of(self.cross_heads) {
            bail!(
                "d_model ({}) must be a multiple of the cross-attention heads (cross heads: {})",
                self.d_model,
                self.cross_heads
            );
        }
        if !(0.0..1.0).contains(&self.dropout) {
            bail!("dropout must be in [0, 1), got {}", self.dropout);
        }
        if self.parameter_count() > 4_000_000_000 {
            bail!(
                "{} parameters is more than this tool builds",
                self.parameter_count()
            );
        }
        Ok(())
    }

    fn build(&self, vb: VarBuilder) -> candle_core::Result<BiStrandModel> {
        BiStrandModel::new(self, vb)
    }

    /// The usual initialisation, then Mamba's for the state-space parameters: A_log[e, n] =
    /// ln(n + 1) (S4D-real), D = 1, the Δ projection's bias so that softplus(bias) spreads
    /// log-uniformly over [0.001, 0.1] across channels, and the convolution uniform in
    /// ±1/sqrt(K) (PyTorch's default for a depthwise convolution), seeded by name.
    fn init(&self, varmap: &VarMap, seed: u64) -> Result<()> {
        init_parameters(varmap, seed, None)?;
        let data = varmap.data().lock().expect("var map lock");
        let mut names: Vec<&String> = data.keys().collect();
        names.sort();
        let e = self.inner_dim();
        for name in names {
            let var = &data[name];
            let (dev, dt) = (var.device().clone(), var.dtype());
            let values: Option<Vec<f32>> = if name.ends_with(".a_log") {
                Some(
                    (0..e)
                        .flat_map(|_| (0..self.d_state).map(|j| ((j + 1) as f32).ln()))
                        .collect(),
                )
            } else if name.ends_with(".d") {
                Some(vec![1.0; e])
            } else if name.ends_with(".dt_proj.bias") {
                let (lo, hi) = (1e-3f64.ln(), 1e-1f64.ln());
                Some(
                    (0..e)
                        .map(|i| {
                            let dt = (lo + (i as f64 + 0.5) / e as f64 * (hi - lo)).exp();
                            (dt.exp() - 1.0).ln() as f32
                        })
                        .collect(),
                )
            } else if name.ends_with(".conv.weight") {
                let bound = 1.0 / (self.d_conv as f32).sqrt();
                let mut rng =
                    rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ crate::nn::init::name_hash(name));
                Some(
                    (0..var.elem_count())
                        .map(|_| rng.random_range(-bound..bound))
                        .collect(),
                )
            } else {
                None
            };
            if let Some(v) = values {
                var.set(&Tensor::from_vec(v, var.shape(), &dev)?.to_dtype(dt)?)?;
            }
        }
        Ok(())
    }
}
