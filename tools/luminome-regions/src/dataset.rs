//! The three outputs of a run, written together: the region dataset (safetensors `features`,
//! `region_mask`, `tss_index`, `region_index`, `tss_slot`, `strand`, optional `expression`, and
//! the samples table;
//! its contract and writer are `luminome_io::region_dataset`) and the per-region table that
//! `--reuse-regions` reads back. All three are written to temporary names and appear only at
//! [`DatasetWriter::finish`]; dropping the writer leaves nothing behind.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::Result;
use luminome_io::atomic::AtomicWriter;
use luminome_io::region_dataset::{
    ExpressionSource, RegionDatasetMeta, RegionDatasetWriter, RegionSample,
};

use crate::inputs::RegionInputs;
use crate::pipeline::{Config, ExpressionInput};
use luminome_io::tss::GeneTss;

use crate::windows::Window;

/// How the written feature columns are scaled (`--feature-scale`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeatureScale {
    /// Motif scores as aggregated; accessibility as `--normalisation` gives it.
    Raw,
    /// GET's scale (Fu et al. 2025): a cell type's regions are those with raw accessibility > 0;
    /// each motif column is divided by its maximum over those regions (the whole run, every
    /// chromosome) and clipped to 1; the accessibility column is 1.
    Get,
    /// As [`FeatureScale::Get`], with the accessibility column the raw accessibility divided by
    /// its maximum over the sample's regions (GET's `quantitative_atac`).
    GetQuantitative,
}

impl FeatureScale {
    pub fn name(self) -> &'static str {
        match self {
            FeatureScale::Raw => "raw",
            FeatureScale::Get => "get",
            FeatureScale::GetQuantitative => "get-quantitative",
        }
    }

    /// GET's scales drop the regions a cell type has no accessibility in.
    pub fn is_get(self) -> bool {
        self != FeatureScale::Raw
    }
}

/// GET's value of a motif score: `score / max`, clipped to 1; 0 where the maximum is not
/// positive (no hit of the motif in any of the cell type's regions).
pub fn get_scaled(score: f32, max: f32) -> f32 {
    if max > 0.0 {
        (score / max).min(1.0)
    } else {
        0.0
    }
}

/// Per motif column, the maximum raw score over the regions whose raw accessibility is > 0
/// (`scores` row-major `[regions × n_features]`, `raw` one value per region): GET's divisor.
/// Columns without a positive score keep 0.
pub fn get_maxima(scores: &[f32], raw: &[f64], n_features: usize) -> Vec<f32> {
    let mut max = vec![0.0f32; n_features];
    if n_features == 0 {
        return max;
    }
    for (row, &acc) in scores.chunks_exact(n_features).zip(raw) {
        if acc > 0.0 {
            for (m, &v) in max.iter_mut().zip(row) {
                *m = m.max(v);
            }
        }
    }
    max
}

/// How one sample's values are scaled when written.
#[derive(Debug, Clone, Copy)]
pub enum SampleScale<'a> {
    /// Scores as they are, accessibility as normalised.
    Raw,
    /// GET's scale: each motif column divided by the cell type's maximum `maxima[j]` and
    /// clipped to 1. The accessibility column is 1, or with `quantitative` (the chromosome's raw
    /// accessibility in the cell type) the region's raw value over the largest of the sample's.
    Get {
        maxima: &'a [f32],
        quantitative: Option<&'a [f64]>,
    },
}

/// One (gene, cell type) sample, described against its chromosome's regions.
pub struct Sample<'a> {
    pub gene: &'a GeneTss,
    pub cell_type: &'a str,
    pub window: &'a Window,
    /// Global index of the chromosome's first region.
    pub offset: usize,
    /// The chromosome's `[regions × features]` motif scores.
    pub scores: &'a [f32],
    /// The chromosome's normalised accessibility in this cell type.
    pub accessibility: &'a [f32],
    pub scale: SampleScale<'a>,
    /// Transformed expression; `None` is written as NaN / `NA`.
    pub expression: Option<f64>,
}

pub struct DatasetWriter {
    dataset: RegionDatasetWriter,
    regions: AtomicWriter,
    n_regions: usize,
    n_features: usize,
    row: Vec<f32>,
    mask: Vec<u8>,
    region_index: Vec<i64>,
    line: String,
}

impl DatasetWriter {
    pub fn create(
        output: &Path,
        samples_output: &Path,
        regions_output: &Path,
        n_regions: usize,
        features: &[String],
        cell_types: &[String],
        has_expression: bool,
    ) -> Result<Self> {
        let width = features.len() + 1;
        let dataset =
            RegionDatasetWriter::create(output, samples_output, n_regions, width, has_expression)?;
        let mut regions = AtomicWriter::create(regions_output)?;
        let mut header = vec![
            "region".to_string(),
            "chrom".into(),
            "start".into(),
            "end".into(),
        ];
        header.extend(cell_types.iter().map(|c| format!("acc_raw:{c}")));
        header.extend(cell_types.iter().map(|c| format!("acc:{c}")));
        header.extend(features.iter().cloned());
        writeln!(regions, "{}", header.join("\t"))?;
        Ok(Self {
            dataset,
            regions,
            n_regions,
            n_features: features.len(),
            row: vec![0.0; n_regions * width],
            mask: vec![0; n_regions],
            region_index: vec![-1; n_regions],
            line: String::new(),
        })
    }

    /// One row of the region table: raw and normalised accessibility per cell type, then scores.
    pub fn write_region(
        &mut self,
        index: usize,
        chrom: &str,
        (start, end): (u64, u64),
        raw: impl Iterator<Item = f64>,
        normalised: impl Iterator<Item = f32>,
        scores: &[f32],
    ) -> Result<()> {
        self.line.clear();
        write!(self.line, "{index}\t{chrom}\t{start}\t{end}")?;
        for v in raw {
            write!(self.line, "\t{v}")?;
        }
        for v in normalised {
            write!(self.line, "\t{v}")?;
        }
        for v in scores {
            write!(self.line, "\t{v}")?;
        }
        writeln!(self.regions, "{}", self.line)?;
        Ok(())
    }

    /// One sample: its N × (features + 1) matrix, mask, TSS slot, region rows and expression.
    pub fn write_sample(&mut self, s: &Sample<'_>) -> Result<()> {
        let nf = self.n_features;
        let width = nf + 1;
        self.row.fill(0.0);
        self.mask.fill(0);
        self.region_index.fill(-1);
        let window_max = match s.scale {
            SampleScale::Get {
                quantitative: Some(raw),
                ..
            } => s.window.regions.iter().map(|&k| raw[k]).fold(0.0, f64::max),
            _ => 0.0,
        };
        for (slot, &k) in s.window.regions.iter().enumerate() {
            let scores = &s.scores[k * nf..(k + 1) * nf];
            let cells = &mut self.row[slot * width..(slot + 1) * width];
            match s.scale {
                SampleScale::Raw => {
                    cells[..nf].copy_from_slice(scores);
                    cells[nf] = s.accessibility[k];
                }
                SampleScale::Get {
                    maxima,
                    quantitative,
                } => {
                    for ((c, &v), &m) in cells[..nf].iter_mut().zip(scores).zip(maxima) {
                        *c = get_scaled(v, m);
                    }
                    cells[nf] = match quantitative {
                        None => 1.0,
                        Some(raw) if window_max > 0.0 => (raw[k] / window_max) as f32,
                        Some(_) => 0.0,
                    };
                }
            }
            self.mask[slot] = 1;
            self.region_index[slot] = (s.offset + k) as i64;
        }
        let g = s.gene;
        self.dataset.push(&RegionSample {
            features: &self.row,
            region_mask: &self.mask,
            tss_index: s.window.tss_index,
            tss_slot: s.window.tss_slot,
            region_index: &self.region_index,
            expression: s.expression,
            gene: &g.name,
            gene_id: &g.id,
            cell_type: s.cell_type,
            chrom: &g.chrom,
            tss: g.tss,
            strand: g.strand.symbol(),
            regions_used: s.window.regions.len(),
            tss_region: s.window.tss_index.map(|i| s.offset + s.window.regions[i]),
        })
    }

    pub fn samples_written(&self) -> u64 {
        self.dataset.len()
    }

    pub fn n_regions(&self) -> usize {
        self.n_regions
    }

    /// Write the safetensors header and data, then move all three files into place.
    pub fn finish(self, meta: &RegionDatasetMeta, command_line: &str) -> Result<()> {
        self.dataset.finish(
            meta,
            "luminome-regions",
            env!("CARGO_PKG_VERSION"),
            command_line,
        )?;
        self.regions.commit()?;
        Ok(())
    }
}

/// The dataset's metadata: what it was made from and how.
pub(crate) fn dataset_meta(
    cfg: &Config,
    inputs: &RegionInputs,
    expression_inputs: &[ExpressionInput],
    motif: serde_json::Value,
    regions_total: usize,
) -> RegionDatasetMeta {
    let mut feature_names = inputs.features.clone();
    feature_names.push("accessibility".into());
    let file_name = |p: &std::path::Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let has_expression = !expression_inputs.is_empty();
    RegionDatasetMeta {
        cell_types: inputs.cell_types.clone(),
        coordinates: "0-based half-open".into(),
        expression: expression_inputs
            .iter()
            .map(|e| ExpressionSource {
                cell_type: e.cell_type.clone(),
                column: e.column.clone(),
                path: e.path.display().to_string(),
            })
            .collect(),
        expression_transform: has_expression.then(|| cfg.expression_transform.name().to_string()),
        feature_names,
        genes: match (&cfg.genes, cfg.tile_step) {
            (Some(g), _) => g.display().to_string(),
            (None, Some(step)) => format!("tiles every {step} bp"),
            (None, None) => String::new(),
        },
        motif,
        n_regions: cfg.n_regions,
        normalisation: cfg.normalisation.name().to_string(),
        reference: cfg.reference.display().to_string(),
        region_sources: inputs.sources.clone(),
        regions_table: file_name(&cfg.regions_output),
        regions_total,
        samples_table: file_name(&cfg.samples_output),
        selection: cfg.selection.name().to_string(),
        window_bp: cfg.window,
    }
}
