//! The samples of one chromosome's genes (or tiles): for each cell type the window of regions
//! around the TSS, its expression value, written to the dataset.

use std::collections::HashMap;

use anyhow::Result;
use luminome_io::expression::ExpressionTable;
use luminome_io::tss::GeneTss;

use crate::dataset::{DatasetWriter, FeatureScale, Sample, SampleScale};
use crate::inputs::RegionInputs;
use crate::pipeline::{Config, Summary};
use crate::regions::ChromRegions;
use crate::windows::{select, Window};

/// What every sample of a run is cut from.
pub(crate) struct SampleSources<'a> {
    pub cfg: &'a Config,
    pub inputs: &'a RegionInputs,
    /// Normalised accessibility per cell type, over all regions.
    pub normalised: &'a [Vec<f32>],
    pub expression: &'a HashMap<String, ExpressionTable>,
    /// GET's per-cell-type motif maxima (empty under the raw scale).
    pub maxima: &'a [Vec<f32>],
}

/// One cell type's regions of a chromosome under GET's scale: those with raw accessibility > 0.
struct Accessible {
    /// Their indices in the chromosome's region list.
    index: Vec<usize>,
    regions: Vec<(u64, u64)>,
    normalised: Vec<f32>,
}

impl SampleSources<'_> {
    /// Writes the samples of `genes` (all on chromosome `ci`), whose regions' motif scores are
    /// `scores` (row-major `[regions × features]`).
    pub fn write_chromosome(
        &self,
        ci: usize,
        genes: &[(usize, GeneTss)],
        scores: &[f32],
        out: &mut DatasetWriter,
        summary: &mut Summary,
    ) -> Result<()> {
        let chrom = &self.inputs.set.chroms[ci];
        let off = self.inputs.set.offset(ci);
        let n = chrom.regions.len();
        // Under GET's scale a cell type's windows see only the regions accessible in it.
        let accessible = if self.cfg.feature_scale.is_get() && !genes.is_empty() {
            self.accessible(chrom, off)
        } else {
            Vec::new()
        };
        let has_expression = !self.expression.is_empty();
        for (_, gene) in genes {
            let mut gene_has_regions = true;
            for (ti, ct) in self.inputs.cell_types.iter().enumerate() {
                let acc = &self.normalised[ti][off..off + n];
                let w = self.window(chrom, acc, accessible.get(ti), gene.tss);
                gene_has_regions = !w.regions.is_empty();
                if self.cfg.tile_step.is_some() && !gene_has_regions {
                    // A tile with nothing in its window teaches pretraining nothing.
                    continue;
                }
                let value = self
                    .expression
                    .get(ct)
                    .and_then(|t| t.get_gene(&gene.name, &gene.id));
                if has_expression && value.is_none() {
                    summary.samples_without_expression += 1;
                    if !self.cfg.keep_missing_expression {
                        continue;
                    }
                }
                out.write_sample(&Sample {
                    gene,
                    cell_type: ct,
                    window: &w,
                    offset: off,
                    scores,
                    accessibility: acc,
                    scale: self.scale(ti, off, n),
                    expression: value.map(|v| self.cfg.expression_transform.apply(v)),
                })?;
            }
            if !gene_has_regions {
                summary.genes_without_regions += 1;
            }
        }
        Ok(())
    }

    /// Each cell type's accessible regions of `chrom` (GET's scale).
    fn accessible(&self, chrom: &ChromRegions, off: usize) -> Vec<Accessible> {
        let n = chrom.regions.len();
        self.inputs
            .raw
            .iter()
            .zip(self.normalised)
            .map(|(raw, norm)| {
                let index: Vec<usize> = (0..n).filter(|&k| raw[off + k] > 0.0).collect();
                Accessible {
                    regions: index.iter().map(|&k| chrom.regions[k]).collect(),
                    normalised: index.iter().map(|&k| norm[off + k]).collect(),
                    index,
                }
            })
            .collect()
    }

    /// The window around `tss`: among all of `chrom`'s regions, or among a cell type's
    /// accessible ones, indexed back into the chromosome's list.
    fn window(
        &self,
        chrom: &ChromRegions,
        acc: &[f32],
        accessible: Option<&Accessible>,
        tss: u64,
    ) -> Window {
        let cfg = self.cfg;
        match accessible {
            None => select(
                &chrom.regions,
                tss,
                cfg.window,
                cfg.n_regions,
                cfg.selection,
                acc,
            ),
            Some(a) => {
                let mut w = select(
                    &a.regions,
                    tss,
                    cfg.window,
                    cfg.n_regions,
                    cfg.selection,
                    &a.normalised,
                );
                // Back to the chromosome's indices (monotonic: order and slots hold).
                for k in &mut w.regions {
                    *k = a.index[*k];
                }
                w
            }
        }
    }

    /// How cell type `ti`'s samples on the chromosome at `off` (with `n` regions) are scaled.
    fn scale(&self, ti: usize, off: usize, n: usize) -> SampleScale<'_> {
        match self.cfg.feature_scale {
            FeatureScale::Raw => SampleScale::Raw,
            FeatureScale::Get => SampleScale::Get {
                maxima: &self.maxima[ti],
                quantitative: None,
            },
            FeatureScale::GetQuantitative => SampleScale::Get {
                maxima: &self.maxima[ti],
                quantitative: Some(&self.inputs.raw[ti][off..off + n]),
            },
        }
    }
}
