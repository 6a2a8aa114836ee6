//! The whole run: regions → accessibility → motif scores → gene windows → dataset.
//!
//! Work is done chromosome by chromosome (scan that chromosome's regions, then write the samples
//! of its genes), so memory is bounded by one chromosome's region × feature matrix and one
//! sample row, not by the number of genes. With `--feature-scale get` / `get-quantitative` every
//! chromosome is scanned first (GET divides each motif column by its maximum over the whole
//! run's regions of the cell type), so memory holds all regions × features. Nothing appears at
//! the output paths unless the whole run succeeds.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use luminome_io::bam::BamFilter;
use luminome_io::expression::{
    read_expression_with, ColumnRef, Duplicates, ExpressionTable, ExpressionTransform,
};
use luminome_io::motif::{read_motifs, MotifFormat};
use luminome_io::reference::Reference;
use luminome_io::tss::{BedTssMode, TssFormat};

use crate::accessibility::{AccessibilitySource, ChromRename, FragmentMode, Normalisation};
use crate::dataset::{dataset_meta, get_maxima, DatasetWriter, FeatureScale};
use crate::inputs::{build_regions, read_genes, RegionInputs};
use crate::motifs::{self, BaseFreqs, FeatureMap, ScanMotif, Threshold};
use crate::regions::ChromRegions;
use crate::reuse::RegionTable;
use crate::samples::SampleSources;
use crate::scan::{Aggregation, MotifScanner, ScanStats};
use crate::windows::Selection;

/// One `--expression CELLTYPE=PATH[:COLUMN]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpressionInput {
    pub cell_type: String,
    pub path: PathBuf,
    /// The value column for this cell type (default: `--expression-value-column`).
    pub column: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackgroundChoice {
    Uniform,
    Genome,
}

/// Peak calling parameters (used when no peak file is given).
#[derive(Debug, Clone, Copy)]
pub struct CallParams {
    pub fold: f64,
    pub merge_gap: u64,
    pub min_width: u64,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub reference: PathBuf,
    pub peaks: Vec<PathBuf>,
    pub accessibility: Vec<AccessibilitySource>,
    pub reuse_regions: Option<PathBuf>,
    pub motifs: Option<PathBuf>,
    pub motif_format: Option<MotifFormat>,
    pub clusters: Option<PathBuf>,
    pub cluster_motif_column: String,
    pub cluster_name_column: String,
    /// Gene TSS file; `None` with `tile_step`.
    pub genes: Option<PathBuf>,
    /// Windows tiled along the reference every this many bp instead of genes.
    pub tile_step: Option<u64>,
    pub genes_format: TssFormat,
    pub tss_feature: String,
    pub bed_tss_mode: BedTssMode,
    pub gene_types: Vec<String>,
    pub expression: Vec<ExpressionInput>,
    pub expression_matrix: Option<PathBuf>,
    pub expression_gene_column: ColumnRef,
    pub expression_value_column: ColumnRef,
    pub expression_transform: ExpressionTransform,
    pub expression_duplicates: Duplicates,
    pub keep_missing_expression: bool,
    pub window: u64,
    pub n_regions: usize,
    pub selection: Selection,
    pub threshold: Threshold,
    pub aggregation: Aggregation,
    pub pseudocount: f64,
    pub background: BackgroundChoice,
    pub normalisation: Normalisation,
    /// How the written feature columns are scaled (`--feature-scale`).
    pub feature_scale: FeatureScale,
    pub max_region_width: u64,
    pub merge_gap: u64,
    pub call: CallParams,
    pub rename: ChromRename,
    pub fragment_mode: FragmentMode,
    pub bam: BamFilter,
    pub output: PathBuf,
    pub samples_output: PathBuf,
    pub regions_output: PathBuf,
    /// `--scan-chunk-bp`: regions packed per scanned chunk.
    pub scan_chunk_bp: usize,
    /// `--shard I/N`: write this part's scores and counts to `output` (crate::shard).
    pub shard: Option<luminome_cli::shard::ShardSpec>,
    /// `--gather PARTS`: the scores and counts come from the parts.
    pub gather: Vec<PathBuf>,
    pub command_line: String,
}

/// What a run did (also printed on stderr).
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub regions: usize,
    pub genes: usize,
    pub samples: u64,
    pub genes_without_regions: usize,
    pub genes_off_reference: usize,
    pub samples_without_expression: u64,
    pub too_wide: usize,
    pub scan: ScanStats,
    pub scan_seconds: f64,
}

/// Set by `-q/--quiet`: [`log`] prints nothing.
pub static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(crate) fn log(msg: impl AsRef<str>) {
    if !QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("luminome-regions: {}", msg.as_ref());
    }
}

/// Default side outputs next to the dataset: `X.safetensors` → `X.samples.tsv`, `X.regions.tsv`.
pub fn side_output(output: &std::path::Path, suffix: &str) -> PathBuf {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".safetensors").unwrap_or(&name);
    output.with_file_name(format!("{stem}.{suffix}"))
}

/// The `[regions × features]` motif scores of one chromosome's regions `which` (all of them in
/// one job; a shard's whole chunks).
pub(crate) fn scan_chromosome(
    reference: &mut Reference,
    chrom: &ChromRegions,
    which: std::ops::Range<usize>,
    scanner: &MotifScanner<'_>,
    summary: &mut Summary,
) -> Result<Vec<f32>> {
    let regions = &chrom.regions[which];
    let (Some(first), Some(last)) = (regions.first(), regions.last()) else {
        return Ok(Vec::new());
    };
    // Sorted and non-overlapping: the span from the first start to the last end holds them all.
    let span = first.0;
    let seq = reference.fetch(&chrom.name, span, last.1)?;
    let seqs: Vec<Vec<u8>> = regions
        .iter()
        .map(|&(s, e)| seq[(s - span) as usize..(e - span) as usize].to_vec())
        .collect();
    drop(seq);
    let t0 = Instant::now();
    let (m, st) = scanner.scan(&seqs);
    summary.scan_seconds += t0.elapsed().as_secs_f64();
    summary.scan.regions += st.regions;
    summary.scan.bases += st.bases;
    summary.scan.hits += st.hits;
    Ok(m)
}

pub fn run(cfg: &Config) -> Result<Summary> {
    if let Some(spec) = cfg.shard {
        return crate::shard::run_part(cfg, spec);
    }
    let started = Instant::now();
    let mut reference = Reference::open(&cfg.reference)?;
    let mut inputs = region_inputs(cfg, &reference)?;
    let n_regions_total = inputs.set.len();
    log(format!("{n_regions_total} regions after merging"));
    let get_scale = cfg.feature_scale.is_get();
    if get_scale && inputs.cell_types.is_empty() {
        bail!(
            "--feature-scale {} needs accessibility per cell type (--accessibility CELLTYPE=PATH)",
            cfg.feature_scale.name()
        );
    }
    let normalised: Vec<Vec<f32>> = inputs
        .raw
        .iter()
        .map(|r| cfg.normalisation.apply(r))
        .collect();
    let (prepared, motif_meta) = prepare_motifs(cfg, &mut reference, &mut inputs)?;
    let nf = inputs.features.len();
    if let Some(scores) = &inputs.scores {
        if scores.len() != inputs.set.len() * nf {
            bail!("the gathered parts hold other motif features than --motifs gives");
        }
    }
    let (expression_inputs, expression) = read_expression_tables(cfg, &inputs.cell_types)?;
    let (genes, off_reference) = read_genes(cfg, &reference, &inputs.set)?;
    if off_reference > 0 {
        log(format!(
            "{off_reference} genes are on sequences absent from the reference and are left out"
        ));
    }

    // Outputs (temporary until everything succeeded).
    let mut out = DatasetWriter::create(
        &cfg.output,
        &cfg.samples_output,
        &cfg.regions_output,
        cfg.n_regions,
        &inputs.features,
        &inputs.cell_types,
        !expression.is_empty(),
    )?;
    let mut summary = Summary {
        regions: n_regions_total,
        genes: genes.len(),
        genes_off_reference: off_reference,
        too_wide: inputs.too_wide,
        ..Default::default()
    };
    let scanner = prepared.as_ref().map(|(m, features)| {
        MotifScanner::new(m, features, cfg.aggregation).chunk_bp(cfg.scan_chunk_bp)
    });
    let maxima = if get_scale {
        get_scale_maxima(&mut inputs, scanner.as_ref(), &mut reference, &mut summary)?
    } else {
        Vec::new()
    };
    let sources = SampleSources {
        cfg,
        inputs: &inputs,
        normalised: &normalised,
        expression: &expression,
        maxima: &maxima,
    };
    let mut gi = 0;
    for (ci, chrom) in inputs.set.chroms.iter().enumerate() {
        let off = inputs.set.offset(ci);
        let n = chrom.regions.len();
        let chrom_genes_end = gi + genes[gi..].iter().take_while(|(c, _)| *c == ci).count();
        if n == 0 && chrom_genes_end == gi {
            continue;
        }
        // Motif scores of this chromosome's regions.
        let scores: Vec<f32> = match (&scanner, &inputs.scores) {
            (_, Some(all)) => all[off * nf..(off + n) * nf].to_vec(),
            (Some(scanner), None) => {
                scan_chromosome(&mut reference, chrom, 0..n, scanner, &mut summary)?
            }
            _ => Vec::new(),
        };
        for (k, &region) in chrom.regions.iter().enumerate() {
            out.write_region(
                off + k,
                &chrom.name,
                region,
                inputs.raw.iter().map(|r| r[off + k]),
                normalised.iter().map(|r| r[off + k]),
                &scores[k * nf..(k + 1) * nf],
            )?;
        }
        sources.write_chromosome(
            ci,
            &genes[gi..chrom_genes_end],
            &scores,
            &mut out,
            &mut summary,
        )?;
        gi = chrom_genes_end;
    }
    summary.samples = out.samples_written();
    if summary.samples == 0 {
        bail!("no samples to write (every gene lacked an expression value; see --keep-missing-expression)");
    }
    log_left_out(cfg, &summary);
    let meta = dataset_meta(
        cfg,
        &inputs,
        &expression_inputs,
        motif_meta,
        n_regions_total,
    );
    out.finish(&meta, &cfg.command_line)?;
    log_written(cfg, &summary, inputs.cell_types.len(), nf, started);
    Ok(summary)
}

/// GET's feature scale divides by maxima over every chromosome: every chromosome is scanned
/// before any sample (the scores kept in `inputs.scores`); each cell type's maxima.
fn get_scale_maxima(
    inputs: &mut RegionInputs,
    scanner: Option<&MotifScanner>,
    reference: &mut Reference,
    summary: &mut Summary,
) -> Result<Vec<Vec<f32>>> {
    let nf = inputs.features.len();
    if let (None, Some(scanner)) = (&inputs.scores, scanner) {
        let mut all = Vec::with_capacity(inputs.set.len() * nf);
        for chrom in &inputs.set.chroms {
            let n = chrom.regions.len();
            all.extend(scan_chromosome(reference, chrom, 0..n, scanner, summary)?);
        }
        inputs.scores = Some(all);
    }
    Ok(match &inputs.scores {
        Some(all) => inputs
            .raw
            .iter()
            .map(|raw| get_maxima(all, raw, nf))
            .collect(),
        None => Vec::new(),
    })
}

/// The regions of `--reuse-regions`, of the `--gather` parts, or those built from peaks or
/// called from accessibility.
fn region_inputs(cfg: &Config, reference: &Reference) -> Result<RegionInputs> {
    if !cfg.gather.is_empty() {
        return crate::shard::gathered_inputs(cfg, reference);
    }
    let Some(path) = &cfg.reuse_regions else {
        return build_regions(cfg, reference);
    };
    let t = RegionTable::read(path, reference)?;
    log(format!(
        "reusing {} regions and {} features from {}",
        t.set.len(),
        t.features.len(),
        path.display()
    ));
    Ok(RegionInputs {
        sources: serde_json::json!({"reused_regions": path.display().to_string()}),
        set: t.set,
        cell_types: t.cell_types,
        raw: t.raw,
        features: t.features,
        scores: Some(t.scores),
        too_wide: 0,
    })
}

/// Motifs ready to scan, and the features they are summed into.
pub(crate) type PreparedMotifs = (Vec<ScanMotif>, FeatureMap);

/// The motifs to scan and their features (none when the regions' scores are reused or
/// gathered), with the dataset's `motif` metadata (none when reused); sets `inputs.features`.
pub(crate) fn prepare_motifs(
    cfg: &Config,
    reference: &mut Reference,
    inputs: &mut RegionInputs,
) -> Result<(Option<PreparedMotifs>, serde_json::Value)> {
    let mut meta = serde_json::Value::Null;
    let prepared = if cfg.reuse_regions.is_none() {
        let path = cfg
            .motifs
            .as_ref()
            .context("--motifs is required unless --reuse-regions is given")?;
        let records = read_motifs(path, cfg.motif_format)?;
        let features = match &cfg.clusters {
            Some(c) => FeatureMap::from_cluster_table(
                c,
                &records,
                &cfg.cluster_motif_column,
                &cfg.cluster_name_column,
            )?,
            None => FeatureMap::identity(&records),
        };
        let bg = background(cfg.background, reference)?;
        let t0 = Instant::now();
        // Gathered scores need the features' names and the metadata, not the thresholds.
        let scan_motifs = match inputs.scores {
            None => Some(motifs::prepare(
                &records,
                path,
                &bg,
                cfg.pseudocount,
                cfg.threshold,
            )?),
            Some(_) => None,
        };
        log(format!(
            "{} motifs from {} -> {} features{}",
            records.len(),
            path.display(),
            features.names.len(),
            match scan_motifs {
                Some(_) => format!("; thresholds in {:.2}s", t0.elapsed().as_secs_f64()),
                None => String::new(),
            }
        ));
        meta = serde_json::json!({
            "motifs": path.display().to_string(),
            "clusters": cfg.clusters.as_ref().map(|c| c.display().to_string()),
            "n_motifs": records.len(),
            "background": {"A": bg[0], "C": bg[1], "G": bg[2], "T": bg[3], "source": match cfg.background {
                BackgroundChoice::Uniform => "uniform", BackgroundChoice::Genome => "genome"}},
            "pseudocount": cfg.pseudocount,
            "threshold": match cfg.threshold {
                Threshold::PValue(p) => serde_json::json!({"pvalue": p}),
                Threshold::Score(s) => serde_json::json!({"score": s}) },
            "aggregation": cfg.aggregation.name(),
        });
        inputs.features = features.names.clone();
        scan_motifs.map(|m| (m, features))
    } else {
        None
    };
    if cfg.feature_scale.is_get() {
        if let Some(m) = meta.as_object_mut() {
            m.insert("feature_scale".into(), cfg.feature_scale.name().into());
        } else {
            meta = serde_json::json!({"feature_scale": cfg.feature_scale.name()});
        }
    }
    Ok((prepared, meta))
}

/// The base composition motif scores are computed against.
fn background(choice: BackgroundChoice, reference: &mut Reference) -> Result<BaseFreqs> {
    Ok(match choice {
        BackgroundChoice::Uniform => motifs::uniform(),
        BackgroundChoice::Genome => {
            let mut counts = [0u64; 4];
            for (name, len) in reference.sequences().to_vec() {
                let seq = reference.fetch(&name, 0, len)?;
                motifs::count_bases(&seq, &mut counts);
            }
            motifs::composition(counts).context("the reference has no A/C/G/T bases")?
        }
    })
}

/// The expression inputs (one per cell type: `--expression`, or the columns of
/// `--expression-matrix`) and their tables by cell type; every cell type or none must have one.
fn read_expression_tables(
    cfg: &Config,
    cell_types: &[String],
) -> Result<(Vec<ExpressionInput>, HashMap<String, ExpressionTable>)> {
    let expression_inputs: Vec<ExpressionInput> = match &cfg.expression_matrix {
        Some(path) => cell_types
            .iter()
            .map(|ct| ExpressionInput {
                cell_type: ct.clone(),
                path: path.clone(),
                column: Some(ct.clone()),
            })
            .collect(),
        None => cfg.expression.clone(),
    };
    if !expression_inputs.is_empty() {
        for e in &expression_inputs {
            if !cell_types.contains(&e.cell_type) {
                bail!(
                    "--expression for cell type {:?}, which has no --accessibility",
                    e.cell_type
                );
            }
        }
        for ct in cell_types {
            if !expression_inputs.iter().any(|e| &e.cell_type == ct) {
                bail!("--expression is given for some cell types but not for {ct:?}");
            }
        }
    }
    let mut expression: HashMap<String, ExpressionTable> = HashMap::new();
    for e in &expression_inputs {
        let column = e
            .column
            .as_deref()
            .map(ColumnRef::parse)
            .unwrap_or_else(|| cfg.expression_value_column.clone());
        let t = read_expression_with(
            &e.path,
            &cfg.expression_gene_column,
            &column,
            cfg.expression_duplicates,
        )?;
        log(format!(
            "{}: {} expression values ({}) from {}{}",
            e.cell_type,
            t.len(),
            t.value_column,
            e.path.display(),
            if t.missing > 0 {
                format!("; {} rows with a missing value (NA) left out", t.missing)
            } else {
                String::new()
            }
        ));
        expression.insert(e.cell_type.clone(), t);
    }
    Ok((expression_inputs, expression))
}

/// Logs the genes (tiles) and samples a run left out or kept without a value.
fn log_left_out(cfg: &Config, summary: &Summary) {
    if summary.genes_without_regions > 0 {
        log(if cfg.tile_step.is_some() {
            format!(
                "{} tiles have no region in their {} bp window and are left out",
                summary.genes_without_regions, cfg.window
            )
        } else {
            format!(
                "{} genes have no region in their {} bp window; they are kept with an all-zero region_mask",
                summary.genes_without_regions, cfg.window
            )
        });
    }
    if summary.samples_without_expression > 0 {
        log(format!(
            "{} (gene, cell type) pairs have no expression value; {}",
            summary.samples_without_expression,
            if cfg.keep_missing_expression {
                "written with NaN"
            } else {
                "left out (see --keep-missing-expression)"
            }
        ));
    }
}

/// The run's closing lines: what was written, and the scan's rate.
fn log_written(cfg: &Config, summary: &Summary, cell_types: usize, nf: usize, started: Instant) {
    let tiles = cfg.tile_step.is_some();
    log(format!(
        "wrote {} samples ({} {} x {} cell types, N = {}, {} features + accessibility{}) to {} in {:.1}s",
        summary.samples,
        if tiles {
            summary.genes - summary.genes_without_regions
        } else {
            summary.genes
        },
        if tiles { "tiles" } else { "genes" },
        cell_types,
        cfg.n_regions,
        nf,
        if cfg.feature_scale.is_get() {
            format!(", feature scale {}", cfg.feature_scale.name())
        } else {
            String::new()
        },
        cfg.output.display(),
        started.elapsed().as_secs_f64()
    ));
    if summary.scan.regions > 0 {
        log(format!(
            "scanned {} regions ({:.2} Mbp) in {:.2}s, {} hits",
            summary.scan.regions,
            summary.scan.bases as f64 / 1e6,
            summary.scan_seconds,
            summary.scan.hits
        ));
    }
}
