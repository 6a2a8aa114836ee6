//! The dual encoder: two transformer encoders (or one shared), masked mean pooling, L2
//! normalisation, and the InfoNCE loss over in-batch negatives.

use candle_core::{DType, Result, Tensor, D};
use candle_nn::VarBuilder;
use luminome_io::retrieval_pairs::Side;

use super::config::DualConfig;
use crate::backbones::Encoder;
use crate::nn::{masked_mean, DropoutRng, MASK_BIAS};

/// ε of the masked mean (as the classifier's LinearMeanPool).
const MEAN_EPS: f64 = 1e-9;
/// Added to the squared norm before the square root: keeps the gradient of a zero vector finite.
const NORM_EPS: f64 = 1e-12;

/// Parameter names: `encoder.*` (shared) or `query_encoder.*` and `passage_encoder.*`, each the
/// suite's encoder (`tok_emb`, `pos_emb`, `layers.{i}.*`, `final_norm`).
#[derive(Debug, Clone)]
pub struct DualEncoder {
    pub config: DualConfig,
    query: Encoder,
    passage: Option<Encoder>,
}

impl crate::models::Model for DualEncoder {}

impl DualEncoder {
    pub fn new(cfg: &DualConfig, vb: VarBuilder) -> Result<Self> {
        let (query, passage) = if cfg.shared {
            (Encoder::new(&cfg.encoder, vb.pp("encoder"))?, None)
        } else {
            (
                Encoder::new(&cfg.encoder, vb.pp("query_encoder"))?,
                Some(Encoder::new(&cfg.encoder, vb.pp("passage_encoder"))?),
            )
        };
        Ok(Self {
            config: cfg.clone(),
            query,
            passage,
        })
    }

    pub fn encoder(&self, side: Side) -> &Encoder {
        match (side, &self.passage) {
            (Side::Passage, Some(p)) => p,
            _ => &self.query,
        }
    }

    /// Masked mean of the hidden states `[B, D]` of ids `[B, L]` with mask `[B, L]` (not
    /// normalised).
    pub fn pooled(
        &self,
        side: Side,
        ids: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> Result<Tensor> {
        let h = self.encoder(side).forward(ids, mask, rng)?;
        masked_mean(&h, mask, MEAN_EPS)
    }

    /// L2-normalised embeddings `[B, D]`.
    pub fn embed(
        &self,
        side: Side,
        ids: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> Result<Tensor> {
        l2_normalize(&self.pooled(side, ids, mask, rng)?)
    }

    /// InfoNCE over in-batch negatives: the mean over queries i of
    /// −log softmax_j(cos(q_i, p_j) / τ)[i], for normalised embeddings `q`, `p` `[B, D]` (row i
    /// of each a pair). `exclude` `[B, B]` (1.0 where passage j ≠ i is not a negative of query i:
    /// a copy of its positive, or another positive of the same query) removes those logits.
    pub fn info_nce(&self, q: &Tensor, p: &Tensor, exclude: Option<&Tensor>) -> Result<Tensor> {
        info_nce(q, p, self.config.temperature, exclude)
    }
}

/// x / ‖x‖ over the last dimension.
pub fn l2_normalize(x: &Tensor) -> Result<Tensor> {
    let norm = (x.sqr()?.sum_keepdim(D::Minus1)? + NORM_EPS)?.sqrt()?;
    x.broadcast_div(&norm)
}

/// See [`DualEncoder::info_nce`].
pub fn info_nce(
    q: &Tensor,
    p: &Tensor,
    temperature: f64,
    exclude: Option<&Tensor>,
) -> Result<Tensor> {
    let b = q.dim(0)?;
    let mut logits = (crate::nn::matmul::device_matmul(q, &p.t()?)? / temperature)?;
    if let Some(e) = exclude {
        let bias = (e.to_dtype(logits.dtype())? * MASK_BIAS)?;
        logits = (logits + bias)?;
    }
    let logp = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
    let eye = Tensor::eye(b, DType::F32, q.device())?.to_dtype(logp.dtype())?;
    (logp * eye)?.sum_all()? / (-(b as f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::gradcheck::max_grad_error;
    use crate::nn::kernels::test_support::randn;
    use candle_core::Device;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn info_nce_by_hand() {
        // q = (1, 0), (0, 1); p = (1, 0), (0.6, 0.8); τ = 0.5.
        // Row 0 logits: (2, 1.2): −log(e²/(e² + e^1.2)); row 1: (0, 1.6): −log(e^1.6/(1 + e^1.6)).
        let q = Tensor::new(&[[1f64, 0.], [0., 1.]], &Device::Cpu).unwrap();
        let p = Tensor::new(&[[1f64, 0.], [0.6, 0.8]], &Device::Cpu).unwrap();
        let l0 = -(2f64.exp() / (2f64.exp() + 1.2f64.exp())).ln();
        let l1 = -(1.6f64.exp() / (1.0 + 1.6f64.exp())).ln();
        let got = info_nce(&q, &p, 0.5, None)
            .unwrap()
            .to_scalar::<f64>()
            .unwrap();
        assert!(close(got, (l0 + l1) / 2.0), "{got}");
        // Excluding passage 1 for query 0 leaves only its positive: loss 0 for that row.
        let ex = Tensor::new(&[[0f64, 1.], [0., 0.]], &Device::Cpu).unwrap();
        let got = info_nce(&q, &p, 0.5, Some(&ex))
            .unwrap()
            .to_scalar::<f64>()
            .unwrap();
        assert!(close(got, l1 / 2.0), "{got}");
    }

    #[test]
    fn normalisation_and_loss_gradients_match_finite_differences() {
        let p = l2_normalize(&randn(&[4, 6], 2)).unwrap();
        let f = |x: &Tensor| info_nce(&l2_normalize(x)?, &p, 0.1, None);
        let err = max_grad_error(&randn(&[4, 6], 1), 1e-6, &f).unwrap();
        assert!(err < 1e-6, "{err}");
        let n = l2_normalize(&randn(&[3, 5], 4)).unwrap();
        let norms: Vec<f64> = n.sqr().unwrap().sum(1).unwrap().to_vec1().unwrap();
        assert!(norms.iter().all(|&v| (v - 1.0).abs() < 1e-12), "{norms:?}");
    }
}
