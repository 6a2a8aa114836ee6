//! Which records are explained, and for which class: `--only-label`, `--records`, `--target`
//! (or each record's predicted class), and the weights of the explained output f.

use anyhow::{bail, Context, Result};
use luminome_engine::input::tokens::real_length;
use luminome_engine::models::token::{ClassifierInput, TokenClassifier};
use luminome_engine::models::FamilyConfig;

use crate::args::ImportanceArgs;
use crate::bases::{row_bases, scored_tokens};

/// Which class each record's scores explain.
pub(crate) enum Target {
    /// The same class index for every record.
    Fixed(usize),
    /// Each record's predicted class.
    Predicted,
}

pub(crate) fn choose_target<C: FamilyConfig>(
    args: &ImportanceArgs,
    input: &ClassifierInput<C>,
) -> Result<Target>
where
    C::Model: TokenClassifier,
{
    let values = input.model()?.label_values();
    if let Some(t) = &args.target {
        let t: i64 = t.parse().with_context(|| {
            format!("--target {t}: sequence classifiers name a class by its integer label value")
        })?;
        let class = values.iter().position(|&v| v == t).with_context(|| {
            format!(
                "--target {t}: not a class of the model in {} (its label values: {values:?})",
                args.checkpoint.display()
            )
        })?;
        return Ok(Target::Fixed(class));
    }
    if values.len() == 2 {
        let larger = if values[1] > values[0] { 1 } else { 0 };
        return Ok(Target::Fixed(larger));
    }
    Ok(Target::Predicted)
}

/// The records to score, in dataset order.
pub(crate) fn select_records<C: FamilyConfig>(
    args: &ImportanceArgs,
    input: &ClassifierInput<C>,
) -> Result<Vec<usize>>
where
    C::Model: TokenClassifier,
{
    let ds = &input.dataset;
    let mut records: Vec<usize> = match args.only_label {
        None => (0..ds.len()).collect(),
        Some(label) => {
            if !ds.has_labels() {
                bail!(
                    "{}: --only-label needs a dataset with labels, and this one has none",
                    args.dataset.display()
                );
            }
            let all: Vec<usize> = (0..ds.len()).collect();
            let mut keep = Vec::new();
            for chunk in all.chunks(4096) {
                let labels = ds.batch(chunk)?.labels.unwrap_or_default();
                keep.extend(
                    chunk
                        .iter()
                        .zip(labels)
                        .filter(|(_, l)| *l == label)
                        .map(|(&r, _)| r),
                );
            }
            keep
        }
    };
    if let Some(n) = args.records {
        records.truncate(n);
    }
    if records.is_empty() {
        bail!(
            "{}: no records selected (check --only-label / --records)",
            args.dataset.display()
        );
    }
    Ok(records)
}

/// Longest row in bases among `records` (the L of the npz arrays).
pub(crate) fn widest_row<C: FamilyConfig>(
    input: &ClassifierInput<C>,
    records: &[usize],
) -> Result<usize>
where
    C::Model: TokenClassifier,
{
    let tok = input.dataset.tokenizer();
    let mut width = 0;
    for chunk in records.chunks(4096) {
        let b = input.dataset.batch(chunk)?;
        for r in 0..b.batch {
            let row = r * b.max_length..(r + 1) * b.max_length;
            let ids = &b.input_ids[row.clone()];
            let mask = &b.attention_mask[row];
            let len = real_length(mask);
            let zeros = vec![0f32; len];
            width = width.max(row_bases(&scored_tokens(
                tok,
                &ids[..len],
                &mask[..len],
                &zeros,
            )));
        }
    }
    Ok(width)
}

/// The index of the largest value (the first of ties).
pub(crate) fn argmax(v: &[f32]) -> usize {
    v.iter()
        .enumerate()
        .fold(0, |best, (k, &x)| if x > v[best] { k } else { best })
}

/// The `[C]` weights w of record `i`'s explained output f = Σ_c w_c · logit_c =
/// logit[t] − mean_c logit[c], t its class under `target` (`predicted`: the batch's logits, for
/// [`Target::Predicted`]).
pub(crate) fn output_weights(
    target: &Target,
    predicted: Option<&Vec<Vec<f32>>>,
    i: usize,
    classes: usize,
) -> Vec<f32> {
    let class = match (target, predicted) {
        (Target::Fixed(c), _) => *c,
        (_, Some(p)) => argmax(&p[i]),
        _ => 0,
    };
    let mut weights = vec![-1.0 / classes as f32; classes];
    weights[class] += 1.0;
    weights
}
