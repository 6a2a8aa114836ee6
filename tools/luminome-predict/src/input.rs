//! Opening a sequence classifier and the token dataset it runs on, with every check that must
//! pass before any output is started: model kind, vocabulary, sequence length, label values.
//! Shared by `luminome-predict` and `luminome-importance`.

use std::path::Path;

use anyhow::{bail, Context, Result};
use candle_core::Device;
use luminome_engine::checkpoint::read_checkpoint_meta;
use luminome_engine::{Checkpoint, ClassifierConfig, ModelConfig};
use luminome_io::token_dataset::{IndexRow, TokenBatch, TokenDataset};
use luminome_io::InputError;

/// A classifier checkpoint and a dataset that has passed every check against it.
pub struct ClassifierInput {
    pub checkpoint: Checkpoint,
    pub dataset: TokenDataset,
    /// The dataset's record index, one row per record.
    pub index: Vec<IndexRow>,
    /// The classifier's configuration (classes and their label values, encoder sizes).
    pub config: ClassifierConfig,
    pub device: Device,
}

/// Model families a checkpoint can hold, as `luminome-predict` dispatches on them.
pub fn model_family(config: &ModelConfig) -> &'static str {
    match config {
        ModelConfig::Classifier(_) => "sequence classifier",
        ModelConfig::Mlm(_) => "masked-LM model",
    }
}

impl ClassifierInput {
    /// Opens `checkpoint` (which must hold a sequence classifier) and `dataset`, and checks
    /// that the dataset's vocabulary is the model's, that no record is longer than the model's
    /// max length and that every label is one of the model's classes.
    pub fn open(checkpoint: &Path, dataset: &Path, device: Device) -> Result<Self> {
        let meta = read_checkpoint_meta(checkpoint)?;
        let ModelConfig::Classifier(config) = &meta.model else {
            bail!(
                "{}: this checkpoint holds a {} (kind {}), not a sequence classifier; this tool runs classifiers (train one with `luminome-train classify`)",
                checkpoint.display(),
                model_family(&meta.model),
                meta.model.kind()
            );
        };
        let ds = TokenDataset::open(dataset)?;
        meta.check_tokenizer(checkpoint, dataset, ds.tokenizer())?;
        if ds.is_empty() {
            bail!("{}: the dataset has no records", dataset.display());
        }
        let index = ds.read_index()?;
        if index.len() != ds.len() {
            bail!(
                "{}: the record index has {} rows but the dataset has {} records",
                dataset.display(),
                index.len(),
                ds.len()
            );
        }
        check_records(&ds, &index, config, dataset)?;
        let config = config.clone();
        let checkpoint = Checkpoint::load(checkpoint, &device)?;
        Ok(Self {
            checkpoint,
            dataset: ds,
            index,
            config,
            device,
        })
    }

    /// The loaded classifier.
    pub fn classifier(&self) -> Result<&luminome_engine::Classifier> {
        self.checkpoint.classifier()
    }

    /// Reads `records` as one batch whose rows are cut to the longest record in it (the rest is
    /// padding, which the models ignore), so a dataset padded beyond the model's max length still
    /// runs as long as its records fit.
    pub fn batch(&self, records: &[usize]) -> Result<TokenBatch> {
        let b = self.dataset.batch(records)?;
        let len = (0..b.batch)
            .map(|r| real_length(&b.attention_mask[r * b.max_length..(r + 1) * b.max_length]))
            .max()
            .unwrap_or(0)
            .max(1);
        Ok(trim_batch(b, len))
    }
}

/// Tokens up to and including the last unpadded one.
pub fn real_length(mask_row: &[u8]) -> usize {
    mask_row.iter().rposition(|&m| m != 0).map_or(0, |p| p + 1)
}

/// Keeps the first `len` columns of every row.
fn trim_batch(b: TokenBatch, len: usize) -> TokenBatch {
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

/// Every record fits the model and carries a label the model knows.
fn check_records(
    ds: &TokenDataset,
    index: &[IndexRow],
    config: &ClassifierConfig,
    path: &Path,
) -> Result<()> {
    let max = config.encoder.max_length;
    let chunk: Vec<usize> = (0..ds.len()).collect();
    for records in chunk.chunks(4096) {
        let b = ds
            .batch(records)
            .with_context(|| format!("{}: cannot read records", path.display()))?;
        for (i, &r) in records.iter().enumerate() {
            let row = &b.attention_mask[i * b.max_length..(i + 1) * b.max_length];
            let len = real_length(row);
            if len > max {
                return Err(InputError::record(
                    path,
                    r as u64 + 1,
                    Some(&index[r].name),
                    format!(
                        "{len} tokens (specials included), longer than the model's max length {max}; re-tokenize with --max-length {max} (or windows) or use a model trained on longer sequences"
                    ),
                )
                .into());
            }
            if let Some(labels) = &b.labels {
                let label = labels[i];
                if !config.label_values.contains(&label) {
                    return Err(InputError::record(
                        path,
                        r as u64 + 1,
                        Some(&index[r].name),
                        format!(
                            "label {label} is not one of the model's classes {:?}",
                            config.label_values
                        ),
                    )
                    .into());
                }
            }
        }
    }
    Ok(())
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
