//! The expression model: the region encoder and a head.
//!
//!   H = Encoder(X)                                    (regions × D)
//!   attention pooling: α = softmax_i(w · h_i) over the real regions, z = Σ α_i h_i,
//!                      r = W_2 GELU(W_1 z + b_1) + b_2
//!   TSS region:        r = w · h_t + b at the TSS region t (GET)
//!   GET's own (`--init` a GET checkpoint): H = GETRegionFinetune's encoder over the sample's
//!                      regions (padding masked), r = head_exp(h_t)[strand] at the TSS region
//!   linear path (optional): r += r_lin, a linear model of the sample's TSS-region and window
//!                      summaries (`linear_path.rs`)
//!   ŷ = softplus(r) (Poisson loss, or GET's head) or r (MSE)

use candle_core::{Result, Tensor};
use candle_nn::VarBuilder;

use super::config::{ExpressionConfig, ExpressionHead, ExpressionLoss};
use super::linear_path::LinearPath;
use crate::models::get_region::GetRegionFinetune;
use crate::models::region::{RegionEncoder, RegionTensors, ENCODER_PREFIX};
use crate::models::Model;
use crate::nn::{attention_bias, softmax_last_dim, softplus, DropoutRng, Linear};

#[derive(Debug, Clone)]
enum Head {
    AttentionPool {
        score: Linear,
        up: Linear,
        down: Linear,
    },
    TssRegion {
        linear: Linear,
    },
    /// GET's `head_exp.head`, inside [`Trunk::Get`].
    Get,
}

#[derive(Debug, Clone)]
enum Trunk {
    Region(RegionEncoder),
    Get(Box<GetRegionFinetune>),
}

/// Parameters: `encoder.*` (the region encoder); `head.pool.weight`, `head.mlp.up.*`,
/// `head.mlp.down.*` (attention pooling) or `head.tss.*` (TSS region); `head.linear.*` (the
/// linear path). With a GET encoder, GET's names (`region_embed.*`, `cls_token`, `encoder.*`,
/// `head_exp.head.*`) and `head.linear.*`.
#[derive(Debug, Clone)]
pub struct ExpressionModel {
    pub config: ExpressionConfig,
    trunk: Trunk,
    head: Head,
    linear: Option<LinearPath>,
}

/// One forward pass.
pub struct ExpressionOutput {
    /// ŷ `[B]`: the predicted expression (a rate for the Poisson loss).
    pub prediction: Tensor,
    /// α `[B, N]` (attention pooling only).
    pub alpha: Option<Tensor>,
}

impl ExpressionModel {
    pub fn new(cfg: &ExpressionConfig, vb: VarBuilder) -> Result<Self> {
        let d = cfg.encoder.d_model;
        let h = vb.pp("head");
        if let Some(get) = &cfg.get {
            let get = GetRegionFinetune::new(get, &vb).map_err(candle_core::Error::wrap)?;
            return Ok(Self {
                config: cfg.clone(),
                trunk: Trunk::Get(Box::new(get)),
                head: Head::Get,
                linear: Self::linear_path(cfg, &h)?,
            });
        }
        let head = match cfg.head {
            ExpressionHead::AttentionPool { mlp_hidden } => Head::AttentionPool {
                score: Linear::no_bias(d, 1, h.pp("pool"))?,
                up: Linear::new(d, mlp_hidden, h.pp("mlp").pp("up"))?,
                down: Linear::new(mlp_hidden, 1, h.pp("mlp").pp("down"))?,
            },
            ExpressionHead::TssRegion => Head::TssRegion {
                linear: Linear::new(d, 1, h.pp("tss"))?,
            },
        };
        Ok(Self {
            config: cfg.clone(),
            trunk: Trunk::Region(RegionEncoder::new(&cfg.encoder, vb.pp(ENCODER_PREFIX))?),
            head,
            linear: Self::linear_path(cfg, &h)?,
        })
    }

    fn linear_path(cfg: &ExpressionConfig, head: &VarBuilder) -> Result<Option<LinearPath>> {
        cfg.linear_path
            .as_ref()
            .map(|l| LinearPath::new(l, cfg.encoder.n_features, head.pp("linear")))
            .transpose()
    }

    /// Predictions from raw features `[B, N, F]` (the batch's, or any tensor of that shape:
    /// gradient methods pass their own) with the batch's positions and mask.
    pub fn forward_features(
        &self,
        features: &Tensor,
        t: &RegionTensors,
        rng: Option<&DropoutRng>,
    ) -> Result<ExpressionOutput> {
        let h = match &self.trunk {
            Trunk::Region(encoder) => encoder.forward(features, &t.offsets, &t.mask, rng)?,
            Trunk::Get(get) => get
                .hidden_masked(features, &t.mask)
                .map_err(candle_core::Error::wrap)?,
        };
        let (b, n, d) = h.dims3()?;
        let (raw, alpha) = match &self.head {
            Head::AttentionPool { score, up, down } => {
                let s = score.forward(&h)?.reshape((b, 1, 1, n))?;
                let s = s.broadcast_add(&attention_bias(&t.mask, s.dtype())?)?;
                let alpha = softmax_last_dim(&s)?.reshape((b, 1, n))?;
                let z = crate::nn::matmul::device_matmul(&alpha, &h)?.reshape((b, d))?;
                let r = down.forward(&crate::nn::gelu(&up.forward(&z)?)?)?;
                (r.reshape(b)?, Some(alpha.reshape((b, n))?))
            }
            Head::TssRegion { linear } => {
                (linear.forward(&at_read_slots(&h, t)?)?.reshape(b)?, None)
            }
            Head::Get => (self.get_head(&h, t)?, None),
        };
        let raw = match &self.linear {
            Some(l) => (raw + l.forward(features, t)?)?,
            None => raw,
        };
        let prediction = if self.config.softplus_output() {
            softplus(&raw)?
        } else {
            raw
        };
        Ok(ExpressionOutput { prediction, alpha })
    }

    /// GET's `head_exp` (before its Softplus) at each sample's read slot, in the column of the
    /// gene's strand (0: +, 1: −; a gene without a strand reads the mean of both).
    fn get_head(&self, h: &Tensor, t: &RegionTensors) -> Result<Tensor> {
        let Trunk::Get(get) = &self.trunk else {
            candle_core::bail!("internal: GET's head without GET's encoder")
        };
        let b = h.dims3()?.0;
        let out = get
            .head_raw(&at_read_slots(h, t)?)
            .map_err(candle_core::Error::wrap)?;
        let strands = t.host.strand.as_deref().unwrap_or(&[]);
        let pick: Vec<f32> = (0..b)
            .flat_map(|i| match strands.get(i) {
                Some(1) => [1.0, 0.0],
                Some(-1) => [0.0, 1.0],
                _ => [0.5, 0.5],
            })
            .collect();
        let pick = Tensor::from_vec(pick, (b, 2), h.device())?;
        out.mul(&pick)?.sum(1)
    }

    pub fn forward(&self, t: &RegionTensors, rng: Option<&DropoutRng>) -> Result<ExpressionOutput> {
        self.forward_features(&t.features, t, rng)
    }

    /// The training loss of predictions `[B]` against targets: mean Poisson NLL ŷ − y ln(ŷ + ε)
    /// (ε = 1e-8, PyTorch's) or mean squared error.
    pub fn loss(&self, prediction: &Tensor, targets: &[f32]) -> Result<Tensor> {
        let y = Tensor::from_slice(targets, targets.len(), prediction.device())?;
        match self.config.loss {
            ExpressionLoss::Poisson => {
                (prediction - (&y * (prediction + 1e-8)?.log()?)?)?.mean_all()
            }
            ExpressionLoss::Mse => (prediction - &y)?.sqr()?.mean_all(),
        }
    }

    /// Gradient-free predictions as numbers.
    pub fn predict(&self, t: &RegionTensors) -> Result<Vec<f32>> {
        self.forward(t, None)?.prediction.to_vec1()
    }

    /// Hidden width.
    pub fn hidden_size(&self) -> usize {
        self.config.encoder.d_model
    }
}

/// Each sample's state at the slot a TSS-region head reads: `[B, N, D]` → `[B, D]`.
fn at_read_slots(h: &Tensor, t: &RegionTensors) -> Result<Tensor> {
    let (b, n, d) = h.dims3()?;
    let rows: Vec<u32> = t
        .read_slots
        .iter()
        .enumerate()
        .map(|(i, &s)| (i * n + s) as u32)
        .collect();
    let idx = Tensor::from_vec(rows, b, h.device())?;
    h.reshape((b * n, d))?.index_select(&idx, 0)
}

impl Model for ExpressionModel {}
