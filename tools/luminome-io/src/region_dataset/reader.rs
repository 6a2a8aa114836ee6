//! Reading a region dataset (memory-mapped) and its samples table.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::meta::{RegionDatasetMeta, REGION_DATASET_KIND, REGION_DATASET_VERSION};
use crate::tensorfile::{ElemType, TensorFile};

/// The header of the samples table.
pub const SAMPLES_HEADER: &str =
    "sample\tgene\tgene_id\tcell_type\tchrom\ttss\tstrand\tregions_used\ttss_region\texpression";

/// One row of the samples table.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRow {
    /// 0-based sample (row of the tensors).
    pub sample: u64,
    pub gene: String,
    pub gene_id: String,
    pub cell_type: String,
    pub chrom: String,
    /// 0-based TSS position.
    pub tss: u64,
    pub strand: char,
    pub regions_used: usize,
    /// Regions-table row of the TSS region (`.` in the file when no region holds the TSS).
    pub tss_region: Option<usize>,
    /// `NA` in the file when missing.
    pub expression: Option<f64>,
}

/// Samples `[batch]` read from a region dataset: features `[batch, N, F]` row-major, masks
/// `[batch, N]`.
#[derive(Debug, Clone, Default)]
pub struct RegionBatch {
    pub batch: usize,
    pub n_regions: usize,
    pub n_features: usize,
    pub features: Vec<f32>,
    pub region_mask: Vec<u8>,
    /// −1 where no region holds the TSS.
    pub tss_index: Vec<i64>,
    /// `[batch, N]`: the regions-table row of each slot, −1 for empty slots.
    pub region_index: Vec<i64>,
    /// The TSS's slot among the regions (its region's, or the one it falls before); `None` for
    /// datasets written before luminome-regions stored it.
    pub tss_slot: Option<Vec<i64>>,
    /// The gene's strand: 1 (+), −1 (−), 0 (unknown); `None` like `tss_slot`.
    pub strand: Option<Vec<i8>>,
    /// NaN where missing.
    pub expression: Option<Vec<f32>>,
}

/// A region dataset opened for reading, its shapes checked against each other and its metadata.
pub struct RegionDataset {
    path: PathBuf,
    file: TensorFile,
    meta: RegionDatasetMeta,
    samples: usize,
}

impl RegionDataset {
    pub fn open(path: &Path) -> Result<Self> {
        let file = TensorFile::open(path)?;
        let md = file.metadata();
        let kind = md.get("kind").map(String::as_str).unwrap_or("");
        if kind != REGION_DATASET_KIND {
            bail!(
                "{}: not a Luminome region dataset (kind {kind:?}, expected {REGION_DATASET_KIND:?}; luminome-regions writes them)",
                path.display()
            );
        }
        let version: u32 = md
            .get("format_version")
            .and_then(|v| v.parse().ok())
            .with_context(|| {
                format!(
                    "{}: region dataset without a format version",
                    path.display()
                )
            })?;
        if version > REGION_DATASET_VERSION {
            bail!(
                "{}: region dataset format version {version} is newer than this tool reads ({REGION_DATASET_VERSION})",
                path.display()
            );
        }
        let meta: RegionDatasetMeta =
            serde_json::from_str(md.get("luminome").map(String::as_str).unwrap_or(""))
                .with_context(|| {
                    format!("{}: unreadable region dataset metadata", path.display())
                })?;
        let (n, f) = (meta.n_regions, meta.feature_names.len());
        let features = file.require("features")?;
        let samples = features.shape.first().copied().unwrap_or(0);
        let expect = |name: &str, elem: ElemType, shape: &[usize], required: bool| -> Result<()> {
            match file.tensor(name) {
                None if !required => Ok(()),
                None => file.require(name).map(|_| ()),
                Some(t) if t.elem == elem && t.shape == shape => Ok(()),
                Some(t) => bail!(
                    "{}: tensor {name} is {:?} {:?}, expected {elem:?} {shape:?} ({samples} samples, {n} regions, {f} features in the metadata)",
                    path.display(),
                    t.elem,
                    t.shape
                ),
            }
        };
        expect("features", ElemType::F32, &[samples, n, f], true)?;
        expect("region_mask", ElemType::U8, &[samples, n], true)?;
        expect("tss_index", ElemType::I64, &[samples], true)?;
        expect("region_index", ElemType::I64, &[samples, n], true)?;
        expect("expression", ElemType::F32, &[samples], false)?;
        expect("tss_slot", ElemType::I64, &[samples], false)?;
        expect("strand", ElemType::I8, &[samples], false)?;
        let ds = Self {
            path: path.to_path_buf(),
            file,
            meta,
            samples,
        };
        let mut tss = Vec::with_capacity(samples);
        let t = ds.file.require("tss_index")?;
        for r in 0..samples {
            t.extend_i64(r, &mut tss);
        }
        if let Some((i, &v)) = tss
            .iter()
            .enumerate()
            .find(|(_, &v)| v < -1 || v >= n as i64)
        {
            bail!(
                "{}: sample {}: tss_index {v} is outside -1..{n}",
                path.display(),
                i + 1
            );
        }
        ds.check_values()?;
        if let Some(t) = ds.file.tensor("tss_slot") {
            let mut slots = Vec::with_capacity(samples);
            for r in 0..samples {
                t.extend_i64(r, &mut slots);
            }
            if let Some((i, &v)) = slots
                .iter()
                .enumerate()
                .find(|(_, &v)| v < 0 || v > n as i64)
            {
                bail!(
                    "{}: sample {}: tss_slot {v} is outside 0..={n}",
                    path.display(),
                    i + 1
                );
            }
        }
        Ok(ds)
    }

    /// Every feature is a finite number, and every expression value is a number or NaN
    /// (missing): checked once, whole, on open, so that no tool trains on, predicts from or
    /// explains a NaN or ±inf. The first bad value is named by sample, slot and feature.
    fn check_values(&self) -> Result<()> {
        let (n, f) = (self.meta.n_regions, self.meta.feature_names.len());
        let features = self.file.require("features")?;
        let mut row = Vec::with_capacity(n * f);
        for r in 0..self.samples {
            row.clear();
            features.extend_f32(r, &mut row);
            if let Some(i) = row.iter().position(|v| !v.is_finite()) {
                bail!(
                    "{}: sample {r}, region slot {}: feature {} is {} (every feature must be a finite number; rebuild the dataset or fix its inputs)",
                    self.path.display(),
                    i / f,
                    self.meta.feature_names[i % f],
                    row[i]
                );
            }
        }
        if let Some(t) = self.file.tensor("expression") {
            let mut values = Vec::with_capacity(self.samples);
            for r in 0..self.samples {
                t.extend_f32(r, &mut values);
            }
            if let Some((r, v)) = values.iter().enumerate().find(|(_, v)| v.is_infinite()) {
                bail!(
                    "{}: sample {r}: expression {v} is infinite (missing values are NaN)",
                    self.path.display()
                );
            }
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn meta(&self) -> &RegionDatasetMeta {
        &self.meta
    }

    /// Samples (gene × cell type).
    pub fn len(&self) -> usize {
        self.samples
    }

    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    /// Region slots per sample (N).
    pub fn n_regions(&self) -> usize {
        self.meta.n_regions
    }

    /// Features per region (F), accessibility included.
    pub fn n_features(&self) -> usize {
        self.meta.feature_names.len()
    }

    pub fn feature_names(&self) -> &[String] {
        &self.meta.feature_names
    }

    pub fn cell_types(&self) -> &[String] {
        &self.meta.cell_types
    }

    pub fn has_expression(&self) -> bool {
        self.file.tensor("expression").is_some()
    }

    /// Reads the given samples into one batch.
    pub fn batch(&self, records: &[usize]) -> Result<RegionBatch> {
        let (n, f) = (self.n_regions(), self.n_features());
        let mut b = RegionBatch {
            batch: records.len(),
            n_regions: n,
            n_features: f,
            features: Vec::with_capacity(records.len() * n * f),
            region_mask: Vec::with_capacity(records.len() * n),
            tss_index: Vec::with_capacity(records.len()),
            region_index: Vec::with_capacity(records.len() * n),
            tss_slot: self.file.tensor("tss_slot").map(|_| Vec::new()),
            strand: self.file.tensor("strand").map(|_| Vec::new()),
            expression: self.has_expression().then(Vec::new),
        };
        let tss_slot = self.file.tensor("tss_slot");
        let strand = self.file.tensor("strand");
        let region_index = self.file.require("region_index")?;
        let features = self.file.require("features")?;
        let mask = self.file.require("region_mask")?;
        let tss = self.file.require("tss_index")?;
        let expression = self.file.tensor("expression");
        for &r in records {
            if r >= self.samples {
                bail!(
                    "{}: sample {r} is out of range (the dataset has {})",
                    self.path.display(),
                    self.samples
                );
            }
            features.extend_f32(r, &mut b.features);
            b.region_mask.extend_from_slice(mask.row_bytes(r));
            tss.extend_i64(r, &mut b.tss_index);
            region_index.extend_i64(r, &mut b.region_index);
            if let (Some(t), Some(out)) = (&tss_slot, b.tss_slot.as_mut()) {
                t.extend_i64(r, out);
            }
            if let (Some(t), Some(out)) = (&strand, b.strand.as_mut()) {
                out.extend(t.row_bytes(r).iter().map(|&v| v as i8));
            }
            if let (Some(e), Some(out)) = (&expression, b.expression.as_mut()) {
                e.extend_f32(r, out);
            }
        }
        Ok(b)
    }

    /// The samples table beside the dataset (the file name its metadata records).
    pub fn samples_path(&self) -> Result<PathBuf> {
        let name = self.meta.samples_table.as_deref().with_context(|| {
            format!(
                "{}: the metadata names no samples table",
                self.path.display()
            )
        })?;
        Ok(self.path.with_file_name(name))
    }

    /// The regions table beside the dataset (the file name its metadata records).
    pub fn regions_path(&self) -> Result<PathBuf> {
        let name = self.meta.regions_table.as_deref().with_context(|| {
            format!(
                "{}: the metadata names no regions table",
                self.path.display()
            )
        })?;
        Ok(self.path.with_file_name(name))
    }

    /// The coordinates of every region of the regions table beside the dataset, by row
    /// (`region_index` values index it).
    ///
    /// Refused when a `region_index` of the dataset is not a row of the table (a table of
    /// another run, or a damaged one).
    pub fn read_region_coords(&self) -> Result<Vec<RegionCoords>> {
        let path = self.regions_path()?;
        let coords = read_region_coords(&path)?;
        // Checked on open: region_index is i64 [samples, N].
        let index = self.file.require("region_index")?;
        let beyond = index
            .bytes
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap_or_default()))
            .filter(|&r| r >= 0 && r as u64 >= coords.len() as u64)
            .max();
        if let Some(r) = beyond {
            bail!(
                "{}: {} regions, but {} refers to region {r}; the table and the dataset do not belong together (rebuild both with luminome-regions)",
                path.display(),
                coords.len(),
                self.path.display()
            );
        }
        Ok(coords)
    }

    /// Reads the samples table beside the dataset and checks it has one row per sample.
    pub fn read_samples(&self) -> Result<Vec<SampleRow>> {
        let path = self.samples_path()?;
        let rows = read_samples(&path)?;
        if rows.len() != self.samples {
            bail!(
                "{}: {} rows, but {} has {} samples",
                path.display(),
                rows.len(),
                self.path.display(),
                self.samples
            );
        }
        // The table's regions_used is what tools read to refuse empty samples: it must be the
        // region_mask's count, or a sample whose mask is empty would be trained on.
        let mask = self.file.require("region_mask")?;
        for (r, row) in rows.iter().enumerate() {
            let used = mask.row_bytes(r).iter().filter(|&&m| m != 0).count();
            if used != row.regions_used {
                bail!(
                    "{}: line {}: sample {r} has regions_used {}, but {} masks {used} region(s) for it; the table and the dataset do not belong together (rebuild both with luminome-regions)",
                    path.display(),
                    r + 2,
                    row.regions_used,
                    self.path.display()
                );
            }
        }
        Ok(rows)
    }
}

/// A region's place: chromosome and 0-based half-open bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionCoords {
    pub chrom: String,
    pub start: u64,
    pub end: u64,
}

/// Reads the `region chrom start end` columns of a regions table (rows in region order).
pub fn read_region_coords(path: &Path) -> Result<Vec<RegionCoords>> {
    let (reader, _) = crate::compress::open(path, 1)?;
    let mut out = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line =
            line.with_context(|| format!("{}: line {}: cannot read", path.display(), i + 1))?;
        let f: Vec<&str> = line.split('\t').collect();
        if i == 0 {
            if f.len() < 4 || f[..4] != ["region", "chrom", "start", "end"] {
                bail!(
                    "{}: line 1: not a Luminome regions table header",
                    path.display()
                );
            }
            continue;
        }
        let bad = || anyhow::anyhow!("{}: line {}: malformed regions row", path.display(), i + 1);
        if f.len() < 4 || f[0].parse::<usize>().ok() != Some(out.len()) {
            return Err(bad());
        }
        let (start, end): (u64, u64) = (
            f[2].parse().map_err(|_| bad())?,
            f[3].parse().map_err(|_| bad())?,
        );
        if end <= start {
            return Err(bad());
        }
        out.push(RegionCoords {
            chrom: f[1].to_string(),
            start,
            end,
        });
    }
    Ok(out)
}

/// Reads a samples table.
pub fn read_samples(path: &Path) -> Result<Vec<SampleRow>> {
    let (reader, _) = crate::compress::open(path, 1)?;
    let mut rows = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line =
            line.with_context(|| format!("{}: line {}: cannot read", path.display(), i + 1))?;
        if i == 0 {
            if line.trim_end() != SAMPLES_HEADER {
                bail!(
                    "{}: line 1: not a Luminome samples table header",
                    path.display()
                );
            }
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || anyhow::anyhow!("{}: line {}: malformed samples row", path.display(), i + 1);
        if f.len() != 10 {
            return Err(bad());
        }
        rows.push(SampleRow {
            sample: f[0].parse().map_err(|_| bad())?,
            gene: f[1].to_string(),
            gene_id: f[2].to_string(),
            cell_type: f[3].to_string(),
            chrom: f[4].to_string(),
            tss: f[5].parse().map_err(|_| bad())?,
            strand: f[6].chars().next().ok_or_else(bad)?,
            regions_used: f[7].parse().map_err(|_| bad())?,
            tss_region: match f[8] {
                "." => None,
                v => Some(v.parse().map_err(|_| bad())?),
            },
            expression: match f[9] {
                "NA" => None,
                v => Some(v.parse().map_err(|_| bad())?),
            },
        });
    }
    Ok(rows)
}
