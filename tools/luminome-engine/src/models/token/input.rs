//! Opening a token classifier and the token dataset it runs on, with every check that must pass
//! before any output is started: model kind, vocabulary, sequence length, label values. Used by
//! `luminome-predict` and `luminome-importance`.

use std::path::Path;

use anyhow::{bail, Context, Result};
use candle_core::Device;
use luminome_io::token_dataset::{IndexRow, TokenBatch, TokenDataset};
use luminome_io::InputError;

use super::classifier::TokenClassifier;
use crate::checkpoint::{read_checkpoint_meta, Checkpoint};
use crate::input::tokens::{real_length, trim_batch};
use crate::models::FamilyConfig;

/// A checkpoint of family `C` and a dataset that has passed every check against it.
pub struct ClassifierInput<C: FamilyConfig>
where
    C::Model: TokenClassifier,
{
    pub checkpoint: Checkpoint,
    pub dataset: TokenDataset,
    /// The dataset's record index, one row per record.
    pub index: Vec<IndexRow>,
    /// The model's configuration (classes and their label values, sizes).
    pub config: C,
    pub device: Device,
}

impl<C: FamilyConfig> ClassifierInput<C>
where
    C::Model: TokenClassifier,
{
    /// Opens `checkpoint` (which must hold a model of family `C`) and `dataset`, and checks that
    /// the dataset's vocabulary is the model's, that no record is longer than the model's max
    /// length and that every label is one of the model's classes.
    pub fn open(checkpoint: &Path, dataset: &Path, device: Device) -> Result<Self> {
        let meta = read_checkpoint_meta(checkpoint)?;
        let Some(config) = meta.model.get::<C>() else {
            bail!(
                "{}: this checkpoint holds a {} (kind {}), not a {}; this tool runs {}s (kind {})",
                checkpoint.display(),
                meta.model.family(),
                meta.model.kind(),
                C::FAMILY,
                C::FAMILY,
                C::KIND
            );
        };
        let config = config.clone();
        meta.check_dataset_kind(checkpoint, dataset)?;
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
        let checkpoint = Checkpoint::load_frozen(checkpoint, &device)?;
        let model = checkpoint.get::<C>()?;
        check_records(
            &ds,
            &index,
            model.max_length(),
            model.label_values(),
            dataset,
        )?;
        Ok(Self {
            checkpoint,
            dataset: ds,
            index,
            config,
            device,
        })
    }

    /// The loaded model.
    pub fn model(&self) -> Result<&C::Model> {
        self.checkpoint.get::<C>()
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

    /// Logits `[records, classes]` of a batch of records.
    pub fn logits(&self, records: &[usize]) -> Result<Vec<Vec<f32>>> {
        let t = crate::input::batch_tensors(&self.batch(records)?, &self.device)?;
        self.model()?
            .logits(&t.ids, &t.mask, None)?
            .to_dtype(candle_core::DType::F32)?
            .to_vec2::<f32>()
            .context("cannot read the logits")
    }
}

/// Every record fits the model and carries a label the model knows.
fn check_records(
    ds: &TokenDataset,
    index: &[IndexRow],
    max: usize,
    label_values: &[i64],
    path: &Path,
) -> Result<()> {
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
                if !label_values.contains(&label) {
                    return Err(InputError::record(
                        path,
                        r as u64 + 1,
                        Some(&index[r].name),
                        format!("label {label} is not one of the model's classes {label_values:?}"),
                    )
                    .into());
                }
            }
        }
    }
    Ok(())
}
