//! The pretraining model: the region encoder, the mask vector and a linear decoder.
//!
//!   X^masked: x̃_i replaced by m for i ∈ 𝓜 (x̃ = the standardised features)
//!   Z = Encoder(X^masked);  x̂_i = z_i W_dec + b_dec  (i ∈ 𝓜)
//!   L = mean over i ∈ 𝓜 and features of (x̂_i − x̃_i)²   (or BCE against x_i > 0)

use candle_core::{Result, Tensor, D};
use candle_nn::VarBuilder;

use super::config::{PretrainLoss, RegionPretrainConfig};
use crate::models::region::{RegionEncoder, RegionTensors, ENCODER_PREFIX};
use crate::models::Model;
use crate::nn::{DropoutRng, Linear};

/// Parameters: `encoder.*` (the region encoder), `mask_vector` [F], `decoder.{weight,bias}`.
#[derive(Debug, Clone)]
pub struct RegionPretrainModel {
    pub config: RegionPretrainConfig,
    pub encoder: RegionEncoder,
    mask_vector: Tensor,
    decoder: Linear,
}

/// The loss of a batch and what the dev metrics need.
pub struct MaskedLoss {
    pub loss: Tensor,
    /// Masked (region, feature) entries scored.
    pub entries: usize,
    /// Σ x̃² over them (the loss of predicting the training mean, for R²), MSE only.
    pub sum_sq_target: f64,
}

impl RegionPretrainModel {
    pub fn new(cfg: &RegionPretrainConfig, vb: VarBuilder) -> Result<Self> {
        let e = &cfg.encoder;
        Ok(Self {
            config: cfg.clone(),
            encoder: RegionEncoder::new(e, vb.pp(ENCODER_PREFIX))?,
            mask_vector: vb.get_with_hints(
                e.n_features,
                "mask_vector",
                candle_nn::Init::Const(0.0),
            )?,
            decoder: Linear::new(e.d_model, e.n_features, vb.pp("decoder"))?,
        })
    }

    /// The loss on the regions flagged in `masked` (`[B, N]`, 1 = masked; only real regions).
    pub fn loss(
        &self,
        t: &RegionTensors,
        masked: &[f32],
        rng: Option<&DropoutRng>,
    ) -> Result<MaskedLoss> {
        let (b, n, f) = t.features.dims3()?;
        let dev = t.features.device();
        let m = Tensor::from_slice(masked, (b, n, 1), dev)?;
        let x = self.encoder.standardise(&t.features)?;
        let input = (x.broadcast_mul(&(1.0 - &m)?)?
            + m.broadcast_mul(&self.mask_vector.reshape((1, 1, f))?)?)?;
        let z = self
            .encoder
            .forward_standardised(&input, &t.offsets, &t.mask, rng)?;
        // Only the masked regions go through the decoder.
        let rows: Vec<u32> = masked
            .iter()
            .enumerate()
            .filter(|(_, &v)| v > 0.0)
            .map(|(i, _)| i as u32)
            .collect();
        let k = rows.len();
        if k == 0 {
            candle_core::bail!("internal: a batch with no masked region");
        }
        let idx = Tensor::from_vec(rows, k, dev)?;
        let d = z.dim(D::Minus1)?;
        let decoded = self
            .decoder
            .forward(&z.reshape((b * n, d))?.index_select(&idx, 0)?)?;
        match self.config.loss {
            PretrainLoss::Mse => {
                let target = x.reshape((b * n, f))?.index_select(&idx, 0)?.detach();
                let sum_sq_target = target.sqr()?.sum_all()?.to_scalar::<f32>()? as f64;
                let loss = (decoded - target)?.sqr()?.mean_all()?;
                Ok(MaskedLoss {
                    loss,
                    entries: k * f,
                    sum_sq_target,
                })
            }
            PretrainLoss::Bce => {
                let raw = t.features.reshape((b * n, f))?.index_select(&idx, 0)?;
                let target = raw.gt(0f32)?.to_dtype(decoded.dtype())?;
                // BCE with logits, stable: max(l, 0) − l·y + ln(1 + e^{−|l|}).
                let loss = ((decoded.relu()? - (&decoded * &target)?)?
                    + (decoded.abs()?.neg()?.exp()? + 1.0)?.log()?)?
                .mean_all()?;
                Ok(MaskedLoss {
                    loss,
                    entries: k * f,
                    sum_sq_target: 0.0,
                })
            }
        }
    }
}

impl Model for RegionPretrainModel {}
