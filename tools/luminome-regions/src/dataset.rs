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
use luminome_io::region_dataset::{RegionDatasetMeta, RegionDatasetWriter, RegionSample};
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
        for (slot, &k) in s.window.regions.iter().enumerate() {
            self.row[slot * width..slot * width + nf]
                .copy_from_slice(&s.scores[k * nf..(k + 1) * nf]);
            self.row[slot * width + nf] = s.accessibility[k];
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
