//! Per-sample column importance of a tabular model, for `luminome-importance`:
//!
//! - **gradient × input**: numeric columns ∂s/∂x_j · x_j on the standardised value (so the
//!   baseline is the training mean, and a missing value, x = 0, scores 0); categorical columns
//!   Σ_d ∂s/∂e_jd · e_jd on the category embedding;
//! - **integrated gradients** from the same baseline (x = 0, embedding 0), midpoint steps;
//! - **attention** (FT-Transformer): the last block's attention from [CLS] to each column,
//!   mean over heads.
//!
//! s is the explained output: logit[target] − the mean of the logits (as for sequence
//! classifiers), with each sample's own target class.

use anyhow::{bail, Result};
use candle_core::{Tensor, Var, D};

use super::model::{TabularModel, TabularTensors};

/// How column scores are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnMethod {
    Saliency,
    IntegratedGradients { steps: usize },
    Attention,
}

/// ∂s/∂(numeric inputs, category embeddings) at the given inputs.
fn gradients(
    model: &TabularModel,
    t: &TabularTensors,
    numeric: Option<&Tensor>,
    categories: Option<&Tensor>,
    weights: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let nv = numeric.map(Var::from_tensor).transpose()?;
    let cv = categories.map(Var::from_tensor).transpose()?;
    let logits = model.forward_parts(
        t.batch,
        nv.as_ref().map(Var::as_tensor),
        t.missing.as_ref(),
        cv.as_ref().map(Var::as_tensor),
        None,
    )?;
    let grads = (logits * weights)?.sum_all()?.backward()?;
    let get = |v: &Option<Var>| -> Result<Option<Tensor>> {
        Ok(match v {
            Some(v) => Some(match grads.get(v.as_tensor()) {
                Some(g) => g.clone(),
                None => v.as_tensor().zeros_like()?,
            }),
            None => None,
        })
    };
    Ok((get(&nv)?, get(&cv)?))
}

/// Scores `[B, columns]` row-major (schema column order) explaining class `targets[b]` of each
/// row.
pub fn column_scores(
    model: &TabularModel,
    t: &TabularTensors,
    targets: &[usize],
    method: ColumnMethod,
) -> Result<Vec<f32>> {
    if method == ColumnMethod::Attention {
        return match model.cls_attention(t)? {
            Some(a) => Ok(a.flatten_all()?.to_vec1()?),
            None => bail!("attention importance is for the FT-Transformer; this model is an MLP (use saliency or ig)"),
        };
    }
    let c = model.config.schema.classes.len();
    let mut w = vec![-1.0 / c as f32; t.batch * c];
    for (b, &k) in targets.iter().enumerate() {
        w[b * c + k] += 1.0;
    }
    let device = t
        .categories
        .as_ref()
        .or(t.numeric.as_ref())
        .map(|x| x.device().clone());
    let Some(device) = device else {
        bail!("internal: a batch without columns");
    };
    let weights = Tensor::from_vec(w, (t.batch, c), &device)?;
    let cat = model.embed_categories(t)?;
    let (x, e) = (t.numeric.as_ref(), cat.as_ref());
    let (gx, ge) = match method {
        ColumnMethod::IntegratedGradients { steps } => {
            if steps == 0 {
                bail!("--ig-steps must be at least 1");
            }
            let mut sums: (Option<Tensor>, Option<Tensor>) = (None, None);
            for s in 0..steps {
                let a = (s as f64 + 0.5) / steps as f64;
                let xs = x.map(|x| x * a).transpose()?;
                let es = e.map(|e| e * a).transpose()?;
                let (gx, ge) = gradients(model, t, xs.as_ref(), es.as_ref(), &weights)?;
                let add = |acc: Option<Tensor>, g: Option<Tensor>| -> Result<Option<Tensor>> {
                    Ok(match (acc, g) {
                        (Some(a), Some(g)) => Some((a + g)?),
                        (None, g) => g,
                        (a, None) => a,
                    })
                };
                sums = (add(sums.0, gx)?, add(sums.1, ge)?);
            }
            let mean = |g: Option<Tensor>| g.map(|g| g / steps as f64).transpose();
            (mean(sums.0)?, mean(sums.1)?)
        }
        _ => gradients(model, t, x, e, &weights)?,
    };
    let mut parts = Vec::new();
    if let (Some(x), Some(g)) = (x, gx) {
        parts.push((g * x)?);
    }
    if let (Some(e), Some(g)) = (e, ge) {
        parts.push((g * e)?.sum(D::Minus1)?);
    }
    Ok(Tensor::cat(&parts, 1)?.flatten_all()?.to_vec1()?)
}

#[cfg(test)]
mod tests {
    use candle_core::Device;

    use super::*;
    use crate::models::tabular::{TabularArch, TabularConfig};
    use crate::models::BuiltModel;

    /// A random-weight model on a small table with a number, a missing number and a category.
    fn model(arch: TabularArch) -> (BuiltModel, crate::models::tabular::EncodedRows) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.tsv");
        std::fs::write(
            &p,
            "x\ty\tg\tlabel\n1.0\t5\tA\tn\n2.0\tNA\tB\tp\n3.0\t7\tA\tn\n6.0\t1\tC\tp\n",
        )
        .unwrap();
        crate::testing::tabular_model(&p, "label", None, arch, None, 7).unwrap()
    }

    /// s = logit[1] − mean logits of each row at the given inputs.
    fn outputs(
        m: &TabularModel,
        t: &TabularTensors,
        x: Option<&Tensor>,
        e: Option<&Tensor>,
    ) -> Vec<f32> {
        let l = m
            .forward_parts(t.batch, x, t.missing.as_ref(), e, None)
            .unwrap();
        let l: Vec<Vec<f32>> = l.to_vec2().unwrap();
        l.iter().map(|r| r[1] - (r[0] + r[1]) / 2.0).collect()
    }

    #[test]
    fn integrated_gradients_add_up_to_the_change_from_the_baseline() {
        let (built, rows) = model(TabularArch::Mlp {
            hidden: 16,
            num_layers: 2,
            dropout: 0.0,
            category_dim: 4,
        });
        let m = built.get::<TabularConfig>().unwrap();
        let t = m.tensors(&rows, &[0, 1, 2, 3], &Device::Cpu).unwrap();
        let ig = column_scores(
            m,
            &t,
            &[1; 4],
            ColumnMethod::IntegratedGradients { steps: 200 },
        )
        .unwrap();
        let e = m.embed_categories(&t).unwrap();
        let full = outputs(m, &t, t.numeric.as_ref(), e.as_ref());
        let zx = t.numeric.as_ref().map(|x| x.zeros_like().unwrap());
        let ze = e.as_ref().map(|e| e.zeros_like().unwrap());
        let base = outputs(m, &t, zx.as_ref(), ze.as_ref());
        for r in 0..4 {
            let sum: f32 = ig[r * 3..(r + 1) * 3].iter().sum();
            let change = full[r] - base[r];
            assert!(
                (sum - change).abs() < 2e-3 * (1.0 + change.abs()),
                "row {r}: Σ IG {sum} vs {change}"
            );
        }
        // Gradient × input: a missing number (y in row 2) scores 0.
        let sal = column_scores(m, &t, &[1; 4], ColumnMethod::Saliency).unwrap();
        assert_eq!(sal[3 + 1], 0.0);
        assert!(column_scores(m, &t, &[1; 4], ColumnMethod::Attention).is_err());
    }

    #[test]
    fn cls_attention_is_a_share_of_the_cls_row() {
        let (built, rows) = model(TabularArch::FtTransformer {
            d_model: 8,
            num_layers: 2,
            num_heads: 2,
            ffn_dim: 16,
            dropout: 0.0,
            attention: Default::default(),
        });
        let m = built.get::<TabularConfig>().unwrap();
        let t = m.tensors(&rows, &[0, 1, 2, 3], &Device::Cpu).unwrap();
        let a = column_scores(m, &t, &[1; 4], ColumnMethod::Attention).unwrap();
        assert_eq!(a.len(), 4 * 3);
        for r in 0..4 {
            let s: f32 = a[r * 3..(r + 1) * 3].iter().sum();
            // The rest of the row is [CLS] attending to itself.
            assert!(s > 0.0 && s < 1.0, "row {r}: {s}");
        }
    }
}
