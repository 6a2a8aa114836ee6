//! A batch of region samples as device tensors, with each region's offset from the TSS.

use anyhow::{bail, Result};
use candle_core::{Device, Tensor};
use luminome_io::region_dataset::{RegionBatch, RegionDataset};

/// Samples `[B]` of N regions × F features on a device.
pub struct RegionTensors {
    /// Raw features `[B, N, F]`.
    pub features: Tensor,
    /// `[B, N]` f32, 1 = a region.
    pub mask: Tensor,
    /// `[B, N]` u32: the position index of each slot (offset from the TSS + max_offset).
    pub offsets: Tensor,
    /// Regions used per sample.
    pub n_used: Vec<usize>,
    /// The slot a TSS-region head reads per sample (see [`read_slot`]).
    pub read_slots: Vec<usize>,
    /// The expression targets (NaN where missing), when the dataset has them.
    pub expression: Option<Vec<f32>>,
    /// The batch as read (host copy).
    pub host: RegionBatch,
}

/// Signed offset, in regions, of slot `i` from the TSS: 0 for the TSS region; when no region
/// holds the TSS, −1 for the last region before it and +1 for the first after it; the sign is
/// flipped for genes on the minus strand, so negative is always upstream.
pub fn tss_offset(i: usize, tss_slot: usize, tss_in_region: bool, strand: i8) -> i64 {
    let (i, t) = (i as i64, tss_slot as i64);
    let genomic = if tss_in_region || i < t {
        i - t
    } else {
        i - t + 1
    };
    if strand < 0 {
        -genomic
    } else {
        genomic
    }
}

/// The slot a TSS-region head reads: the region holding the TSS; when none does, the first
/// region after the TSS in genomic order (the slot the TSS falls before), or the last region when
/// the TSS follows them all. Distances are not compared, and "after" is genomic, not the gene's
/// strand: on the minus strand that region is upstream (docs/expression.md).
pub fn read_slot(tss_index: i64, tss_slot: usize, n_used: usize) -> usize {
    if tss_index >= 0 {
        tss_index as usize
    } else if tss_slot < n_used {
        tss_slot
    } else {
        tss_slot.saturating_sub(1)
    }
}

impl RegionTensors {
    /// Reads `records` of `ds`. `max_offset`: offsets are clamped to ±this; `positions`: whether
    /// the model uses them (datasets without `tss_slot` are refused then).
    pub fn new(
        ds: &RegionDataset,
        records: &[usize],
        max_offset: usize,
        positions: bool,
        device: &Device,
    ) -> Result<Self> {
        let b = ds.batch(records)?;
        if positions && b.tss_slot.is_none() {
            bail!(
                "{}: this dataset has no tss_slot tensor (written by an older luminome-regions); rebuild it, or train with --position none",
                ds.path().display()
            );
        }
        Self::from_host(b, max_offset, device)
    }

    /// A batch already in memory (without `tss_slot`, the TSS region's slot stands in for it).
    pub fn from_host(b: RegionBatch, max_offset: usize, device: &Device) -> Result<Self> {
        let (bs, n, f) = (b.batch, b.n_regions, b.n_features);
        let n_used: Vec<usize> = (0..bs)
            .map(|r| {
                b.region_mask[r * n..(r + 1) * n]
                    .iter()
                    .filter(|&&m| m != 0)
                    .count()
            })
            .collect();
        let slots: Vec<usize> = match &b.tss_slot {
            Some(s) => s.iter().map(|&v| v as usize).collect(),
            None => b.tss_index.iter().map(|&t| t.max(0) as usize).collect(),
        };
        let strands: Vec<i8> = b.strand.clone().unwrap_or_else(|| vec![1; bs]);
        let mut offsets = Vec::with_capacity(bs * n);
        for r in 0..bs {
            for i in 0..n {
                let o = if i < n_used[r] {
                    tss_offset(i, slots[r], b.tss_index[r] >= 0, strands[r])
                } else {
                    0
                };
                let m = max_offset as i64;
                offsets.push((o.clamp(-m, m) + m) as u32);
            }
        }
        let read_slots = (0..bs)
            .map(|r| read_slot(b.tss_index[r], slots[r], n_used[r]))
            .collect();
        let mask: Vec<f32> = b.region_mask.iter().map(|&m| f32::from(m != 0)).collect();
        Ok(Self {
            features: Tensor::from_slice(&b.features, (bs, n, f), device)?,
            mask: Tensor::from_vec(mask, (bs, n), device)?,
            offsets: Tensor::from_vec(offsets, (bs, n), device)?,
            n_used,
            read_slots,
            expression: b.expression.clone(),
            host: b,
        })
    }

    pub fn batch(&self) -> usize {
        self.n_used.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_count_regions_from_the_tss_upstream_negative() {
        // TSS in slot 2 of 5, plus strand: -2 -1 0 1 2; minus strand: mirrored.
        let plus: Vec<i64> = (0..5).map(|i| tss_offset(i, 2, true, 1)).collect();
        assert_eq!(plus, [-2, -1, 0, 1, 2]);
        let minus: Vec<i64> = (0..5).map(|i| tss_offset(i, 2, true, -1)).collect();
        assert_eq!(minus, [2, 1, 0, -1, -2]);
        // TSS between slots 1 and 2 (tss_slot 2, no TSS region): no region gets 0.
        let between: Vec<i64> = (0..4).map(|i| tss_offset(i, 2, false, 1)).collect();
        assert_eq!(between, [-2, -1, 1, 2]);
        // Before every region, after every region.
        assert_eq!(tss_offset(0, 0, false, 1), 1);
        assert_eq!(tss_offset(2, 3, false, 1), -1);
    }

    #[test]
    fn a_tss_head_reads_the_tss_region_or_its_nearer_neighbour() {
        assert_eq!(read_slot(3, 3, 10), 3);
        assert_eq!(read_slot(-1, 4, 10), 4);
        assert_eq!(read_slot(-1, 10, 10), 9);
        assert_eq!(read_slot(-1, 0, 0), 0);
    }
}
