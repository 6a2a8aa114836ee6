//! Token datasets as model input: opening one for a run, the checks every token model needs
//! (same vocabulary as the training set, rows no longer than the model), and batches as device
//! tensors.

use std::path::Path;

use anyhow::{bail, Context, Result};
use candle_core::{Device, Tensor};
use luminome_io::token_dataset::{TokenBatch, TokenDataset, TokenizerInfo};

/// Opens a token dataset with a message that names it.
pub fn open_dataset(path: &Path, what: &str) -> Result<TokenDataset> {
    let ds = TokenDataset::open(path).with_context(|| format!("cannot open the {what} dataset"))?;
    if ds.is_empty() {
        bail!("{}: the {what} dataset has no records", path.display());
    }
    Ok(ds)
}

/// A dev or test set must be tokenized as the training set was (scheme, tiling, vocabulary).
pub fn check_same_vocab(train: &TokenDataset, other: &TokenDataset) -> Result<()> {
    let (a, b) = (train.tokenizer(), other.tokenizer());
    if !a.same_tokenization(b) {
        bail!(
            "{}: tokenized differently from the training set (this set: {}; training set {}: {}{}); tokenize both with the same settings, e.g. `luminome-tokenize --like {}`",
            other.path().display(),
            b.describe(),
            train.path().display(),
            a.describe(),
            vocab_note(b, a),
            train.path().display()
        );
    }
    Ok(())
}

/// When two tokenizers describe alike, what still differs: the vocabularies (shown) or the
/// tokenizer.json.
pub fn vocab_note(a: &TokenizerInfo, b: &TokenizerInfo) -> String {
    if a.describe() != b.describe() {
        String::new()
    } else if a.vocab != b.vocab || a.pad_id != b.pad_id {
        format!(
            "; the vocabularies differ: [{}] vs [{}]",
            preview(&a.vocab),
            preview(&b.vocab)
        )
    } else {
        "; the tokenizer.json files differ".into()
    }
}

fn preview(v: &[String]) -> String {
    let mut s = v.iter().take(12).cloned().collect::<Vec<_>>().join(" ");
    if v.len() > 12 {
        s.push_str(" ...");
    }
    s
}

/// Rows longer than the model accepts are refused up front.
pub fn check_length(ds: &TokenDataset, max_length: usize, source: &str) -> Result<()> {
    if ds.max_length() > max_length {
        bail!(
            "{}: rows are {} tokens long, longer than the model's max length {max_length} ({source}); re-tokenize with a shorter window or train a model with a larger --max-length",
            ds.path().display(),
            ds.max_length()
        );
    }
    Ok(())
}

/// ids `[B, L]` (u32) and mask `[B, L]` (f32, 1 = token, 0 = padding).
pub struct BatchTensors {
    pub ids: Tensor,
    pub mask: Tensor,
}

pub fn batch_tensors(batch: &TokenBatch, device: &Device) -> Result<BatchTensors> {
    let shape = (batch.batch, batch.max_length);
    if batch.input_ids.len() != batch.batch * batch.max_length {
        bail!(
            "internal: batch of {} ids for shape {:?}",
            batch.input_ids.len(),
            shape
        );
    }
    let mask: Vec<f32> = batch
        .attention_mask
        .iter()
        .map(|&m| f32::from(m != 0))
        .collect();
    Ok(BatchTensors {
        ids: Tensor::from_slice(&batch.input_ids, shape, device)?,
        mask: Tensor::from_vec(mask, shape, device)?,
    })
}

/// Tokens up to and including the last unpadded one.
pub fn real_length(mask_row: &[u8]) -> usize {
    mask_row.iter().rposition(|&m| m != 0).map_or(0, |p| p + 1)
}

/// Keeps the first `len` columns of every row.
pub fn trim_batch(b: TokenBatch, len: usize) -> TokenBatch {
    if len == b.max_length {
        return b;
    }
    let cut = |v: &[u8]| -> Vec<u8> {
        v.chunks(b.max_length)
            .flat_map(|r| r[..len].to_vec())
            .collect()
    };
    TokenBatch {
        batch: b.batch,
        max_length: len,
        input_ids: b
            .input_ids
            .chunks(b.max_length)
            .flat_map(|r| r[..len].to_vec())
            .collect(),
        attention_mask: cut(&b.attention_mask),
        soft_mask: b.soft_mask.as_deref().map(cut),
        labels: b.labels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_length_ends_at_the_last_token() {
        assert_eq!(real_length(&[1, 1, 1, 0, 0]), 3);
        assert_eq!(real_length(&[0, 0]), 0);
        assert_eq!(real_length(&[1, 1]), 2);
    }

    #[test]
    fn trimming_keeps_the_first_columns_of_every_row() {
        let b = TokenBatch {
            batch: 2,
            max_length: 4,
            input_ids: vec![1, 5, 2, 0, 1, 6, 7, 2],
            attention_mask: vec![1, 1, 1, 0, 1, 1, 1, 1],
            soft_mask: None,
            labels: Some(vec![0, 1]),
        };
        let t = trim_batch(b, 3);
        assert_eq!(t.input_ids, [1, 5, 2, 1, 6, 7]);
        assert_eq!(t.attention_mask, [1, 1, 1, 1, 1, 1]);
        assert_eq!(t.max_length, 3);
    }
}
