//! The region encoder (GET-like, `specs/region-expression-transformer.md`):
//!
//!   x̃_i = (x_i − μ) ⊙ s                      (per-feature standardisation from the training set)
//!   h_i = x̃_i W_Emb [+ P(offset_i)]           (RegionEmb: linear, no activation, no bias)
//!   H   = TransformerEncoder(h), padding slots masked out of every attention score
//!
//! μ and s are stored with the weights (`region_emb.input_mean`, `region_emb.input_scale`) but
//! are not trained: motif sums and logCPM accessibility differ in scale by an order of magnitude,
//! and an unscaled linear embedding lets the largest features dominate the first steps.

use candle_core::{Module, Result, Tensor};
use candle_nn::{Embedding, VarBuilder};

use super::config::{RegionEncoderConfig, RegionPosition};
use crate::backbones::EncoderStack;
use crate::nn::{maybe_dropout, DropoutRng, Linear};

/// Parameter names (under the caller's prefix, `encoder.` in every region family):
/// `region_emb.{weight,input_mean,input_scale}`, `tss_offset_emb.weight` (tss-relative
/// positions), `layers.{i}.*`, `final_norm.*`.
#[derive(Debug, Clone)]
pub struct RegionEncoder {
    pub config: RegionEncoderConfig,
    input_mean: Tensor,
    input_scale: Tensor,
    region_emb: Linear,
    tss_offset_emb: Option<Embedding>,
    stack: EncoderStack,
}

/// The names of the standardisation buffers (stored, never trained).
pub const STANDARDISATION: [&str; 2] = ["region_emb.input_mean", "region_emb.input_scale"];

impl RegionEncoder {
    pub fn new(cfg: &RegionEncoderConfig, vb: VarBuilder) -> Result<Self> {
        let f = cfg.n_features;
        let emb = vb.pp("region_emb");
        let offsets = vb.pp("tss_offset_emb");
        Ok(Self {
            config: cfg.clone(),
            input_mean: emb.get_with_hints(f, "input_mean", candle_nn::Init::Const(0.0))?,
            input_scale: emb.get_with_hints(f, "input_scale", candle_nn::Init::Const(1.0))?,
            region_emb: Linear::no_bias(f, cfg.d_model, emb)?,
            tss_offset_emb: match cfg.position {
                RegionPosition::TssRelative => Some(candle_nn::embedding(
                    2 * cfg.max_offset() + 1,
                    cfg.d_model,
                    offsets,
                )?),
                RegionPosition::None => None,
            },
            stack: EncoderStack::new(&cfg.blocks(), false, vb)?,
        })
    }

    /// Standardised features `[B, N, F]` of raw ones.
    pub fn standardise(&self, x: &Tensor) -> Result<Tensor> {
        x.broadcast_sub(&self.input_mean)?
            .broadcast_mul(&self.input_scale)
    }

    /// Hidden states `[B, N, D]` of standardised features `[B, N, F]`, position indices
    /// `[B, N]` (u32, [`super::RegionTensors::offsets`]) and the region mask `[B, N]` (f32).
    pub fn forward_standardised(
        &self,
        x: &Tensor,
        offsets: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> Result<Tensor> {
        let (_, n, _) = x.dims3()?;
        if n > self.config.max_regions {
            candle_core::bail!(
                "samples of {n} regions exceed the model's {} region slots",
                self.config.max_regions
            );
        }
        let mut h = self.region_emb.forward(x)?;
        if let Some(e) = &self.tss_offset_emb {
            h = (h + e.forward(offsets)?)?;
        }
        let h = maybe_dropout(&h, self.config.dropout, rng)?;
        self.stack.forward(&h, mask, rng)
    }

    /// Hidden states of raw features.
    pub fn forward(
        &self,
        x: &Tensor,
        offsets: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> Result<Tensor> {
        self.forward_standardised(&self.standardise(x)?, offsets, mask, rng)
    }
}
