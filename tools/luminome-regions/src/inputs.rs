//! The run's inputs before any scanning: the regions (from peaks, or called from coverage) with
//! their raw accessibility per cell type, and the genes on the reference.

use anyhow::{bail, Context, Result};
use luminome_io::reference::Reference;
use luminome_io::tss::{read_tss, GeneTss};
use luminome_io::InputError;

use crate::accessibility::{self, AccessibilitySource, CountOptions};
use crate::pipeline::{log, Config};
use crate::regions::{add_peaks, PeakReport, RegionSet};

/// Regions, their raw accessibility per cell type and (when reused) their motif scores.
pub(crate) struct RegionInputs {
    pub set: RegionSet,
    pub cell_types: Vec<String>,
    pub raw: Vec<Vec<f64>>,
    pub features: Vec<String>,
    /// Reused motif scores, row-major `[regions × features]` (None: scan).
    pub scores: Option<Vec<f32>>,
    pub sources: serde_json::Value,
    pub too_wide: usize,
}

pub(crate) fn build_regions(cfg: &Config, reference: &Reference) -> Result<RegionInputs> {
    let (set, too_wide) = region_set(cfg, reference)?;
    let (cell_types, raw) = count_accessibility(cfg, &set, |_| true)?;
    Ok(RegionInputs {
        set,
        cell_types,
        raw,
        features: Vec::new(),
        scores: None,
        sources: region_sources(cfg),
        too_wide,
    })
}

/// The merged regions (peaks read, or called on the coverage tracks) and how many peaks were
/// left out as too wide.
pub(crate) fn region_set(cfg: &Config, reference: &Reference) -> Result<(RegionSet, usize)> {
    if cfg.accessibility.is_empty() {
        bail!("at least one --accessibility CELLTYPE=PATH is needed (or --reuse-regions)");
    }
    let mut set = RegionSet::for_reference(reference.sequences());
    let mut report = PeakReport::default();
    if cfg.peaks.is_empty() {
        let coverage: Vec<&AccessibilitySource> = cfg
            .accessibility
            .iter()
            .filter(|s| s.kind.is_coverage())
            .collect();
        if coverage.is_empty() {
            bail!("no --peaks given and no bigWig/bedGraph accessibility to call peaks from");
        }
        for src in coverage {
            let mut reader = accessibility::CoverageReader::open(src, cfg.rename)?;
            reader.check_names(&RegionSet {
                chroms: set
                    .chroms
                    .iter()
                    .map(|c| crate::regions::ChromRegions {
                        name: c.name.clone(),
                        length: c.length,
                        regions: vec![(0, 1)],
                    })
                    .collect(),
            })?;
            let mut called = 0;
            for c in &mut set.chroms {
                let iv = reader.intervals(&c.name)?;
                let peaks = accessibility::call_peaks(
                    &iv,
                    c.length,
                    cfg.call.fold,
                    cfg.call.merge_gap,
                    cfg.call.min_width,
                );
                called += peaks.len();
                c.regions
                    .extend(peaks.into_iter().map(|(s, e)| (s, e.min(c.length))));
            }
            log(format!(
                "called {called} peaks on {} ({})",
                src.cell_type,
                src.path.display()
            ));
        }
    } else {
        for p in &cfg.peaks {
            add_peaks(&mut set, p, cfg.max_region_width, &mut report)?;
        }
        for (path, line, chrom, s, e) in report.too_wide.iter().take(10) {
            log(format!(
                "left out {}: line {line}: peak {chrom}:{s}-{e} is {} bp wide (> --max-region-width {})",
                path.display(),
                e - s,
                cfg.max_region_width
            ));
        }
        if report.too_wide.len() > 10 {
            log(format!(
                "... and {} more peaks wider than {} bp",
                report.too_wide.len() - 10,
                cfg.max_region_width
            ));
        }
    }
    set.merge(cfg.merge_gap);
    if set.is_empty() {
        let from = if cfg.peaks.is_empty() {
            "the peaks called from --accessibility".to_string()
        } else {
            cfg.peaks
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        bail!("{from}: no regions left (after reading/calling peaks and filtering by width)");
    }
    Ok((set, report.too_wide.len()))
}

/// The raw accessibility of every region in the `--accessibility` cell types `counted` keeps
/// (by position; a shard counts its own), with their names; a cell type given twice is refused.
pub(crate) fn count_accessibility(
    cfg: &Config,
    set: &RegionSet,
    counted: impl Fn(usize) -> bool,
) -> Result<(Vec<String>, Vec<Vec<f64>>)> {
    let opts = CountOptions {
        rename: cfg.rename,
        fragment_mode: cfg.fragment_mode,
        bam: cfg.bam,
    };
    check_cell_types(cfg)?;
    let mut raw = Vec::new();
    let mut cell_types = Vec::new();
    for (i, src) in cfg.accessibility.iter().enumerate() {
        if !counted(i) {
            continue;
        }
        let counts = accessibility::count(src, set, &opts)?;
        log(format!(
            "{}: {} ({}), total {:.0} over {} regions",
            src.cell_type,
            src.path.display(),
            src.kind.name(),
            counts.iter().sum::<f64>(),
            counts.len()
        ));
        raw.push(counts);
        cell_types.push(src.cell_type.clone());
    }
    Ok((cell_types, raw))
}

/// Refuses a cell type given twice in `--accessibility`.
pub(crate) fn check_cell_types(cfg: &Config) -> Result<()> {
    for (i, src) in cfg.accessibility.iter().enumerate() {
        if cfg.accessibility[..i]
            .iter()
            .any(|s| s.cell_type == src.cell_type)
        {
            bail!(
                "cell type {:?} is given twice in --accessibility",
                src.cell_type
            );
        }
    }
    Ok(())
}

/// Where the regions and their accessibility came from (the dataset's `region_sources`).
pub(crate) fn region_sources(cfg: &Config) -> serde_json::Value {
    serde_json::json!({
        "peaks": cfg.peaks.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "accessibility": cfg.accessibility.iter().map(|s| serde_json::json!({
            "cell_type": s.cell_type, "kind": s.kind.name(), "path": s.path.display().to_string()})).collect::<Vec<_>>(),
    })
}

pub(crate) fn read_genes(
    cfg: &Config,
    reference: &Reference,
    set: &RegionSet,
) -> Result<(Vec<(usize, GeneTss)>, usize)> {
    let Some(genes_path) = &cfg.genes else {
        let step = cfg.tile_step.context("give --genes or --tile-step")?;
        return Ok((tiles(set, step), 0));
    };
    let genes = read_tss(
        genes_path,
        cfg.genes_format,
        &cfg.tss_feature,
        cfg.bed_tss_mode,
    )?;
    let mut kept = Vec::new();
    let mut off_reference = 0;
    for g in genes {
        if !cfg.gene_types.is_empty()
            && !g
                .gene_type
                .as_ref()
                .is_some_and(|t| cfg.gene_types.contains(t))
        {
            continue;
        }
        let Some(ci) = set.chrom_index(&g.chrom) else {
            off_reference += 1;
            continue;
        };
        let len = reference.length(&g.chrom).unwrap_or(0);
        if g.tss >= len {
            return Err(InputError::line(
                genes_path,
                g.line,
                format!(
                    "TSS of {} ({}:{}) is past the end of {} (length {len})",
                    g.name, g.chrom, g.tss, g.chrom
                ),
            )
            .into());
        }
        kept.push((ci, g));
    }
    if kept.is_empty() {
        bail!(InputError::file(
            genes_path,
            "no gene left on the reference's sequences (check --gene-type and chromosome names)"
        ));
    }
    kept.sort_by(|a, b| (a.0, a.1.tss, &a.1.name).cmp(&(b.0, b.1.tss, &b.1.name)));
    Ok((kept, off_reference))
}

/// Pseudo-genes for `--tile-step`: one centre every `step` bp along each sequence (at step/2,
/// 3·step/2, ...), named after the tile they centre (`chr:start-end`, 0-based half-open), with
/// no strand. Tiles whose window holds no region are left out later (pipeline).
fn tiles(set: &RegionSet, step: u64) -> Vec<(usize, GeneTss)> {
    let mut out = Vec::new();
    for (ci, c) in set.chroms.iter().enumerate() {
        let mut start = 0;
        while start < c.length {
            let end = (start + step).min(c.length);
            let name = format!("{}:{start}-{end}", c.name);
            out.push((
                ci,
                GeneTss {
                    id: name.clone(),
                    name,
                    chrom: c.name.clone(),
                    tss: start + (end - start) / 2,
                    strand: luminome_io::bed::Strand::Unknown,
                    gene_type: None,
                    line: 0,
                },
            ));
            start = end;
        }
    }
    out
}
