//! A dilated residual CNN over single nucleotides (the BPNet / Basenji family): a wide
//! convolution over the one-hot bases, then residual blocks of a kernel-3 convolution whose
//! dilation doubles each block (1, 2, 4, …), ReLU and dropout, and a final layer norm. Every
//! position's receptive field grows to `first_kernel + 2·Σ dilations` bases, so a few blocks see a
//! whole 100–300 bp sequence, with the inductive bias of motif detectors that transformers on
//! small datasets lack (docs/engine.md).
//!
//! The input is the one-hot encoding of the token ids (`embed`), so gradient × input and
//! integrated gradients attribute to bases as in genomics practice, and the reverse complement
//! of an input is a fixed permutation of it (RC-averaged prediction, `input::strand`).
//! Padding is held at zero before every convolution, so a row's output does not depend on how
//! far its batch is padded.

pub mod args;
pub mod conv;

use anyhow::{bail, Result};
use candle_core::Tensor;
use candle_nn::VarBuilder;
use serde::{Deserialize, Serialize};

pub use args::CnnArgs;
pub use conv::DilatedConv1d;

use crate::nn::{deeplift, maybe_dropout, DropoutRng, LayerNorm};

/// Most dilated blocks: the last block's dilation is 2^(layers − 1).
pub const MAX_CNN_LAYERS: usize = 16;

/// The dilated residual CNN's sizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CnnConfig {
    /// Token vocabulary (one-hot channels of the input).
    pub vocab_size: usize,
    /// Channels of every hidden layer (the hidden width D the adapters see).
    pub channels: usize,
    /// Width of the first convolution over the one-hot input (odd).
    pub first_kernel: usize,
    /// Width of every dilated convolution (odd).
    pub kernel: usize,
    /// Dilated residual blocks; block i has dilation 2^i.
    pub num_layers: usize,
    pub dropout: f64,
    pub max_length: usize,
    pub layer_norm_eps: f64,
    pub pad_id: u32,
}

impl CnnConfig {
    pub fn validate(&self) -> Result<()> {
        if self.vocab_size == 0 {
            bail!("the CNN needs a vocabulary");
        }
        // The caps keep a mistyped size from allocating terabytes before anything is checked.
        if self.channels == 0 || self.channels > 1 << 16 {
            bail!(
                "cnn channels must be between 1 and 65536, got {}",
                self.channels
            );
        }
        for (name, k) in [
            ("cnn first kernel", self.first_kernel),
            ("cnn kernel", self.kernel),
        ] {
            if k % 2 == 0 || k > 4097 {
                bail!("{name} must be odd (centred windows) and at most 4097, got {k}");
            }
        }
        if self.num_layers > MAX_CNN_LAYERS {
            bail!(
                "{} cnn layers (dilated): at most {MAX_CNN_LAYERS} (the last dilation is 2^(layers-1))",
                self.num_layers
            );
        }
        if !(0.0..1.0).contains(&self.dropout) {
            bail!("dropout must be in [0, 1), got {}", self.dropout);
        }
        if self.max_length == 0 {
            bail!("max length must be positive");
        }
        Ok(())
    }
}

/// Parameter names (under `cnn.`): `first.{weight,bias}`, `layers.{i}.{weight,bias}`,
/// `final_norm.{weight,bias}`.
#[derive(Debug, Clone)]
pub struct DilatedResidualCnn {
    cfg: CnnConfig,
    first: DilatedConv1d,
    layers: Vec<DilatedConv1d>,
    final_norm: LayerNorm,
}

impl DilatedResidualCnn {
    pub fn new(cfg: &CnnConfig, vb: VarBuilder) -> candle_core::Result<Self> {
        let c = cfg.channels;
        let first = DilatedConv1d::new(cfg.vocab_size, c, cfg.first_kernel, 1, vb.pp("first"))?;
        let layers = (0..cfg.num_layers)
            .map(|i| DilatedConv1d::new(c, c, cfg.kernel, 1 << i, vb.pp(format!("layers.{i}"))))
            .collect::<candle_core::Result<Vec<_>>>()?;
        let final_norm = LayerNorm::new(c, cfg.layer_norm_eps, vb.pp("final_norm"))?;
        Ok(Self {
            cfg: cfg.clone(),
            first,
            layers,
            final_norm,
        })
    }
}

impl super::Backbone for DilatedResidualCnn {
    fn hidden_size(&self) -> usize {
        self.cfg.channels
    }

    /// The one-hot encoding `[B, L, V]` of the ids (f32).
    fn embed(&self, ids: &Tensor) -> candle_core::Result<Tensor> {
        candle_nn::encoding::one_hot(ids.clone(), self.cfg.vocab_size, 1f32, 0f32)
    }

    fn has_deeplift_rules(&self) -> bool {
        true
    }

    fn forward_from_embeddings(
        &self,
        x: &Tensor,
        mask: &Tensor,
        rng: Option<&DropoutRng>,
    ) -> candle_core::Result<Tensor> {
        let (_, l, _) = x.dims3()?;
        if l > self.cfg.max_length {
            candle_core::bail!(
                "sequence length {l} exceeds the model's max length {}",
                self.cfg.max_length
            );
        }
        // The mask laid out at full width once: element-wise products of equal shapes are
        // candle's fast path, broadcasting a [B, L, 1] mask is not.
        let (b, _, v) = x.dims3()?;
        let m = mask.to_dtype(x.dtype())?.unsqueeze(2)?;
        let x = x.mul(&m.broadcast_as((b, l, v))?.contiguous()?)?;
        let m = m.broadcast_as((b, l, self.cfg.channels))?.contiguous()?;
        let mut h = deeplift::relu(&self.first.forward(&x)?)?.mul(&m)?;
        for conv in &self.layers {
            let branch =
                maybe_dropout(&deeplift::relu(&conv.forward(&h)?)?, self.cfg.dropout, rng)?;
            h = (h + branch.mul(&m)?)?;
        }
        self.final_norm.forward(&h)
    }
}
