//! Token scores of one batch: DynamicGated gates, gradient × input, integrated gradients.
//!
//! Gradients are taken with respect to the token embeddings (the encoder adds positions after
//! them), of the explained output `f = logit[target] − mean_c logit[c]`: for two classes that is
//! half the log-odds, and subtracting the mean makes the scores independent of a shift common
//! to all logits, which softmax ignores.

use anyhow::{bail, Context, Result};
use candle_core::{DType, Tensor, Var, D};
use luminome_engine::batch_tensors;
use luminome_io::token_dataset::TokenBatch;

use crate::args::{Method, Reduce};
use crate::Input;

/// What a batch's scores are computed from.
pub struct MethodOptions {
    pub method: Method,
    pub reduce: Reduce,
    pub ig_steps: usize,
}

/// Per-record token scores `[B][L]` of a batch (L: the batch's row length). `targets[b]`: the
/// class index explained for record b (unused by gates).
pub fn token_scores(
    input: &Input,
    batch: &TokenBatch,
    targets: &[usize],
    opts: &MethodOptions,
) -> Result<Vec<Vec<f32>>> {
    let clf = input.model()?;
    let t = batch_tensors(batch, &input.device)?;
    let scores = match opts.method {
        Method::Pooling | Method::Attention | Method::Ism | Method::DeepLiftShap => {
            bail!(
                "internal: {} is not a gradient or gate method",
                opts.method.name()
            )
        }
        Method::Gates => {
            let out = clf.forward(&t.ids, &t.mask, None)?;
            let gates = out
                .gates
                .context("internal: the gated adapter returned no gates")?;
            reduce_channels(&gates, opts.reduce)?
        }
        Method::Saliency => {
            let emb = clf.embed(&t.ids)?.detach();
            let weights = target_weights(targets, input.config.num_classes, &input.device)?;
            let grad = embedding_gradient(input, &emb, &t.mask, &weights)?;
            (emb * grad)?.sum(D::Minus1)?
        }
        Method::Ig => {
            let emb = clf.embed(&t.ids)?.detach();
            let weights = target_weights(targets, input.config.num_classes, &input.device)?;
            let keep = kept_positions(batch, input)?.unsqueeze(D::Minus1)?;
            // Baseline: zero embeddings at sequence tokens; [CLS], [SEP] and padding keep their
            // own embeddings, so they get no attribution and the path changes only the sequence.
            let baseline = emb.broadcast_mul(&keep)?;
            let delta = (&emb - &baseline)?;
            let steps = opts.ig_steps;
            let mut total = emb.zeros_like()?;
            for k in 0..steps {
                let alpha = (k as f64 + 0.5) / steps as f64;
                let x = (&baseline + (&delta * alpha)?)?;
                total = (total + embedding_gradient(input, &x, &t.mask, &weights)?)?;
            }
            (delta * (total / steps as f64)?)?.sum(D::Minus1)?
        }
    };
    scores
        .to_dtype(DType::F32)?
        .to_vec2::<f32>()
        .context("cannot read the scores")
}

/// The gates `[B, L, D]` reduced over channels to `[B, L]`.
fn reduce_channels(gates: &Tensor, reduce: Reduce) -> Result<Tensor> {
    Ok(match reduce {
        Reduce::Mean => gates.mean(D::Minus1)?,
        Reduce::L2 => gates.sqr()?.sum(D::Minus1)?.sqrt()?,
        Reduce::Max => gates.max(D::Minus1)?,
    })
}

/// `[B, C]` weights w with `Σ_c w[b, c] · logit[b, c] = logit[b, t_b] − mean_c logit[b, c]`.
fn target_weights(
    targets: &[usize],
    classes: usize,
    device: &candle_core::Device,
) -> Result<Tensor> {
    let mut w = vec![-1.0 / classes as f32; targets.len() * classes];
    for (b, &t) in targets.iter().enumerate() {
        if t >= classes {
            bail!("internal: target class {t} of {classes}");
        }
        w[b * classes + t] += 1.0;
    }
    Ok(Tensor::from_vec(w, (targets.len(), classes), device)?)
}

/// Gradient of Σ_b f_b with respect to the embeddings `emb` `[B, L, D]`.
fn embedding_gradient(
    input: &Input,
    emb: &Tensor,
    mask: &Tensor,
    weights: &Tensor,
) -> Result<Tensor> {
    let var = Var::from_tensor(emb)?;
    let out = input
        .model()?
        .forward_from_embeddings(var.as_tensor(), mask, None)?;
    let f = (out.logits * weights)?.sum_all()?;
    let grads = f.backward()?;
    grads
        .get(var.as_tensor())
        .cloned()
        .context("internal: no gradient reached the embeddings")
}

/// `[B, L]`: 1 at [CLS], [SEP] and padding (kept at their own embeddings), 0 at sequence tokens.
fn kept_positions(batch: &TokenBatch, input: &Input) -> Result<Tensor> {
    let tok = input.dataset.tokenizer();
    let keep: Vec<f32> = batch
        .input_ids
        .iter()
        .map(|&id| f32::from(u8::from(tok.is_boundary(id))))
        .collect();
    Ok(Tensor::from_vec(
        keep,
        (batch.batch, batch.max_length),
        &input.device,
    )?)
}
