//! The three outputs of a run, written together: the safetensors dataset (`features`,
//! `region_mask`, `tss_index`, `region_index`, optional `expression`), the samples table and the
//! per-region table. All three are written to temporary names and appear only at
//! [`DatasetWriter::finish`]; dropping the writer leaves nothing behind.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::Result;
use luminome_io::atomic::AtomicWriter;
use luminome_io::tensorfile::{ColumnSpec, ElemType, StreamingTensorWriter};
use luminome_io::tss::GeneTss;

use crate::windows::Window;

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
    /// Transformed expression; `None` is written as NaN / `NA`.
    pub expression: Option<f64>,
}

pub struct DatasetWriter {
    tensors: StreamingTensorWriter,
    samples: AtomicWriter,
    regions: AtomicWriter,
    n_regions: usize,
    n_features: usize,
    has_expression: bool,
    row: Vec<f32>,
    mask: Vec<u8>,
    region_index: Vec<i64>,
    line: String,
    written: u64,
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
        let mut specs = vec![
            ColumnSpec::fixed("features", ElemType::F32, &[n_regions, width]),
            ColumnSpec::fixed("region_mask", ElemType::U8, &[n_regions]),
            ColumnSpec::fixed("tss_index", ElemType::I64, &[]),
            ColumnSpec::fixed("region_index", ElemType::I64, &[n_regions]),
        ];
        if has_expression {
            specs.push(ColumnSpec::fixed("expression", ElemType::F32, &[]));
        }
        let tensors = StreamingTensorWriter::new(output, specs)?;
        let mut samples = AtomicWriter::create(samples_output)?;
        let mut regions = AtomicWriter::create(regions_output)?;
        writeln!(
            samples,
            "sample\tgene\tgene_id\tcell_type\tchrom\ttss\tstrand\tregions_used\ttss_region\texpression"
        )?;
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
            tensors,
            samples,
            regions,
            n_regions,
            n_features: features.len(),
            has_expression,
            row: vec![0.0; n_regions * width],
            mask: vec![0; n_regions],
            region_index: vec![-1; n_regions],
            line: String::new(),
            written: 0,
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
        for (slot, &k) in s.window.regions.iter().enumerate() {
            self.row[slot * width..slot * width + nf]
                .copy_from_slice(&s.scores[k * nf..(k + 1) * nf]);
            self.row[slot * width + nf] = s.accessibility[k];
            self.mask[slot] = 1;
            self.region_index[slot] = (s.offset + k) as i64;
        }
        let tss_index = s.window.tss_index.map(|i| i as i64).unwrap_or(-1);
        self.tensors.push_f32(0, &self.row)?;
        self.tensors.push_bytes(1, &self.mask)?;
        self.tensors.push_i64(2, &[tss_index])?;
        self.tensors.push_i64(3, &self.region_index)?;
        if self.has_expression {
            self.tensors
                .push_f32(4, &[s.expression.map(|v| v as f32).unwrap_or(f32::NAN)])?;
        }
        let g = s.gene;
        writeln!(
            self.samples,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.written,
            g.name,
            g.id,
            s.cell_type,
            g.chrom,
            g.tss,
            g.strand.symbol(),
            s.window.regions.len(),
            s.window
                .tss_index
                .map(|i| (s.offset + s.window.regions[i]).to_string())
                .unwrap_or_else(|| ".".into()),
            s.expression
                .map(|v| v.to_string())
                .unwrap_or_else(|| "NA".into()),
        )?;
        self.written += 1;
        Ok(())
    }

    pub fn samples_written(&self) -> u64 {
        self.written
    }

    pub fn n_regions(&self) -> usize {
        self.n_regions
    }

    /// Write the safetensors header and data, then move all three files into place.
    pub fn finish(self, metadata: BTreeMap<String, String>) -> Result<()> {
        let dataset = self.tensors.finish(metadata)?;
        dataset.commit()?;
        self.samples.commit()?;
        self.regions.commit()?;
        Ok(())
    }
}
