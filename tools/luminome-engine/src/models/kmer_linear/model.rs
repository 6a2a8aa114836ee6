//! logits = x W + b, x the k-mer features of the row's bases (see `features`).

use candle_core::{DType, Result, Tensor};
use candle_nn::VarBuilder;

use super::config::KmerLinearConfig;
use super::features::{row_bases, KmerLayout};
use crate::models::token::TokenClassifier;
use crate::models::Model;
use crate::nn::DropoutRng;

/// Parameters: `weight` `[features, classes]`, `bias` `[classes]`.
#[derive(Debug, Clone)]
pub struct KmerLinear {
    pub config: KmerLinearConfig,
    pub weight: Tensor,
    pub bias: Tensor,
}

impl KmerLinear {
    pub fn new(cfg: &KmerLinearConfig, vb: VarBuilder) -> Result<Self> {
        let f = cfg.layout().len();
        Ok(Self {
            config: cfg.clone(),
            weight: vb.get((f, cfg.num_classes), "weight")?,
            bias: vb.get(cfg.num_classes, "bias")?,
        })
    }

    pub fn layout(&self) -> KmerLayout {
        self.config.layout()
    }

    /// The weights as plain vectors: `[features * classes]` row-major and `[classes]`.
    pub fn weights(&self) -> Result<(Vec<f32>, Vec<f32>)> {
        Ok((
            self.weight.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?,
            self.bias.to_dtype(DType::F32)?.to_vec1()?,
        ))
    }

    /// Bases of each row of ids `[B, L]` with mask `[B, L]`.
    pub fn bases(&self, ids: &Tensor, mask: &Tensor) -> Result<Vec<Vec<u8>>> {
        let ids = ids.to_dtype(DType::U32)?.to_vec2::<u32>()?;
        let mask = mask.to_dtype(DType::F32)?.to_vec2::<f32>()?;
        Ok(ids
            .iter()
            .zip(&mask)
            .map(|(i, m)| {
                let m: Vec<u8> = m.iter().map(|&v| u8::from(v != 0.0)).collect();
                row_bases(&self.config.tokenizer, i, &m).unwrap_or_default()
            })
            .collect())
    }

    /// Logits of each row of bases.
    pub fn logits_of_bases(&self, rows: &[Vec<u8>]) -> Result<Vec<Vec<f32>>> {
        let (w, b) = self.weights()?;
        let c = self.config.num_classes;
        let layout = self.layout();
        Ok(rows
            .iter()
            .map(|bases| {
                let mut z: Vec<f32> = b.clone();
                for (f, v) in layout.features(bases, &self.config.scale) {
                    for k in 0..c {
                        z[k] += v * w[f as usize * c + k];
                    }
                }
                z
            })
            .collect())
    }

    /// Contribution of every base of a row to the logit difference `class − mean over classes`
    /// (for two classes, half of logit(class) − logit(other)): each counted k-mer adds its weight
    /// times its feature value, shared equally among its k bases. The contributions sum to the
    /// row's logit difference minus the bias term.
    pub fn base_contributions(&self, bases: &[u8], class: usize) -> Result<Vec<f32>> {
        let (w, _) = self.weights()?;
        let c = self.config.num_classes;
        let layout = self.layout();
        let positions = layout.positions(bases);
        let mut out = vec![0f32; bases.len()];
        for (k, start, code) in layout.occurrences(bases) {
            let f = layout.offset(k) + code;
            let row = &w[f * c..(f + 1) * c];
            let centred = row[class] - row.iter().sum::<f32>() / c as f32;
            // A k-mer's feature value is (count × scale / positions): one occurrence's share.
            let j = k - layout.k_min;
            let share = (self.config.scale[j] / positions[j] as f64) as f32;
            for b in &mut out[start..start + k] {
                *b += centred * share / k as f32;
            }
        }
        Ok(out)
    }
}

impl Model for KmerLinear {}

impl TokenClassifier for KmerLinear {
    fn label_values(&self) -> &[i64] {
        &self.config.label_values
    }

    fn max_length(&self) -> usize {
        self.config.max_length
    }

    fn logits(&self, ids: &Tensor, mask: &Tensor, _rng: Option<&DropoutRng>) -> Result<Tensor> {
        let rows = self.bases(ids, mask)?;
        let z = self.logits_of_bases(&rows)?;
        let (b, c) = (z.len(), self.config.num_classes);
        Tensor::from_vec(z.concat(), (b, c), ids.device())
    }
}
