//! Sharded region matrices for clusters: `--shard I/N` scans part I of the regions' chunks and
//! counts the accessibility of part I's cell types into a part file; `--gather PARTS` builds
//! the dataset, samples table and region table one run writes from the parts, byte for byte.
//!
//! The two costly steps split along their own axes. Scanning splits by region: the regions,
//! in global order, are cut into the scanner's chunks (about 256 kbp, never across a
//! chromosome) and part I takes chunks ⌊(I−1)·C/N⌋ .. ⌊I·C/N⌋ of the C chunks; a chunk is
//! scanned as one job scans it, so its scores are the same bits. Counting splits by cell type:
//! `--accessibility` number c (from 0) goes to part (c mod N) + 1. Every part still builds the
//! region set (reading the peaks, or calling them on the coverage tracks), as one job does.
//! The gather reads the motifs, genes and expression and writes, as one job after its scan.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use luminome_cli::shard::{fingerprint, open_parts, PartCheck, PartFile, ShardSpec};
use luminome_io::reference::Reference;
use luminome_io::tensorfile::write_tensors;
use safetensors::tensor::TensorView;
use safetensors::Dtype;

use crate::inputs::RegionInputs;
use crate::inputs::{check_cell_types, count_accessibility, region_set, region_sources};
use crate::pipeline::{log, prepare_motifs, scan_chromosome, Config, Summary};
use crate::regions::RegionSet;
use crate::scan::MotifScanner;

/// Metadata key marking a part file.
const KIND: &str = "luminome_regions_part";

/// What a part records of the run and the gather checks against its own arguments: the
/// contents of the files the regions and scores come from, the accessibility files' cell
/// types, kinds and sizes (not their contents: reading every BAM again is the work the gather
/// saves), every option that changes a region, a count or a score, and the version. Genes,
/// expression, windows and scales are the gather's own: one set of parts serves several.
fn run_identity(cfg: &Config) -> Result<BTreeMap<String, String>> {
    let files = |paths: &mut dyn Iterator<Item = &PathBuf>| -> Result<String> {
        Ok(paths
            .map(|p| fingerprint(p))
            .collect::<Result<Vec<_>>>()?
            .join(","))
    };
    let accessibility: Result<Vec<String>> = cfg
        .accessibility
        .iter()
        .map(|s| {
            let size = std::fs::metadata(&s.path)
                .with_context(|| format!("cannot read {}", s.path.display()))?
                .len();
            Ok(format!("{}={}:{size}", s.cell_type, s.kind.name()))
        })
        .collect();
    let options = format!(
        "motif_format={:?} cluster_columns={:?}/{:?} pseudocount={} background={:?} \
         threshold={:?} aggregation={} max_region_width={} merge_gap={} call={:?} rename={:?} \
         fragment_mode={:?} bam={:?} scan_chunk_bp={}",
        cfg.motif_format,
        cfg.cluster_motif_column,
        cfg.cluster_name_column,
        cfg.pseudocount,
        cfg.background,
        cfg.threshold,
        cfg.aggregation.name(),
        cfg.max_region_width,
        cfg.merge_gap,
        cfg.call,
        cfg.rename,
        cfg.fragment_mode,
        cfg.bam,
        cfg.scan_chunk_bp
    );
    Ok(BTreeMap::from([
        ("reference".into(), fingerprint(&cfg.reference)?),
        ("peaks".into(), files(&mut cfg.peaks.iter())?),
        ("accessibility".into(), accessibility?.join(",")),
        ("motifs".into(), files(&mut cfg.motifs.iter())?),
        ("clusters".into(), files(&mut cfg.clusters.iter())?),
        ("options".into(), options),
        ("version".into(), env!("CARGO_PKG_VERSION").into()),
    ]))
}

/// Whether `--accessibility` number `c` is counted by part `spec`.
fn owns_cell_type(spec: ShardSpec, c: usize) -> bool {
    c % spec.count == spec.index - 1
}

/// The global regions part `spec` scans: whole chunks of the scanner, contiguous.
fn part_regions(set: &RegionSet, scanner: &MotifScanner<'_>, spec: ShardSpec) -> Range<usize> {
    let mut chunks: Vec<Range<usize>> = Vec::new();
    for (ci, chrom) in set.chroms.iter().enumerate() {
        let off = set.offset(ci);
        let lengths = chrom.regions.iter().map(|&(s, e)| (e - s) as usize);
        let bounds = scanner.chunk_bounds(lengths);
        chunks.extend(bounds.windows(2).map(|w| off + w[0]..off + w[1]));
    }
    let mine = spec.records(chunks.len(), 1);
    let start = chunks.get(mine.start).map_or(set.len(), |c| c.start);
    let end = match mine.end {
        0 => 0,
        e => chunks[e - 1].end,
    };
    start..end.max(start)
}

/// `--shard I/N`: builds the regions, counts part I's cell types, scans part I's chunks and
/// writes them to `cfg.output`.
pub fn run_part(cfg: &Config, spec: ShardSpec) -> Result<Summary> {
    let started = Instant::now();
    let identity = run_identity(cfg)?;
    let mut reference = Reference::open(&cfg.reference)?;
    let (set, too_wide) = region_set(cfg, &reference)?;
    let (cell_types, raw) = count_accessibility(cfg, &set, |c| owns_cell_type(spec, c))?;
    let mut inputs = RegionInputs {
        set,
        cell_types,
        raw,
        features: Vec::new(),
        scores: None,
        sources: serde_json::Value::Null,
        too_wide,
    };
    let (prepared, _) = prepare_motifs(cfg, &mut reference, &mut inputs)?;
    let (motifs, features) = prepared.context("--shard scans motifs: give --motifs")?;
    let scanner =
        MotifScanner::new(&motifs, &features, cfg.aggregation).chunk_bp(cfg.scan_chunk_bp);
    let range = part_regions(&inputs.set, &scanner, spec);
    let mut summary = Summary {
        regions: inputs.set.len(),
        too_wide,
        ..Default::default()
    };
    let mut scores = Vec::with_capacity(range.len() * inputs.features.len());
    for (ci, chrom) in inputs.set.chroms.iter().enumerate() {
        let off = inputs.set.offset(ci);
        let first = range.start.clamp(off, off + chrom.regions.len()) - off;
        let end = range.end.clamp(off, off + chrom.regions.len()) - off;
        scores.extend(scan_chromosome(
            &mut reference,
            chrom,
            first..end,
            &scanner,
            &mut summary,
        )?);
    }
    let part = Part {
        spec,
        range,
        inputs: &inputs,
        scores: &scores,
    };
    part.write(&cfg.output, identity)?.commit()?;
    log(format!(
        "part {spec}: scanned regions {}..{} of {} ({:.2} Mbp, {} hits in {:.2}s), counted {} of {} cell types; wrote {} in {:.1}s",
        part.range.start,
        part.range.end,
        inputs.set.len(),
        summary.scan.bases as f64 / 1e6,
        summary.scan.hits,
        summary.scan_seconds,
        inputs.cell_types.len(),
        cfg.accessibility.len(),
        cfg.output.display(),
        started.elapsed().as_secs_f64()
    ));
    Ok(summary)
}

/// What one part holds: every region (each part builds the same set; the gather checks they
/// agree), its chunks' scores, its cell types' raw accessibility.
struct Part<'a> {
    spec: ShardSpec,
    range: Range<usize>,
    inputs: &'a RegionInputs,
    scores: &'a [f32],
}

impl Part<'_> {
    fn write(
        &self,
        dest: &Path,
        identity: BTreeMap<String, String>,
    ) -> Result<luminome_io::atomic::AtomicFile> {
        let set = &self.inputs.set;
        let regions: Vec<u8> = set
            .chroms
            .iter()
            .enumerate()
            .flat_map(|(ci, c)| {
                c.regions
                    .iter()
                    .map(move |&(s, e)| [ci as i64, s as i64, e as i64])
            })
            .flatten()
            .flat_map(i64::to_le_bytes)
            .collect();
        let scores: Vec<u8> = self.scores.iter().flat_map(|v| v.to_le_bytes()).collect();
        let raw: Vec<u8> = self
            .inputs
            .raw
            .iter()
            .flatten()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let nf = self.inputs.features.len();
        let mut meta = identity;
        meta.insert(KIND.into(), "1".into());
        meta.insert("shard".into(), self.spec.to_string());
        meta.insert("first_region".into(), self.range.start.to_string());
        meta.insert("end_region".into(), self.range.end.to_string());
        meta.insert(
            "regions_crc".into(),
            format!("{:08x}", crc32fast::hash(&regions)),
        );
        meta.insert(
            "cell_types".into(),
            serde_json::to_string(&self.inputs.cell_types)?,
        );
        meta.insert(
            "features".into(),
            serde_json::to_string(&self.inputs.features)?,
        );
        meta.insert("too_wide".into(), self.inputs.too_wide.to_string());
        let tensors = vec![
            (
                "regions".to_string(),
                TensorView::new(Dtype::I64, vec![set.len(), 3], &regions)?,
            ),
            (
                "scores".to_string(),
                TensorView::new(Dtype::F32, vec![self.range.len(), nf], &scores)?,
            ),
            (
                "raw".to_string(),
                TensorView::new(Dtype::F64, vec![self.inputs.raw.len(), set.len()], &raw)?,
            ),
        ];
        write_tensors(dest, &tensors, &meta)
    }
}

/// `--gather PARTS`: the regions, raw accessibility of every cell type and motif scores of
/// every region, from the parts of one run (checked: each of 1..N once, this run's inputs and
/// options, the same regions and features in all, regions contiguous to the end, every cell
/// type counted by the part that owns it).
pub(crate) fn gathered_inputs(cfg: &Config, reference: &Reference) -> Result<RegionInputs> {
    if cfg.accessibility.is_empty() {
        bail!("at least one --accessibility CELLTYPE=PATH is needed (or --reuse-regions)");
    }
    check_cell_types(cfg)?;
    let identity = run_identity(cfg)?;
    let parts = open_parts(
        &cfg.gather,
        &PartCheck {
            kind: KIND,
            tool: "luminome-regions",
            identity: &identity,
            identity_names: "reference, peaks, accessibility, motifs, options or version",
            same_among: &["regions_crc", "features", "too_wide"],
        },
    )?;
    let meta = parts[0].file.metadata();
    let features: Vec<String> = serde_json::from_str(meta.get("features").map_or("", |s| s))
        .with_context(|| format!("{}: no feature names", parts[0].path.display()))?;
    let too_wide = meta
        .get("too_wide")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut set = RegionSet::for_reference(reference.sequences());
    let mut scores = Vec::new();
    let mut raw: Vec<Option<Vec<f64>>> = vec![None; cfg.accessibility.len()];
    for (i, part) in parts.iter().enumerate() {
        let bytes = std::fs::read(&part.path)
            .with_context(|| format!("cannot read {}", part.path.display()))?;
        let file = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| {
            anyhow::anyhow!("{}: not a valid safetensors file: {e}", part.path.display())
        })?;
        // Every part's region set is checked; part 1's is read (the others are the same bytes).
        let regions = checked_regions(&file, part)?;
        if i == 0 {
            read_regions(regions, part, &mut set)?;
        }
        read_part(
            cfg,
            part,
            &file,
            &set,
            features.len(),
            &mut scores,
            &mut raw,
        )?;
    }
    if scores.len() != set.len() * features.len() {
        bail!(
            "--gather: the parts end at region {} of {}",
            scores.len() / features.len().max(1),
            set.len()
        );
    }
    Ok(RegionInputs {
        set,
        cell_types: cfg
            .accessibility
            .iter()
            .map(|s| s.cell_type.clone())
            .collect(),
        raw: raw.into_iter().map(Option::unwrap_or_default).collect(),
        features,
        scores: Some(scores),
        sources: region_sources(cfg),
        too_wide,
    })
}

/// A part's region set as stored: `[n, 3]` i64 whose CRC-32 is its `regions_crc` (which every
/// part shares, checked on open).
fn checked_regions<'a>(file: &safetensors::SafeTensors<'a>, part: &PartFile) -> Result<&'a [u8]> {
    let bad = |what: &str| anyhow::anyhow!("{}: {what}", part.path.display());
    let t = file
        .tensor("regions")
        .map_err(|_| bad("no regions tensor"))?;
    if t.dtype() != Dtype::I64 || t.shape().len() != 2 || t.shape()[1] != 3 {
        return Err(bad(
            "its regions are not the [n, 3] i64 luminome-regions --shard writes",
        ));
    }
    let crc = format!("{:08x}", crc32fast::hash(t.data()));
    if part.file.metadata().get("regions_crc") != Some(&crc) {
        return Err(bad(
            "its regions do not match its regions_crc (a damaged part)",
        ));
    }
    Ok(t.data())
}

/// Part 1's regions (as [`checked_regions`] gives them) into `set`.
fn read_regions(data: &[u8], part: &PartFile, set: &mut RegionSet) -> Result<()> {
    let bad = |what: &str| anyhow::anyhow!("{}: {what}", part.path.display());
    let values: Vec<i64> = data
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    let mut last: Option<(usize, i64)> = None;
    for r in values.chunks_exact(3) {
        let ci = usize::try_from(r[0]).unwrap_or(usize::MAX);
        let chrom = set
            .chroms
            .get_mut(ci)
            .ok_or_else(|| bad("a region on a sequence the reference does not have"))?;
        // In reference order, sorted, non-overlapping, inside the sequence: as one job's.
        let after_last = match last {
            Some((lc, le)) => ci > lc || (ci == lc && r[1] >= le),
            None => true,
        };
        if !after_last || r[1] < 0 || r[1] >= r[2] || r[2] as u64 > chrom.length {
            return Err(bad(&format!(
                "region {}:{}-{} is not one of a merged region set on this reference",
                chrom.name, r[1], r[2]
            )));
        }
        chrom.regions.push((r[1] as u64, r[2] as u64));
        last = Some((ci, r[2]));
    }
    Ok(())
}

/// One part's scores (appended after the earlier parts') and its cell types' accessibility.
fn read_part(
    cfg: &Config,
    part: &PartFile,
    file: &safetensors::SafeTensors<'_>,
    set: &RegionSet,
    nf: usize,
    scores: &mut Vec<f32>,
    raw: &mut [Option<Vec<f64>>],
) -> Result<()> {
    let path = part.path.display();
    let meta = part.file.metadata();
    let bound = |k: &str| -> Result<usize> {
        meta.get(k)
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("{path}: no {k} in its metadata"))
    };
    let next = scores.len() / nf.max(1);
    let range = bound("first_region")?..bound("end_region")?;
    if range.start != next || range.end < range.start || range.end > set.len() {
        bail!(
            "{path}: part {} holds regions {range:?}, not those that follow region {next}",
            part.spec
        );
    }
    let s = file
        .tensor("scores")
        .map_err(|_| anyhow::anyhow!("{path}: no scores tensor"))?;
    if s.dtype() != Dtype::F32 || s.shape() != [range.len(), nf] {
        bail!("{path}: its scores are not [{}, {nf}] f32", range.len());
    }
    scores.extend(
        s.data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
    let names: Vec<String> = serde_json::from_str(meta.get("cell_types").map_or("", |s| s))
        .with_context(|| format!("{path}: no cell types"))?;
    let owned: Vec<usize> = (0..cfg.accessibility.len())
        .filter(|&c| owns_cell_type(part.spec, c))
        .collect();
    let expected: Vec<&str> = owned
        .iter()
        .map(|&c| cfg.accessibility[c].cell_type.as_str())
        .collect();
    if names != expected {
        bail!("{path}: part {} counted cell types {names:?}, where this run's part {} counts {expected:?}", part.spec, part.spec);
    }
    let r = file
        .tensor("raw")
        .map_err(|_| anyhow::anyhow!("{path}: no raw tensor"))?;
    if r.dtype() != Dtype::F64 || r.shape() != [owned.len(), set.len()] {
        bail!(
            "{path}: its raw accessibility is not [{}, {}] f64",
            owned.len(),
            set.len()
        );
    }
    let values: Vec<f64> = r
        .data()
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    for (&c, row) in owned.iter().zip(values.chunks_exact(set.len().max(1))) {
        raw[c] = Some(row.to_vec());
    }
    Ok(())
}
