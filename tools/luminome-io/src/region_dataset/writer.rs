//! Writing a region dataset sample by sample: the tensors stream through spill files
//! ([`StreamingTensorWriter`]) and the samples table is written beside them; both appear at their
//! final paths only at [`RegionDatasetWriter::finish`].

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Result};

use super::meta::RegionDatasetMeta;
use super::reader::SAMPLES_HEADER;
use crate::atomic::AtomicWriter;
use crate::tensorfile::{ColumnSpec, ElemType, StreamingTensorWriter};

/// One sample (a gene in a cell type) to write.
pub struct RegionSample<'a> {
    /// `[N × F]` features, row-major; zero in empty slots.
    pub features: &'a [f32],
    /// `[N]`: 1 for a real region.
    pub region_mask: &'a [u8],
    /// Slot of the TSS region.
    pub tss_index: Option<usize>,
    /// Slot of the TSS among the regions: the TSS region's slot, or, when no region holds the
    /// TSS, the slot it falls before (the number of regions that end before it).
    pub tss_slot: usize,
    /// `[N]`: regions-table row of each slot, −1 for empty slots.
    pub region_index: &'a [i64],
    /// The expression target; `None` is written as NaN (tensor) and `NA` (table).
    pub expression: Option<f64>,
    pub gene: &'a str,
    pub gene_id: &'a str,
    pub cell_type: &'a str,
    pub chrom: &'a str,
    /// 0-based TSS position.
    pub tss: u64,
    pub strand: char,
    /// Real regions in the window.
    pub regions_used: usize,
    /// Regions-table row of the TSS region.
    pub tss_region: Option<usize>,
}

pub struct RegionDatasetWriter {
    tensors: StreamingTensorWriter,
    samples: AtomicWriter,
    n_regions: usize,
    n_features: usize,
    has_expression: bool,
    written: u64,
}

impl RegionDatasetWriter {
    /// `n_features` counts every feature column, accessibility included.
    pub fn create(
        output: &Path,
        samples_output: &Path,
        n_regions: usize,
        n_features: usize,
        has_expression: bool,
    ) -> Result<Self> {
        let mut specs = vec![
            ColumnSpec::fixed("features", ElemType::F32, &[n_regions, n_features]),
            ColumnSpec::fixed("region_mask", ElemType::U8, &[n_regions]),
            ColumnSpec::fixed("tss_index", ElemType::I64, &[]),
            ColumnSpec::fixed("region_index", ElemType::I64, &[n_regions]),
            ColumnSpec::fixed("tss_slot", ElemType::I64, &[]),
            ColumnSpec::fixed("strand", ElemType::I8, &[]),
        ];
        if has_expression {
            specs.push(ColumnSpec::fixed("expression", ElemType::F32, &[]));
        }
        let tensors = StreamingTensorWriter::new(output, specs)?;
        let mut samples = AtomicWriter::create(samples_output)?;
        writeln!(samples, "{SAMPLES_HEADER}")?;
        Ok(Self {
            tensors,
            samples,
            n_regions,
            n_features,
            has_expression,
            written: 0,
        })
    }

    pub fn push(&mut self, s: &RegionSample<'_>) -> Result<()> {
        let (n, f) = (self.n_regions, self.n_features);
        if s.features.len() != n * f
            || s.region_mask.len() != n
            || s.region_index.len() != n
            || s.tss_slot > n
        {
            bail!("internal: region sample with the wrong sizes for N = {n}, F = {f}");
        }
        let tss_index = s.tss_index.map(|i| i as i64).unwrap_or(-1);
        self.tensors.push_f32(0, s.features)?;
        self.tensors.push_bytes(1, s.region_mask)?;
        self.tensors.push_i64(2, &[tss_index])?;
        self.tensors.push_i64(3, s.region_index)?;
        self.tensors.push_i64(4, &[s.tss_slot as i64])?;
        let strand: i8 = match s.strand {
            '+' => 1,
            '-' => -1,
            _ => 0,
        };
        self.tensors.push_bytes(5, &strand.to_le_bytes())?;
        if self.has_expression {
            self.tensors
                .push_f32(6, &[s.expression.map(|v| v as f32).unwrap_or(f32::NAN)])?;
        }
        writeln!(
            self.samples,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.written,
            s.gene,
            s.gene_id,
            s.cell_type,
            s.chrom,
            s.tss,
            s.strand,
            s.regions_used,
            s.tss_region
                .map(|i| i.to_string())
                .unwrap_or_else(|| ".".into()),
            s.expression
                .map(|v| v.to_string())
                .unwrap_or_else(|| "NA".into()),
        )?;
        self.written += 1;
        Ok(())
    }

    /// Samples written so far.
    pub fn len(&self) -> u64 {
        self.written
    }

    pub fn is_empty(&self) -> bool {
        self.written == 0
    }

    /// Writes the safetensors header and data, then moves the dataset and the samples table
    /// into place.
    pub fn finish(
        self,
        meta: &RegionDatasetMeta,
        tool: &str,
        tool_version: &str,
        command_line: &str,
    ) -> Result<()> {
        let dataset = self
            .tensors
            .finish(meta.header(tool, tool_version, command_line)?)?;
        let samples = self.samples;
        // The dataset and its samples table, with no SIGINT/SIGTERM between them.
        crate::temps::commit_section(|| {
            dataset.commit()?;
            samples.commit()
        })
    }
}
