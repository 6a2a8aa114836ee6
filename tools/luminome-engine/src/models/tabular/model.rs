//! The tabular classifiers.
//!
//! FT-Transformer (feature tokenizer + transformer):
//!   token_j = x_j w_j + b_j           numeric column j, x_j standardised
//!           = m_j                     numeric column j, value missing
//!           = E_j[slot]               categorical column j (missing and unseen have slots)
//!   H = EncoderStack([cls; token_1 … token_n]),  logits = W_head H_cls + b
//! MLP: z = [x; missing flags; E_j[slot] …] → (Linear → ReLU → dropout) × layers → Linear.

use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{Embedding, VarBuilder, VarMap};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::config::{TabularArch, TabularConfig};
use super::schema::EncodedRows;
use crate::backbones::EncoderStack;
use crate::models::Model;
use crate::nn::init::{init_parameters, name_hash};
use crate::nn::{maybe_dropout, DropoutRng, Linear};

/// A batch of encoded rows as tensors; a part is `None` when the schema has no such column.
pub struct TabularTensors {
    pub batch: usize,
    /// Standardised numbers `[B, numeric columns]` (0 where missing).
    pub numeric: Option<Tensor>,
    /// Missing flags `[B, numeric columns]`.
    pub missing: Option<Tensor>,
    /// Rows of the shared category table `[B, categorical columns]` (u32).
    pub categories: Option<Tensor>,
}

impl TabularTensors {
    /// Rows `idx` of `rows`; `offsets[j]` is categorical column j's first row in the table.
    pub fn new(
        rows: &EncodedRows,
        idx: &[usize],
        offsets: &[u32],
        device: &Device,
    ) -> Result<Self> {
        let b = idx.len();
        let n_num = rows.n_numeric;
        let n_cat = offsets.len();
        let pick = |v: &[f32]| -> Vec<f32> {
            idx.iter()
                .flat_map(|&i| v[i * n_num..(i + 1) * n_num].iter().copied())
                .collect()
        };
        let (numeric, missing) = if n_num > 0 {
            (
                Some(Tensor::from_vec(pick(&rows.numeric), (b, n_num), device)?),
                Some(Tensor::from_vec(pick(&rows.missing), (b, n_num), device)?),
            )
        } else {
            (None, None)
        };
        let categories = if n_cat > 0 {
            let ids: Vec<u32> = idx
                .iter()
                .flat_map(|&i| {
                    rows.categories[i * n_cat..(i + 1) * n_cat]
                        .iter()
                        .zip(offsets)
                        .map(|(s, o)| s + o)
                })
                .collect();
            Some(Tensor::from_vec(ids, (b, n_cat), device)?)
        } else {
            None
        };
        Ok(Self {
            batch: b,
            numeric,
            missing,
            categories,
        })
    }
}

#[derive(Debug, Clone)]
enum Net {
    Transformer {
        numeric_weight: Option<Tensor>,
        numeric_bias: Option<Tensor>,
        numeric_missing: Option<Tensor>,
        cls: Tensor,
        stack: EncoderStack,
        head: Linear,
    },
    Mlp {
        layers: Vec<Linear>,
        out: Linear,
        dropout: f64,
    },
}

/// Parameters: `categorical.weight` (every categorical column's slots, one table);
/// transformer: `numeric.{weight,bias,missing}`, `cls`, `encoder.layers.{i}.*`,
/// `encoder.final_norm.*`, `head.*`; MLP: `mlp.layers.{i}.*`, `mlp.out.*`.
#[derive(Debug, Clone)]
pub struct TabularModel {
    pub config: TabularConfig,
    categorical: Option<Embedding>,
    /// First slot of each categorical column in `categorical`.
    pub category_offsets: Vec<u32>,
    net: Net,
}

impl TabularModel {
    pub fn new(cfg: &TabularConfig, vb: VarBuilder) -> Result<Self> {
        let schema = &cfg.schema;
        let n_num = schema.n_numeric();
        let slots = schema.category_slots();
        let n_cat = slots.len();
        let mut category_offsets = Vec::with_capacity(n_cat);
        let mut total = 0usize;
        for s in &slots {
            category_offsets.push(total as u32);
            total += s;
        }
        let categorical = if n_cat > 0 {
            Some(candle_nn::embedding(
                total,
                cfg.arch.category_dim(),
                vb.pp("categorical"),
            )?)
        } else {
            None
        };
        let init = candle_nn::Init::Const(0.0);
        let net = match cfg.arch {
            TabularArch::FtTransformer { d_model, .. } => {
                let num = vb.pp("numeric");
                let get = |name: &str| -> Result<Option<Tensor>> {
                    if n_num == 0 {
                        return Ok(None);
                    }
                    num.get_with_hints((n_num, d_model), name, init).map(Some)
                };
                Net::Transformer {
                    numeric_weight: get("weight")?,
                    numeric_bias: get("bias")?,
                    numeric_missing: get("missing")?,
                    cls: vb.get_with_hints((1, d_model), "cls", init)?,
                    stack: EncoderStack::new(
                        &cfg.blocks().expect("transformer"),
                        false,
                        vb.pp("encoder"),
                    )?,
                    head: Linear::new(d_model, schema.classes.len(), vb.pp("head"))?,
                }
            }
            TabularArch::Mlp {
                hidden,
                num_layers,
                dropout,
                category_dim,
            } => {
                let mlp = vb.pp("mlp");
                let mut width = 2 * n_num + n_cat * category_dim;
                let mut layers = Vec::with_capacity(num_layers);
                for i in 0..num_layers {
                    layers.push(Linear::new(width, hidden, mlp.pp(format!("layers.{i}")))?);
                    width = hidden;
                }
                Net::Mlp {
                    layers,
                    out: Linear::new(width, schema.classes.len(), mlp.pp("out"))?,
                    dropout,
                }
            }
        };
        Ok(Self {
            config: cfg.clone(),
            categorical,
            category_offsets,
            net,
        })
    }

    /// Category embeddings `[B, categorical columns, E]`: the "input" of gradient × input for
    /// categorical columns.
    pub fn embed_categories(&self, t: &TabularTensors) -> Result<Option<Tensor>> {
        match (&self.categorical, &t.categories) {
            (Some(e), Some(ids)) => e.forward(ids).map(Some),
            _ => Ok(None),
        }
    }

    /// Logits `[B, C]` from the numeric part (`[B, n]`, any tensor of that shape: gradient
    /// methods pass their own) and category embeddings.
    pub fn forward_parts(
        &self,
        batch: usize,
        numeric: Option<&Tensor>,
        missing: Option<&Tensor>,
        categories: Option<&Tensor>,
        rng: Option<&DropoutRng>,
    ) -> Result<Tensor> {
        match &self.net {
            Net::Transformer { stack, head, .. } => {
                let x = self.column_tokens(batch, numeric, missing, categories)?;
                let mask = Tensor::ones((batch, x.dim(1)?), DType::F32, x.device())?;
                let h = stack.forward(&x, &mask, rng)?;
                head.forward(&h.narrow(1, 0, 1)?.squeeze(1)?)
            }
            Net::Mlp {
                layers,
                out,
                dropout,
            } => {
                let mut parts = Vec::new();
                if let (Some(x), Some(m)) = (numeric, missing) {
                    parts.push(x.clone());
                    parts.push(m.clone());
                }
                if let Some(c) = categories {
                    parts.push(c.flatten_from(1)?);
                }
                let mut z = Tensor::cat(&parts, D::Minus1)?;
                for l in layers {
                    z = maybe_dropout(&l.forward(&z)?.relu()?, *dropout, rng)?;
                }
                out.forward(&z)
            }
        }
    }

    /// The transformer's input `[B, 1 + columns, D]`: [CLS], then a token per numeric column
    /// (x w_j + b_j, or m_j where missing), then the category embeddings.
    fn column_tokens(
        &self,
        batch: usize,
        numeric: Option<&Tensor>,
        missing: Option<&Tensor>,
        categories: Option<&Tensor>,
    ) -> Result<Tensor> {
        let Net::Transformer {
            numeric_weight,
            numeric_bias,
            numeric_missing,
            cls,
            ..
        } = &self.net
        else {
            candle_core::bail!("column tokens belong to the transformer");
        };
        let d = cls.dim(1)?;
        let mut tokens = vec![cls.unsqueeze(0)?.broadcast_as((batch, 1, d))?];
        if let (Some(x), Some(m), Some(w), Some(b), Some(mv)) = (
            numeric,
            missing,
            numeric_weight,
            numeric_bias,
            numeric_missing,
        ) {
            let x = x.unsqueeze(2)?; // [B, n, 1]
            let m = m.unsqueeze(2)?;
            let value = x.broadcast_mul(w)?.broadcast_add(b)?; // [B, n, D]
            let present = m.affine(-1.0, 1.0)?;
            tokens.push((value.broadcast_mul(&present)? + m.broadcast_mul(mv)?)?);
        }
        if let Some(c) = categories {
            tokens.push(c.clone());
        }
        Tensor::cat(&tokens, 1)
    }

    /// Transformer only: the last block's attention from [CLS] to each column `[B, columns]`
    /// (schema order), mean over heads; `None` for the MLP.
    pub fn cls_attention(&self, t: &TabularTensors) -> Result<Option<Tensor>> {
        let Net::Transformer { stack, .. } = &self.net else {
            return Ok(None);
        };
        let cat = self.embed_categories(t)?;
        let x = self.column_tokens(
            t.batch,
            t.numeric.as_ref(),
            t.missing.as_ref(),
            cat.as_ref(),
        )?;
        let l = x.dim(1)?;
        let mask = Tensor::ones((t.batch, l), DType::F32, x.device())?;
        let probs = stack.last_attention(&x, &mask)?; // [B, H, L, L]
        let from_cls = probs.narrow(2, 0, 1)?.squeeze(2)?.mean(1)?; // [B, L]
        from_cls.narrow(1, 1, l - 1).map(Some)
    }

    /// Logits `[B, C]` of a batch.
    pub fn forward(&self, t: &TabularTensors, rng: Option<&DropoutRng>) -> Result<Tensor> {
        let cat = self.embed_categories(t)?;
        self.forward_parts(
            t.batch,
            t.numeric.as_ref(),
            t.missing.as_ref(),
            cat.as_ref(),
            rng,
        )
    }

    /// Tensors of rows `idx` of `rows` for this model.
    pub fn tensors(
        &self,
        rows: &EncodedRows,
        idx: &[usize],
        device: &Device,
    ) -> Result<TabularTensors> {
        TabularTensors::new(rows, idx, &self.category_offsets, device)
    }
}

impl Model for TabularModel {}

/// The default initialisation (`nn::init`), except the MLP's weight matrices: U(±1/√fan_in),
/// PyTorch's `nn.Linear` default, so that ReLU layers keep their scale (N(0, 0.02²) shrinks
/// activations layer by layer where no normalisation follows).
pub fn init_tabular_parameters(varmap: &VarMap, seed: u64) -> anyhow::Result<()> {
    let is_mlp_weight = |n: &str| n.starts_with("mlp.") && n.ends_with(".weight");
    init_parameters(varmap, seed, Some(&|n: &str| !is_mlp_weight(n)))?;
    let data = varmap.data().lock().expect("var map lock");
    let mut names: Vec<&String> = data.keys().filter(|n| is_mlp_weight(n)).collect();
    names.sort();
    for name in names {
        let t = data[name].as_tensor();
        let bound = 1.0 / (t.dims()[1] as f64).sqrt();
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ name_hash(name));
        let values: Vec<f32> = (0..t.elem_count())
            .map(|_| ((rng.random::<f64>() * 2.0 - 1.0) * bound) as f32)
            .collect();
        data[name].set(&Tensor::from_vec(values, t.shape(), t.device())?)?;
    }
    Ok(())
}
