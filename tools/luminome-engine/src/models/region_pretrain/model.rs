//! The pretraining model: the region encoder, the mask vector and a linear decoder.
//!
//! Target `all` (every feature hidden):
//!   X^masked: x̃_i replaced by m for i ∈ 𝓜 (x̃ = the standardised features)
//!   Z = Encoder(X^masked);  x̂_i = z_i W_dec + b_dec  (i ∈ 𝓜)
//!   L = mean over i ∈ 𝓜 and features of (x̂_i − x̃_i)²   (or BCE against x_i > 0)
//!
//! Target `accessibility` (only the last feature, a, hidden; the motifs stay visible):
//!   X^masked: x̃_i with x̃_i,a set to 0, plus m_a, for i ∈ 𝓜
//!   Z = Encoder(X^masked);  â_i = z_i w_acc + b_acc  (i ∈ 𝓜)
//!   L = mean over i ∈ 𝓜 of (â_i − x̃_i,a)²

use candle_core::{Result, Tensor, D};
use candle_nn::VarBuilder;

use super::config::{PretrainLoss, PretrainTarget, RegionPretrainConfig};
use crate::models::region::{RegionEncoder, RegionTensors, ENCODER_PREFIX};
use crate::models::Model;
use crate::nn::{DropoutRng, Linear};

/// Parameters: `encoder.*` (the region encoder) and, for target `all`, `mask_vector` [F] and
/// `decoder.{weight,bias}` (D → F); for target `accessibility`, `acc_mask_vector` [F] and
/// `acc_decoder.{weight,bias}` (D → 1). `--init` of an expression model copies `encoder.*` only.
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
    /// Masked entries scored: (region, feature) pairs, or regions for target `accessibility`.
    pub entries: usize,
    /// Σ x̃² over them (the loss of predicting the training mean, for R²), MSE only.
    pub sum_sq_target: f64,
}

/// The decoder's outputs at the masked regions and what they are scored against.
pub struct MaskedPrediction {
    /// `[K, F]` (target `all`) or `[K, 1]` (target `accessibility`), K = masked regions in
    /// row-major (sample, slot) order.
    pub decoded: Tensor,
    /// The standardised targets, the same shape (detached).
    pub target: Tensor,
    /// The masked regions' raw features `[K, F]`.
    pub raw: Tensor,
}

impl RegionPretrainModel {
    pub fn new(cfg: &RegionPretrainConfig, vb: VarBuilder) -> Result<Self> {
        let e = &cfg.encoder;
        let (mask_name, decoder_name, outputs) = match cfg.target {
            PretrainTarget::All => ("mask_vector", "decoder", e.n_features),
            PretrainTarget::Accessibility => ("acc_mask_vector", "acc_decoder", 1),
        };
        Ok(Self {
            config: cfg.clone(),
            encoder: RegionEncoder::new(e, vb.pp(ENCODER_PREFIX))?,
            mask_vector: vb.get_with_hints(e.n_features, mask_name, candle_nn::Init::Const(0.0))?,
            decoder: Linear::new(e.d_model, outputs, vb.pp(decoder_name))?,
        })
    }

    /// The encoder's input `[B, N, F]` for standardised features `x` `[B, N, F]` and the
    /// masked flags `m` `[B, N, 1]`: target `all` replaces a masked region by the mask vector;
    /// target `accessibility` zeroes its last feature (the standardised accessibility) and adds
    /// the mask vector, so the hidden value never reaches the encoder.
    pub fn masked_input(&self, x: &Tensor, m: &Tensor) -> Result<Tensor> {
        let f = x.dim(D::Minus1)?;
        let mv = self.mask_vector.reshape((1, 1, f))?;
        match self.config.target {
            PretrainTarget::All => x.broadcast_mul(&(1.0 - m)?)? + m.broadcast_mul(&mv)?,
            PretrainTarget::Accessibility => {
                let mut last = vec![0f32; f];
                last[f - 1] = 1.0;
                let last = Tensor::from_vec(last, (1, 1, f), x.device())?.to_dtype(x.dtype())?;
                let hidden = m.broadcast_mul(&last)?;
                x.broadcast_mul(&(1.0 - hidden)?)? + m.broadcast_mul(&mv)?
            }
        }
    }

    /// The decoder's outputs at the regions flagged in `masked` (`[B, N]`, 1 = masked; only
    /// real regions) and their targets.
    pub fn predict_masked(
        &self,
        t: &RegionTensors,
        masked: &[f32],
        rng: Option<&DropoutRng>,
    ) -> Result<MaskedPrediction> {
        let (b, n, f) = t.features.dims3()?;
        if masked.len() != b * n {
            candle_core::bail!(
                "internal: {} mask flags for a batch of {b} x {n} slots",
                masked.len()
            );
        }
        let dev = t.features.device();
        let m = Tensor::from_slice(masked, (b, n, 1), dev)?;
        let x = self.encoder.standardise(&t.features)?;
        let input = self.masked_input(&x, &m)?;
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
        let x = x.reshape((b * n, f))?.index_select(&idx, 0)?.detach();
        let target = match self.config.target {
            PretrainTarget::All => x,
            PretrainTarget::Accessibility => x.narrow(1, f - 1, 1)?,
        };
        let raw = t.features.reshape((b * n, f))?.index_select(&idx, 0)?;
        Ok(MaskedPrediction {
            decoded,
            target,
            raw,
        })
    }

    /// The loss on the regions flagged in `masked` (`[B, N]`, 1 = masked; only real regions).
    pub fn loss(
        &self,
        t: &RegionTensors,
        masked: &[f32],
        rng: Option<&DropoutRng>,
    ) -> Result<MaskedLoss> {
        let MaskedPrediction {
            decoded,
            target,
            raw,
        } = self.predict_masked(t, masked, rng)?;
        let entries = target.elem_count();
        match self.config.loss {
            PretrainLoss::Mse => {
                let sum_sq_target = target.sqr()?.sum_all()?.to_scalar::<f32>()? as f64;
                let loss = (decoded - target)?.sqr()?.mean_all()?;
                Ok(MaskedLoss {
                    loss,
                    entries,
                    sum_sq_target,
                })
            }
            PretrainLoss::Bce => {
                if self.config.target != PretrainTarget::All {
                    candle_core::bail!("the accessibility target is scored by MSE only");
                }
                let target = raw.gt(0f32)?.to_dtype(decoded.dtype())?;
                // BCE with logits, stable: max(l, 0) − l·y + ln(1 + e^{−|l|}).
                let loss = ((decoded.relu()? - (&decoded * &target)?)?
                    + (decoded.abs()?.neg()?.exp()? + 1.0)?.log()?)?
                .mean_all()?;
                Ok(MaskedLoss {
                    loss,
                    entries,
                    sum_sq_target: 0.0,
                })
            }
        }
    }
}

impl Model for RegionPretrainModel {}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device};
    use candle_nn::VarMap;
    use luminome_io::region_dataset::RegionBatch;

    use super::*;
    use crate::backbones::transformer::config::AttentionKind;
    use crate::models::region::data::{init_region_parameters, set_standardisation};
    use crate::models::region::{RegionEncoderConfig, RegionPosition};
    use crate::models::{parameter_names, FamilyConfig};

    const B: usize = 2;
    const N: usize = 5;
    const F: usize = 4;

    fn config(target: PretrainTarget) -> RegionPretrainConfig {
        RegionPretrainConfig {
            encoder: RegionEncoderConfig {
                n_features: F,
                d_model: 8,
                num_layers: 1,
                num_heads: 2,
                ffn_dim: 16,
                dropout: 0.0,
                max_regions: N,
                position: RegionPosition::TssRelative,
                layer_norm_eps: 1e-5,
                attention: AttentionKind::Standard,
            },
            loss: PretrainLoss::Mse,
            target,
            holdout: None,
        }
    }

    /// A model with seeded weights, a non-trivial standardisation and a non-zero mask vector.
    fn model(target: PretrainTarget) -> (VarMap, RegionPretrainModel) {
        let cfg = config(target);
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
        let m = RegionPretrainModel::new(&cfg, vb).unwrap();
        init_region_parameters(&varmap, 7).unwrap();
        set_standardisation(&varmap, "encoder.", &MEAN, &SCALE).unwrap();
        let name = match target {
            PretrainTarget::All => "mask_vector",
            PretrainTarget::Accessibility => "acc_mask_vector",
        };
        let data = varmap.data().lock().unwrap();
        data[name]
            .set(&Tensor::new(&[0.3f32, -0.2, 0.5, 0.7], &Device::Cpu).unwrap())
            .unwrap();
        drop(data);
        (varmap, m)
    }

    const MEAN: [f32; F] = [0.5, 1.0, -0.5, 2.0];
    const SCALE: [f32; F] = [2.0, 0.5, 1.0, 0.25];
    /// Sample 0 has 4 regions, sample 1 all 5.
    const USED: [usize; B] = [4, 5];
    /// Masked: sample 0 slots 1 and 3, sample 1 slots 0, 2 and 4.
    const MASKED: [f32; B * N] = [0., 1., 0., 1., 0., 1., 0., 1., 0., 1.];

    fn features() -> Vec<f32> {
        (0..B * N * F)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) / 5.0)
            .collect()
    }

    fn tensors(features: Vec<f32>) -> RegionTensors {
        let mut region_mask = vec![0u8; B * N];
        for (r, &u) in USED.iter().enumerate() {
            region_mask[r * N..r * N + u].fill(1);
        }
        let b = RegionBatch {
            batch: B,
            n_regions: N,
            n_features: F,
            features,
            region_mask,
            tss_index: vec![1, 2],
            region_index: (0..(B * N) as i64).collect(),
            tss_slot: Some(vec![1, 2]),
            strand: Some(vec![1, -1]),
            expression: None,
        };
        RegionTensors::from_host(b, N, &Device::Cpu).unwrap()
    }

    fn decoded(m: &RegionPretrainModel, features: Vec<f32>) -> Vec<Vec<f32>> {
        m.predict_masked(&tensors(features), &MASKED, None)
            .unwrap()
            .decoded
            .to_vec2()
            .unwrap()
    }

    fn max_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
        a.iter()
            .flatten()
            .zip(b.iter().flatten())
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    #[test]
    fn a_masked_regions_accessibility_never_reaches_the_model_but_its_motifs_do() {
        let (_v, m) = model(PretrainTarget::Accessibility);
        let x = features();
        let base = decoded(&m, x.clone());
        assert_eq!((base.len(), base[0].len()), (5, 1));
        // The accessibility (last feature) of every masked region changed: the same outputs.
        let mut y = x.clone();
        for (slot, &flag) in MASKED.iter().enumerate() {
            if flag > 0.0 {
                y[slot * F + F - 1] += 40.0 + slot as f32;
            }
        }
        assert_eq!(
            decoded(&m, y),
            base,
            "masked accessibility leaks into the input"
        );
        // A masked region's motif feature, or an unmasked neighbour's accessibility, does.
        let mut motif = x.clone();
        motif[F] += 3.0; // sample 0, slot 1 (masked), feature 0
        assert!(max_diff(&decoded(&m, motif), &base) > 1e-6);
        let mut neighbour = x.clone();
        neighbour[2 * F + F - 1] += 3.0; // sample 0, slot 2 (unmasked), accessibility
        assert!(max_diff(&decoded(&m, neighbour), &base) > 1e-6);
        // The old objective hides the motifs too: a masked region's motif changes nothing.
        let (_v, all) = model(PretrainTarget::All);
        let base = decoded(&all, x.clone());
        let mut motif = x.clone();
        motif[F] += 3.0;
        assert_eq!(decoded(&all, motif), base);
    }

    #[test]
    fn the_accessibility_loss_is_the_mse_of_the_masked_regions_standardised_accessibility() {
        let (_v, m) = model(PretrainTarget::Accessibility);
        let x = features();
        let t = tensors(x.clone());
        let pred: Vec<f32> = m
            .predict_masked(&t, &MASKED, None)
            .unwrap()
            .decoded
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        // The targets computed here from the raw batch, slot by slot.
        let target: Vec<f32> = MASKED
            .iter()
            .enumerate()
            .filter(|(_, &f)| f > 0.0)
            .map(|(slot, _)| (x[slot * F + F - 1] - MEAN[F - 1]) * SCALE[F - 1])
            .collect();
        assert_eq!(pred.len(), target.len());
        let mse = pred
            .iter()
            .zip(&target)
            .map(|(p, y)| ((p - y) as f64).powi(2))
            .sum::<f64>()
            / target.len() as f64;
        let l = m.loss(&t, &MASKED, None).unwrap();
        let loss = l.loss.to_scalar::<f32>().unwrap() as f64;
        assert!((loss - mse).abs() < 1e-5 * mse.max(1.0), "{loss} vs {mse}");
        assert_eq!(l.entries, 5);
        let sq: f64 = target.iter().map(|&y| (y as f64).powi(2)).sum();
        assert!((l.sum_sq_target - sq).abs() < 1e-4 * sq);
        // Neither the motif features nor the unmasked regions are targets.
        let mut y = x.clone();
        y[F + 1] += 5.0; // sample 0, slot 1 (masked), a motif feature
        y[2 * F + F - 1] += 5.0; // sample 0, slot 2 (unmasked), accessibility
        let l2 = m.loss(&tensors(y), &MASKED, None).unwrap();
        assert!((l2.sum_sq_target - sq).abs() < 1e-4 * sq);
        assert_eq!(l2.entries, 5);
    }

    #[test]
    fn the_target_is_stored_only_when_not_all_and_names_its_own_parameters() {
        let (va, _) = model(PretrainTarget::All);
        let (vc, _) = model(PretrainTarget::Accessibility);
        let extra = |v: &VarMap| -> Vec<String> {
            parameter_names(v)
                .into_iter()
                .filter(|n| !n.starts_with("encoder."))
                .collect()
        };
        assert_eq!(
            extra(&va),
            ["decoder.bias", "decoder.weight", "mask_vector"]
        );
        assert_eq!(
            extra(&vc),
            ["acc_decoder.bias", "acc_decoder.weight", "acc_mask_vector"]
        );
        let enc = |v: &VarMap| -> Vec<String> {
            parameter_names(v)
                .into_iter()
                .filter(|n| n.starts_with("encoder."))
                .collect()
        };
        assert_eq!(enc(&va), enc(&vc));
        let all = serde_json::to_string(&config(PretrainTarget::All)).unwrap();
        assert!(!all.contains("target"), "{all}");
        let old: RegionPretrainConfig = serde_json::from_str(&all).unwrap();
        assert_eq!(old.target, PretrainTarget::All);
        let acc = serde_json::to_string(&config(PretrainTarget::Accessibility)).unwrap();
        assert!(acc.contains(r#""target":"accessibility""#), "{acc}");
        let back: RegionPretrainConfig = serde_json::from_str(&acc).unwrap();
        assert_eq!(back.target, PretrainTarget::Accessibility);
        let mut bce = config(PretrainTarget::Accessibility);
        bce.loss = PretrainLoss::Bce;
        assert!(bce.validate().is_err());
        assert!(config(PretrainTarget::Accessibility).validate().is_ok());
    }
}
