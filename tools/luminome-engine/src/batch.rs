//! Token batches (from luminome-io) → device tensors.

use anyhow::{bail, Result};
use candle_core::{Device, Tensor};
use luminome_io::token_dataset::TokenBatch;

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

/// Class index of each label (position in `label_values`); an error names the first label
/// that is not a declared class.
pub fn class_indices(
    labels: &[i64],
    label_values: &[i64],
) -> std::result::Result<Vec<u32>, (usize, i64)> {
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            label_values
                .iter()
                .position(|v| v == l)
                .map(|p| p as u32)
                .ok_or((i, *l))
        })
        .collect()
}
