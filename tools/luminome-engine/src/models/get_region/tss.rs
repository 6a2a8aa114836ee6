//! A gene's expression from a GET finetune output: the value at its TSS region, in the column of
//! its strand.
//!
//! Which column is which strand, from the authors' dataset code
//! (get_model/dataset/zarr_dataset.py): `RegionMotifDataset.__getitem__` builds the label as
//! `np.column_stack((expression_positive, expression_negative))`, so column 0 is the + strand
//! and column 1 the − strand; the gene-centred dataset sets `strand = 0 if Strand == "+" else 1`
//! and the authors' interpretation wrapper (run.py `WrapperModel`) reads `output[:, focus,
//! strand]`.

use anyhow::{bail, Result};
use candle_core::{DType, Tensor};

/// A gene's strand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strand {
    Plus,
    Minus,
}

impl Strand {
    /// The output column of GETRegionFinetune for this strand.
    pub fn column(self) -> usize {
        match self {
            Self::Plus => 0,
            Self::Minus => 1,
        }
    }

    /// `+` / `-` (as BED, GTF and GET's gene tables write it).
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "+" => Ok(Self::Plus),
            "-" => Ok(Self::Minus),
            other => bail!("strand {other:?} is neither + nor -"),
        }
    }
}

/// Where one sample's gene is: the region (slot in the sample's N regions) holding its TSS, and
/// its strand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TssSite {
    pub slot: usize,
    pub strand: Strand,
}

/// `outputs` `[B, N, 2]` (GETRegionFinetune) and one site per sample → each sample's
/// expression at its TSS region on its gene's strand.
pub fn tss_expression(outputs: &Tensor, sites: &[TssSite]) -> Result<Vec<f32>> {
    let dims = outputs.dims();
    if dims.len() != 3 || dims[2] != 2 {
        bail!("GET expression outputs must be [batch, regions, 2] (+ and − strand), got {dims:?}");
    }
    let (b, n) = (dims[0], dims[1]);
    if sites.len() != b {
        bail!("{} TSS sites for a batch of {b}", sites.len());
    }
    let rows = outputs.to_dtype(DType::F32)?.to_vec3::<f32>()?;
    sites
        .iter()
        .zip(rows)
        .enumerate()
        .map(|(i, (site, row))| {
            if site.slot >= n {
                bail!(
                    "sample {i}: TSS slot {} is outside its {n} regions",
                    site.slot
                );
            }
            Ok(row[site.slot][site.strand.column()])
        })
        .collect()
}
