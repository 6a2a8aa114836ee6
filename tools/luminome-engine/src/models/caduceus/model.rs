//! Caduceus as its authors wrote it (kuleshov-group/caduceus, `modeling_caduceus.py` and
//! `modeling_rcps.py`), parameter names and shapes unchanged, for inference.
//!
//! - [`Mamba`]: mamba_ssm's `Mamba` (in_proj → causal depthwise conv → SiLU → x_proj → Δ, B, C →
//!   selective scan with D skip → ⊙ SiLU(z) → out_proj), on the engine's one selective scan and
//!   depthwise convolution (the bi-strand family's, `reverse` for the backward direction).
//! - [`BiMamba`]: `BiMambaWrapper`: a forward Mamba and, if `bidirectional`, a reverse one (the
//!   authors flip the sequence, run it, flip back: the same as running causal towards position 0),
//!   combined by `add` or `ew_multiply`; `bidirectional_weight_tie` shares in_proj/out_proj.
//! - Blocks are pre-norm with the residual carried beside the hidden states (mamba_ssm's `Block`:
//!   Add → Norm → Mixer). RC-equivariant models (`rcps`) carry 2·d_model channels: the forward
//!   half and the reverse complement half (flipped in length and channels). [`AddNorm`] says how
//!   each block adds and normalises them — see there for the authors' fused path.
//! - The LM head is the embedding matrix (tied, not stored in the released files); for `rcps`
//!   models `RCPSLMHead`: logits = h_fwd Wᵀ + flip_c(h_rc) W[complement]ᵀ.

use anyhow::Result;
use candle_core::{Device, Tensor, D};

use super::config::{BidirectionalStrategy, CaduceusConfig};
use super::weights::Weights;

/// Where the model's tensors come from, by their published names: a published file
/// ([`Weights`], every tensor accounted for) or a [`candle_nn::VarBuilder`] (the parameters of a
/// Luminome model that trains on top of the encoder, e.g. the bi-strand family's).
pub trait Params {
    /// The tensor `name`, which must have `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor>;
    /// A tensor the model can do without (a buffer, a tied copy), when the source has it.
    fn optional(&self, name: &str) -> Option<Tensor>;
    /// Whether the source has `name` (tells a masked LM's names from a backbone saved alone).
    fn has(&self, name: &str) -> bool;
}

impl Params for Weights {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        Weights::get(self, name, shape)
    }
    fn optional(&self, name: &str) -> Option<Tensor> {
        Weights::optional(self, name)
    }
    fn has(&self, name: &str) -> bool {
        self.contains(name)
    }
}

impl Params for candle_nn::VarBuilder<'_> {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        Ok(candle_nn::VarBuilder::get(self, shape, name)?)
    }
    fn optional(&self, _name: &str) -> Option<Tensor> {
        None
    }
    fn has(&self, _name: &str) -> bool {
        // A Luminome model always names the encoder as a masked LM does.
        true
    }
}
use crate::nn::depthwise_conv::depthwise_conv;
use crate::nn::scan::selective_scan;
use crate::nn::{softplus, Linear};

/// One direction's Mamba (mamba_ssm `Mamba`, names `in_proj`, `conv1d`, `x_proj`, `dt_proj`,
/// `A_log`, `D`, `out_proj`).
#[derive(Debug, Clone)]
pub struct Mamba {
    in_proj: Linear,
    conv_weight: Tensor,
    conv_bias: Tensor,
    x_proj: Linear,
    dt_proj: Linear,
    /// `[E, N]`; A = −exp(A_log).
    a_log: Tensor,
    d: Tensor,
    out_proj: Linear,
    inner: usize,
    dt_rank: usize,
    d_state: usize,
}

impl Mamba {
    /// `shared`: the forward Mamba whose in_proj/out_proj this one uses (weight tie).
    fn load(cfg: &CaduceusConfig, w: &dyn Params, p: &str, shared: Option<&Mamba>) -> Result<Self> {
        let s = cfg.ssm();
        let (dm, e, n, r, k) = (
            cfg.d_model,
            cfg.inner_dim(),
            s.d_state,
            cfg.dt_rank(),
            s.d_conv,
        );
        let linear = |name: &str, out: usize, inp: usize, bias: bool| -> Result<Linear> {
            let weight = w.get(&format!("{p}.{name}.weight"), &[out, inp])?;
            let bias = if bias {
                Some(w.get(&format!("{p}.{name}.bias"), &[out])?)
            } else {
                None
            };
            Ok(Linear::from_parts(weight, bias))
        };
        let (in_proj, out_proj) = match shared {
            Some(f) => {
                // Tied copies, absent from the released files; taken when a file has them.
                for t in [
                    "in_proj.weight",
                    "in_proj.bias",
                    "out_proj.weight",
                    "out_proj.bias",
                ] {
                    w.optional(&format!("{p}.{t}"));
                }
                (f.in_proj.clone(), f.out_proj.clone())
            }
            None => (
                linear("in_proj", 2 * e, dm, s.bias)?,
                linear("out_proj", dm, e, s.bias)?,
            ),
        };
        let conv_weight = w
            .get(&format!("{p}.conv1d.weight"), &[e, 1, k])?
            .squeeze(1)?;
        let conv_bias = if s.conv_bias {
            w.get(&format!("{p}.conv1d.bias"), &[e])?
        } else {
            Tensor::zeros(e, conv_weight.dtype(), conv_weight.device())?
        };
        Ok(Self {
            in_proj,
            conv_weight: conv_weight.contiguous()?,
            conv_bias,
            x_proj: linear("x_proj", r + 2 * n, e, false)?,
            dt_proj: linear("dt_proj", e, r, true)?,
            a_log: w.get(&format!("{p}.A_log"), &[e, n])?,
            d: w.get(&format!("{p}.D"), &[e])?,
            out_proj,
            inner: e,
            dt_rank: r,
            d_state: n,
        })
    }

    /// y ⊙ SiLU(z) `[B, L, E]` from in_proj's output `xz`; `reverse`: causal towards position 0.
    fn gated(&self, xz: &Tensor, reverse: bool) -> Result<Tensor> {
        let x = xz.narrow(D::Minus1, 0, self.inner)?;
        let z = xz.narrow(D::Minus1, self.inner, self.inner)?;
        let xc = depthwise_conv(
            &x.contiguous()?,
            &self.conv_weight,
            &self.conv_bias,
            reverse,
        )?
        .silu()?;
        let proj = self.x_proj.forward(&xc)?;
        let (r, n) = (self.dt_rank, self.d_state);
        let delta = softplus(&self.dt_proj.forward(&proj.narrow(D::Minus1, 0, r)?)?)?;
        let b = proj.narrow(D::Minus1, r, n)?;
        let c = proj.narrow(D::Minus1, r + n, n)?;
        let a = self.a_log.exp()?.neg()?;
        let y = selective_scan(&xc, &delta, &a, &b, &c, &self.d, reverse)?;
        Ok((y * z.silu()?)?)
    }

    /// The whole Mamba on `u` `[B, L, d_model]`.
    fn forward(&self, u: &Tensor, reverse: bool) -> Result<Tensor> {
        let xz = self.in_proj.forward(u)?;
        Ok(self.out_proj.forward(&self.gated(&xz, reverse)?)?)
    }
}

/// `BiMambaWrapper` (names `mamba_fwd`, `mamba_rev`).
#[derive(Debug, Clone)]
pub struct BiMamba {
    fwd: Mamba,
    rev: Option<Mamba>,
    tied: bool,
    strategy: BidirectionalStrategy,
}

impl BiMamba {
    fn load(cfg: &CaduceusConfig, w: &dyn Params, p: &str) -> Result<Self> {
        let fwd = Mamba::load(cfg, w, &format!("{p}.mamba_fwd"), None)?;
        let tied = cfg.bidirectional_weight_tie;
        let rev = if cfg.bidirectional {
            Some(Mamba::load(
                cfg,
                w,
                &format!("{p}.mamba_rev"),
                tied.then_some(&fwd),
            )?)
        } else {
            None
        };
        Ok(Self {
            fwd,
            rev,
            tied,
            strategy: cfg.strategy(),
        })
    }

    pub fn forward(&self, u: &Tensor) -> Result<Tensor> {
        let Some(rev) = &self.rev else {
            return self.fwd.forward(u, false);
        };
        match self.strategy {
            // Tied projections: both directions read the same in_proj output, and out_proj is
            // linear, so out_proj(a) + out_proj(b) = out_proj(a + b): one product each way.
            BidirectionalStrategy::Add if self.tied => {
                let xz = self.fwd.in_proj.forward(u)?;
                let y = (self.fwd.gated(&xz, false)? + rev.gated(&xz, true)?)?;
                Ok(self.fwd.out_proj.forward(&y)?)
            }
            BidirectionalStrategy::Add => {
                Ok((self.fwd.forward(u, false)? + rev.forward(u, true)?)?)
            }
            BidirectionalStrategy::EwMultiply => {
                Ok((self.fwd.forward(u, false)? * rev.forward(u, true)?)?)
            }
        }
    }
}

/// LayerNorm (weight, bias) or mamba_ssm's RMSNorm (weight), over the last dimension.
#[derive(Debug, Clone)]
pub struct Norm {
    weight: Tensor,
    bias: Option<Tensor>,
    eps: f32,
    /// Through ops with a backward pass (candle-nn's fused norms have none): set when the model
    /// is fine-tuned.
    trainable: bool,
}

impl Norm {
    fn load(cfg: &CaduceusConfig, w: &dyn Params, p: &str) -> Result<Self> {
        let dm = cfg.d_model;
        let weight = w.get(&format!("{p}.weight"), &[dm])?;
        let bias = if cfg.rms_norm {
            None
        } else {
            Some(w.get(&format!("{p}.bias"), &[dm])?)
        };
        Ok(Self {
            weight,
            bias,
            eps: cfg.norm_epsilon as f32,
            trainable: false,
        })
    }

    /// `flipped`: with the channel-reversed parameters (norm(flip_c(x)) flipped back: the norm
    /// as seen by the reverse-complement half).
    fn forward(&self, x: &Tensor, flipped: bool) -> Result<Tensor> {
        let (w, b) = if flipped {
            (
                flip_dim(&self.weight, 0)?,
                self.bias.as_ref().map(|b| flip_dim(b, 0)).transpose()?,
            )
        } else {
            (self.weight.clone(), self.bias.clone())
        };
        let x = x.contiguous()?;
        Ok(match (b, self.trainable) {
            (None, false) => candle_nn::ops::rms_norm(&x, &w, self.eps)?,
            (Some(b), false) => candle_nn::ops::layer_norm(&x, &w, &b, self.eps)?,
            (None, true) => candle_nn::ops::rms_norm_slow(&x, &w, self.eps)?,
            (Some(b), true) => crate::nn::normalize_last_dim(&x, f64::from(self.eps))?
                .broadcast_mul(&w)?
                .broadcast_add(&b)?,
        })
    }
}

/// How a block adds the residual and normalises, on the residual stream s = hidden + residual.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddNorm {
    /// `Block`: residual' = s, hidden' = Norm(s).
    Plain,
    /// `RCPSAddNormWrapper` (unfused RCPS blocks, and every RCPS model's final norm): the forward
    /// half s₁ through Norm, the RC half s₂ through Norm in its own orientation:
    /// residual' = s, hidden' = [Norm(s₁), Norm_flipped(s₂)].
    Rcps,
    /// `RCPSMambaBlock` with `fused_add_norm` (the released checkpoints): its fused path reads the
    /// second half as the forward one and the first (flipped) as the RC one, so every block
    /// exchanges the halves: residual' = [s₂, s₁], hidden' = [Norm(s₂), Norm_flipped(s₁)]. Not
    /// numerically the unfused block; reproduced as published.
    RcpsSwapped,
}

/// One layer: add + norm, then the mixer (`RCPSWrapper` around it for RCPS models: the forward
/// half as is, the RC half flipped in, flipped out).
#[derive(Debug, Clone)]
pub struct Block {
    norm: Norm,
    add_norm: AddNorm,
    mixer: BiMamba,
}

impl Block {
    fn load(cfg: &CaduceusConfig, w: &dyn Params, p: &str) -> Result<Self> {
        let (norm_p, mixer_p, add_norm) = match (cfg.rcps, cfg.fused_add_norm) {
            (false, _) => (format!("{p}.norm"), format!("{p}.mixer"), AddNorm::Plain),
            (true, true) => (
                format!("{p}.norm"),
                format!("{p}.mixer.submodule"),
                AddNorm::RcpsSwapped,
            ),
            (true, false) => (
                format!("{p}.norm.submodule"),
                format!("{p}.mixer.submodule"),
                AddNorm::Rcps,
            ),
        };
        Ok(Self {
            norm: Norm::load(cfg, w, &norm_p)?,
            add_norm,
            mixer: BiMamba::load(cfg, w, &mixer_p)?,
        })
    }

    /// (hidden, residual) → (hidden', residual').
    fn forward(&self, hidden: &Tensor, residual: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        let (normed, residual) = add_norm(&self.norm, self.add_norm, hidden, residual)?;
        let out = match self.add_norm {
            AddNorm::Plain => self.mixer.forward(&normed)?,
            AddNorm::Rcps | AddNorm::RcpsSwapped => {
                // Both halves as one batch of 2B rows through the mixer.
                let (h1, h2) = halves(&normed)?;
                let b = h1.dim(0)?;
                let both = Tensor::cat(&[&h1, &rc_flip(&h2)?], 0)?;
                let m = self.mixer.forward(&both)?;
                let rc = rc_flip(&m.narrow(0, b, b)?)?;
                Tensor::cat(&[&m.narrow(0, 0, b)?, &rc], D::Minus1)?
            }
        };
        Ok((out, residual))
    }
}

/// Normalised hidden states and the new residual stream (see [`AddNorm`]).
fn add_norm(
    norm: &Norm,
    mode: AddNorm,
    hidden: &Tensor,
    residual: Option<&Tensor>,
) -> Result<(Tensor, Tensor)> {
    let s = match residual {
        Some(r) => (hidden + r)?,
        None => hidden.clone(),
    };
    Ok(match mode {
        AddNorm::Plain => (norm.forward(&s, false)?, s),
        AddNorm::Rcps => {
            let (s1, s2) = halves(&s)?;
            let h = Tensor::cat(
                &[norm.forward(&s1, false)?, norm.forward(&s2, true)?],
                D::Minus1,
            )?;
            (h, s)
        }
        AddNorm::RcpsSwapped => {
            let (s1, s2) = halves(&s)?;
            let h = Tensor::cat(
                &[norm.forward(&s2, false)?, norm.forward(&s1, true)?],
                D::Minus1,
            )?;
            (h, Tensor::cat(&[&s2, &s1], D::Minus1)?)
        }
    })
}

/// The two channel halves of `[.., 2D]`.
fn halves(x: &Tensor) -> Result<(Tensor, Tensor)> {
    let d = x.dim(D::Minus1)? / 2;
    Ok((x.narrow(D::Minus1, 0, d)?, x.narrow(D::Minus1, d, d)?))
}

/// `x` with dimension `dim` reversed.
fn flip_dim(x: &Tensor, dim: usize) -> Result<Tensor> {
    let n = x.dim(dim)?;
    let rev = Tensor::from_iter((0..n as u32).rev(), x.device())?;
    Ok(x.contiguous()?.index_select(&rev, dim)?)
}

/// The reverse complement of a representation `[B, L, C]`: positions and channels reversed.
fn rc_flip(x: &Tensor) -> Result<Tensor> {
    flip_dim(&flip_dim(x, 1)?, 2)
}

/// What one forward pass gives.
pub struct CaduceusOutput {
    /// `[B, L, padded vocab]`.
    pub logits: Tensor,
    /// The backbone's last hidden state (after the final norm), `[B, L, hidden_width]`.
    pub hidden: Tensor,
}

/// `CaduceusForMaskedLM` (names under `caduceus.backbone.` and `lm_head.`).
#[derive(Debug, Clone)]
pub struct CaduceusModel {
    config: CaduceusConfig,
    embedding: Tensor,
    complement: Vec<u32>,
    layers: Vec<Block>,
    norm_f: Norm,
    final_mode: AddNorm,
}

impl CaduceusModel {
    /// Builds the model from a published file, which must hold exactly its tensors (see
    /// [`Weights`]).
    pub fn load(config: &CaduceusConfig, w: &Weights) -> Result<Self> {
        let model = Self::from_params(config, w, &w.path().display().to_string())?;
        w.finish()?;
        Ok(model)
    }

    /// Builds the model from `w`; `what` names the source in messages.
    pub fn from_params(config: &CaduceusConfig, w: &dyn Params, what: &str) -> Result<Self> {
        let prefix = if w.has(&embedding_name("caduceus.backbone", config.rcps)) {
            "caduceus.backbone"
        } else {
            "backbone"
        };
        let v = config.padded_vocab();
        let embedding = w.get(&embedding_name(prefix, config.rcps), &[v, config.d_model])?;
        let mut complement = config.complement_ids(what)?;
        // RCPS modules keep the map as buffers: the ids the published model really used.
        for buffer in [
            format!("{prefix}.embeddings.word_embeddings.complement_map"),
            "lm_head.complement_map".to_string(),
        ] {
            if let Some(t) = w.optional(&buffer) {
                let ids: Vec<i64> = t.to_vec1()?;
                if ids.len() != v || ids.iter().any(|&c| c < 0 || c as usize >= v) {
                    anyhow::bail!(
                        "{what}: buffer {buffer} is not a complement map of {v} token ids"
                    );
                }
                complement = ids.iter().map(|&c| c as u32).collect();
            }
        }
        // The tied LM head: absent from released files, taken when present.
        w.optional("lm_head.weight");
        w.optional("lm_head.lm_head.weight");
        let layers = (0..config.n_layer)
            .map(|i| Block::load(config, w, &format!("{prefix}.layers.{i}")))
            .collect::<Result<Vec<_>>>()?;
        let (norm_p, final_mode) = match (config.rcps, config.fused_add_norm) {
            (false, _) => (format!("{prefix}.norm_f"), AddNorm::Plain),
            (true, true) => (format!("{prefix}.norm_f"), AddNorm::Rcps),
            (true, false) => (format!("{prefix}.norm_f.submodule"), AddNorm::Rcps),
        };
        let norm_f = Norm::load(config, w, &norm_p)?;
        Ok(Self {
            config: config.clone(),
            embedding,
            complement,
            layers,
            norm_f,
            final_mode,
        })
    }

    pub fn config(&self) -> &CaduceusConfig {
        &self.config
    }

    pub fn device(&self) -> &Device {
        self.embedding.device()
    }

    /// The complement of each token id.
    pub fn complement(&self) -> &[u32] {
        &self.complement
    }

    /// Norms through ops with a backward pass, for fine-tuning (the default is inference).
    pub fn set_trainable(&mut self, trainable: bool) {
        for layer in &mut self.layers {
            layer.norm.trainable = trainable;
        }
        self.norm_f.trainable = trainable;
    }

    /// RCPS models: the embedding rows of each token's complement, `[V, d_model]`.
    fn embedding_complement(&self) -> Result<Option<Tensor>> {
        if !self.config.rcps {
            return Ok(None);
        }
        let idx = Tensor::from_slice(&self.complement, self.complement.len(), self.device())?;
        Ok(Some(self.embedding.index_select(&idx, 0)?))
    }

    /// The last hidden state as one `[B, L, d_model]` representation per position: itself, or
    /// for RCPS models the mean of the forward half and the channel-reversed RC half (as
    /// PlantCaduceus' probing code does).
    pub fn representation(&self, hidden: &Tensor) -> Result<Tensor> {
        if !self.config.rcps {
            return Ok(hidden.clone());
        }
        let (fwd, rc) = halves(hidden)?;
        Ok(((fwd + flip_dim(&rc, 2)?)? * 0.5)?)
    }

    /// The backbone's last hidden state (no LM head), `[B, L, hidden_width]`.
    pub fn hidden(&self, ids: &Tensor) -> Result<Tensor> {
        let mut hidden = self.embed(ids)?;
        let mut residual: Option<Tensor> = None;
        for layer in &self.layers {
            let (h, r) = layer.forward(&hidden, residual.as_ref())?;
            hidden = h;
            residual = Some(r);
        }
        Ok(add_norm(&self.norm_f, self.final_mode, &hidden, residual.as_ref())?.0)
    }

    /// `ids` `[B, L]` (u32) → logits and last hidden state.
    pub fn forward(&self, ids: &Tensor) -> Result<CaduceusOutput> {
        let hidden = self.hidden(ids)?;
        let logits = self.lm_head(&hidden)?;
        Ok(CaduceusOutput { logits, hidden })
    }

    /// The embedding output (`RCPSEmbedding`: [E[id], flip_c(E[complement(id)])]).
    pub fn embed(&self, ids: &Tensor) -> Result<Tensor> {
        let (b, l) = ids.dims2()?;
        let flat = ids.flatten_all()?;
        let fwd = self.embedding.index_select(&flat, 0)?;
        let h = match &self.embedding_complement()? {
            None => fwd,
            Some(ec) => {
                let rc = flip_dim(&ec.index_select(&flat, 0)?, 1)?;
                Tensor::cat(&[&fwd, &rc], D::Minus1)?
            }
        };
        Ok(h.reshape((b, l, ()))?)
    }

    fn lm_head(&self, hidden: &Tensor) -> Result<Tensor> {
        let (b, l, _) = hidden.dims3()?;
        let v = self.embedding.dim(0)?;
        let rows = hidden.reshape((b * l, ()))?;
        let logits = match &self.embedding_complement()? {
            None => rows.matmul(&self.embedding.t()?)?,
            Some(ec) => {
                let (h1, h2) = halves(&rows)?;
                let fwd = h1.contiguous()?.matmul(&self.embedding.t()?)?;
                let rc = flip_dim(&h2, 1)?.matmul(&ec.t()?)?;
                (fwd + rc)?
            }
        };
        Ok(logits.reshape((b, l, v))?)
    }
}

fn embedding_name(prefix: &str, rcps: bool) -> String {
    if rcps {
        format!("{prefix}.embeddings.word_embeddings.embedding.weight")
    } else {
        format!("{prefix}.embeddings.word_embeddings.weight")
    }
}
