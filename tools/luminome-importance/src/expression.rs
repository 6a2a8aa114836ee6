//! `luminome-importance` on expression models: which regions and which motifs drive each
//! sample's predicted expression.
//!
//! - `--method pooling`: the attention-pooling weights α_i (attention-pooling head only).
//!   TSV: `sample gene gene_id cell_type slot region chrom start end alpha`, one row per region.
//! - `--method saliency` (gradient × input) or `ig` (integrated gradients from the all-zero
//!   input): each region × feature's contribution to ŷ, summed over the regions per feature.
//!   TSV: `sample gene gene_id cell_type feature score rank`, the `--top` features per sample by
//!   |score| (rank 1 = largest).
//! - `--bedgraph`: per region (its coordinates in the regions table), the mean over the scored
//!   samples of α (pooling) or of the region's summed contribution (saliency / ig).
//! - `--npz`: `alpha` (S, N) or `contrib` (S, N, F) float32, `region_index` (S, N) int64 and
//!   `sample` (S) int64, for the scored samples in order.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use luminome_cli::progress_bar;
use luminome_engine::models::expression::explain::{contributions, pooling_weights};
use luminome_engine::models::expression::{ExpressionHead, ExpressionInput};
use luminome_engine::models::region::Subset;
use luminome_engine::parse_device;
use luminome_io::atomic::AtomicWriter;
use luminome_io::bedgraph::BedGraphWriter;
use luminome_io::npz::{NpyArraySpec, NpyElem, NpzWriter};
use luminome_io::region_dataset::{RegionCoords, SampleRow};

use crate::args::{ImportanceArgs, Method};
use crate::rows::{self, RowRun};

/// Per-region values summed over samples, for the bedGraph: (chrom, start, end) → (Σ, count).
type RegionTrack = BTreeMap<(String, u64, u64), (f64, u32)>;

pub fn run(args: &ImportanceArgs, started: Instant) -> Result<()> {
    let device = parse_device(&args.runtime.device)?;
    let input = ExpressionInput::open(&args.checkpoint, &args.dataset, device)?;
    let model = input.model()?;
    let pooling = check_method(args, model.config.head)?;
    let (records, empty) = scored_samples(args, &input)?;
    let (n, f) = (input.dataset.n_regions(), input.dataset.n_features());
    // Per sample: α (N) or contributions (N × F); then its region rows and used-region count.
    let width = if pooling { n } else { n * f };
    let pass = args.batch_size.max(1);
    let ig_steps = (args.method == Method::Ig).then_some(args.ig_steps);
    let explain = Explain {
        input: &input,
        pooling,
        ig_steps,
        pass,
    };
    let out = match rows::start(args, &records, pass, width, n + 1)? {
        RowRun::Explain {
            records: mine,
            part: Some(mut part),
        } => {
            explain.samples(mine, args.runtime.quiet, |r, values, region_index, used| {
                let mut ints = region_index.to_vec();
                ints.push(used as i64);
                part.push(r, values, &ints)
            })?;
            part.commit()?;
            return log_done(args, mine.len(), empty, started);
        }
        RowRun::Explain {
            records: mine,
            part: None,
        } => {
            let mut out = Outputs::open(args, &input, pooling, records.len())?;
            explain.samples(mine, args.runtime.quiet, |r, values, region_index, used| {
                out.sample(r, values, region_index, used)
            })?;
            out
        }
        RowRun::Gather => {
            let mut out = Outputs::open(args, &input, pooling, records.len())?;
            rows::replay(args, &records, pass, (width, n + 1), |r, values, ints| {
                let used = usize::try_from(ints[n]).ok().filter(|&u| u <= n);
                let used = used.context("a part's used-region count is beyond N")?;
                out.sample(r, values, &ints[..n], used)
            })?;
            out
        }
    };
    out.commit(args, records.len())?;
    log_done(args, records.len(), empty, started)
}

/// The model and what it computes per sample.
struct Explain<'a> {
    input: &'a ExpressionInput,
    pooling: bool,
    ig_steps: Option<usize>,
    pass: usize,
}

impl Explain<'_> {
    /// Explains `records` in passes, handing each sample's values (α or contributions), region
    /// rows and used-region count to `sample`.
    fn samples(
        &self,
        records: &[usize],
        quiet: bool,
        mut sample: impl FnMut(usize, &[f32], &[i64], usize) -> Result<()>,
    ) -> Result<()> {
        let model = self.input.model()?;
        let ds = &self.input.dataset;
        let n = ds.n_regions();
        let width = if self.pooling { n } else { n * ds.n_features() };
        let bar = progress_bar(records.len() as u64, quiet);
        for chunk in records.chunks(self.pass) {
            let t = self.input.tensors(chunk)?;
            let values = if self.pooling {
                pooling_weights(model, &t)?
            } else {
                contributions(model, &t, self.ig_steps)?
            };
            for (i, &r) in chunk.iter().enumerate() {
                let region_index = &t.host.region_index[i * n..(i + 1) * n];
                sample(
                    r,
                    &values[i * width..(i + 1) * width],
                    region_index,
                    t.n_used[i],
                )?;
            }
            bar.inc(chunk.len() as u64);
        }
        bar.finish_and_clear();
        Ok(())
    }
}

/// One job's outputs, written from each sample's values in sample order.
struct Outputs<'a> {
    input: &'a ExpressionInput,
    pooling: bool,
    top: usize,
    coords: Vec<RegionCoords>,
    names: Vec<String>,
    tsv: AtomicWriter,
    npz: Option<NpzWriter>,
    track: RegionTrack,
}

impl<'a> Outputs<'a> {
    fn open(
        args: &ImportanceArgs,
        input: &'a ExpressionInput,
        pooling: bool,
        samples: usize,
    ) -> Result<Self> {
        let ds = &input.dataset;
        let (n, f) = (ds.n_regions() as u64, ds.n_features() as u64);
        let npz = open_npz(args, pooling, samples as u64, n, f)?;
        let mut tsv = AtomicWriter::create(&args.output)?;
        if pooling {
            writeln!(
                tsv,
                "sample\tgene\tgene_id\tcell_type\tslot\tregion\tchrom\tstart\tend\talpha"
            )?;
        } else {
            writeln!(
                tsv,
                "sample\tgene\tgene_id\tcell_type\tfeature\tscore\trank"
            )?;
        }
        Ok(Self {
            input,
            pooling,
            top: args.top.unwrap_or(20),
            coords: ds.read_region_coords()?,
            names: ds.feature_names().to_vec(),
            tsv,
            npz,
            track: RegionTrack::new(),
        })
    }

    /// Sample (dataset row) `r`: its TSV rows, its regions' values on the track, its npz rows.
    fn sample(
        &mut self,
        r: usize,
        values: &[f32],
        region_index: &[i64],
        used: usize,
    ) -> Result<()> {
        let s = &self.input.samples[r];
        let f = self.names.len();
        let per_region: Vec<f64> = if self.pooling {
            let alpha: Vec<f64> = values[..used].iter().map(|&a| f64::from(a)).collect();
            write_pooling_rows(&mut self.tsv, r, s, &alpha, region_index, &self.coords)?;
            alpha
        } else {
            let per_slot = &values[..used * f];
            write_feature_rows(&mut self.tsv, r, s, per_slot, &self.names, self.top)?;
            per_slot
                .chunks(f)
                .map(|slot| slot.iter().map(|&v| f64::from(v)).sum())
                .collect()
        };
        for (slot, &v) in per_region.iter().enumerate() {
            if let Some(c) = region_coord(&self.coords, region_index[slot]) {
                let e = self
                    .track
                    .entry((c.chrom.clone(), c.start, c.end))
                    .or_insert((0.0, 0));
                e.0 += v;
                e.1 += 1;
            }
        }
        if let Some(z) = self.npz.as_mut() {
            z.push_f32(0, values)?;
            z.push_i64(1, region_index)?;
            z.push_i64(2, &[r as i64])?;
        }
        Ok(())
    }

    /// Writes the bedGraph and commits every output.
    fn commit(self, args: &ImportanceArgs, samples: usize) -> Result<()> {
        let bedgraph = write_bedgraph(args, self.pooling, samples, &self.track)?;
        self.tsv.commit()?;
        if let Some(b) = bedgraph {
            b.commit()?;
        }
        if let Some(z) = self.npz {
            z.commit()?;
        }
        Ok(())
    }
}

/// The run's closing line.
fn log_done(args: &ImportanceArgs, samples: usize, empty: usize, started: Instant) -> Result<()> {
    if !args.runtime.quiet {
        eprintln!(
            "luminome-importance: {samples} samples, method {} → {} ({:.1}s){}",
            args.method.name(),
            args.output.display(),
            started.elapsed().as_secs_f64(),
            if empty > 0 {
                format!("; {empty} samples without regions left out")
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// Refuses the flags and methods expression models do not take; whether the method is pooling.
fn check_method(args: &ImportanceArgs, head: ExpressionHead) -> Result<bool> {
    if args.only_label.is_some() || args.target.is_some() {
        bail!("--only-label and --target are for sequence classifiers; expression models explain their one output");
    }
    let pooling = match args.method {
        Method::Pooling => {
            if head == ExpressionHead::TssRegion {
                bail!(
                    "{}: --method pooling needs an attention-pooling model; this one reads the TSS region (--head tss-region). Use --method saliency or ig",
                    args.checkpoint.display()
                );
            }
            true
        }
        Method::Saliency | Method::Ig => false,
        Method::Gates | Method::Attention | Method::Ism | Method::DeepLiftShap => bail!(
            "{}: --method {} is not for expression models; they take pooling, saliency or ig",
            args.checkpoint.display(),
            args.method.name()
        ),
    };
    if args.top == Some(0) {
        bail!("--top must be at least 1");
    }
    if args.ranking.is_some() {
        bail!("--ranking is for tabular models");
    }
    Ok(pooling)
}

/// The samples to score (`--subset`, then `--records`), without those that have no region;
/// and how many were left out for that.
fn scored_samples(args: &ImportanceArgs, input: &ExpressionInput) -> Result<(Vec<usize>, usize)> {
    let mut records = input.subset(args.subset.unwrap_or(Subset::All))?;
    let empty = records
        .iter()
        .filter(|&&r| input.samples[r].regions_used == 0)
        .count();
    records.retain(|&r| input.samples[r].regions_used > 0);
    if let Some(n) = args.records {
        records.truncate(n);
    }
    if records.is_empty() {
        bail!(
            "{}: no samples with regions selected",
            args.dataset.display()
        );
    }
    Ok((records, empty))
}

/// The `--npz` writer for `s` samples of `n` regions (× `f` features for contributions).
fn open_npz(
    args: &ImportanceArgs,
    pooling: bool,
    s: u64,
    n: u64,
    f: u64,
) -> Result<Option<NpzWriter>> {
    let Some(path) = &args.npz else {
        return Ok(None);
    };
    let first = if pooling {
        NpyArraySpec::new("alpha", NpyElem::F32, &[s, n])
    } else {
        NpyArraySpec::new("contrib", NpyElem::F32, &[s, n, f])
    };
    Ok(Some(NpzWriter::create(
        path,
        &[
            first,
            NpyArraySpec::new("region_index", NpyElem::I64, &[s, n]),
            NpyArraySpec::new("sample", NpyElem::I64, &[s]),
        ],
    )?))
}

/// A region's coordinates from the regions table (`None` for padding's -1).
fn region_coord(coords: &[RegionCoords], region: i64) -> Option<&RegionCoords> {
    coords.get(usize::try_from(region).ok()?)
}

/// `--method pooling`: one row per used region of sample `r`, its weight α.
fn write_pooling_rows(
    tsv: &mut AtomicWriter,
    r: usize,
    s: &SampleRow,
    alpha: &[f64],
    region_index: &[i64],
    coords: &[RegionCoords],
) -> Result<()> {
    for (slot, &a) in alpha.iter().enumerate() {
        let (chrom, start, end) = match region_coord(coords, region_index[slot]) {
            Some(c) => (c.chrom.as_str(), c.start.to_string(), c.end.to_string()),
            None => (".", ".".into(), ".".into()),
        };
        writeln!(
            tsv,
            "{r}\t{}\t{}\t{}\t{slot}\t{}\t{chrom}\t{start}\t{end}\t{a:.6}",
            s.gene, s.gene_id, s.cell_type, region_index[slot]
        )?;
    }
    Ok(())
}

/// Saliency / IG: sample `r`'s contributions (used regions × features) summed per feature,
/// the `top` by |score| (ties: feature order), rank 1 the largest.
fn write_feature_rows(
    tsv: &mut AtomicWriter,
    r: usize,
    s: &SampleRow,
    per_slot: &[f32],
    names: &[String],
    top: usize,
) -> Result<()> {
    let f = names.len();
    let mut per_feature = vec![0f64; f];
    for slot in per_slot.chunks(f) {
        for (k, &v) in slot.iter().enumerate() {
            per_feature[k] += f64::from(v);
        }
    }
    let mut order: Vec<usize> = (0..f).collect();
    order.sort_by(|&a, &b| {
        per_feature[b]
            .abs()
            .total_cmp(&per_feature[a].abs())
            .then(a.cmp(&b))
    });
    for (rank, &k) in order.iter().take(top).enumerate() {
        writeln!(
            tsv,
            "{r}\t{}\t{}\t{}\t{}\t{:.6e}\t{}",
            s.gene,
            s.gene_id,
            s.cell_type,
            names[k],
            per_feature[k],
            rank + 1
        )?;
    }
    Ok(())
}

/// `--bedgraph`: each region's mean over the scored samples, uncommitted.
fn write_bedgraph(
    args: &ImportanceArgs,
    pooling: bool,
    samples: usize,
    track: &RegionTrack,
) -> Result<Option<BedGraphWriter>> {
    let Some(path) = &args.bedgraph else {
        return Ok(None);
    };
    let what = if pooling {
        "pooling weight"
    } else {
        "summed contribution"
    };
    let sizes = args
        .chrom_sizes
        .as_deref()
        .map(luminome_io::bigwig::ChromSizes::read)
        .transpose()?;
    let mut w = BedGraphWriter::create_track(
        path,
        Some(&format!(
            "track type=bedGraph name=\"luminome-importance {}\" description=\"mean {what} per region over {samples} samples\"",
            args.method.name(),
        )),
        sizes,
    )?;
    for ((chrom, start, end), (sum, count)) in track {
        w.push(chrom, *start, *end, (sum / f64::from(*count)) as f32)?;
    }
    Ok(Some(w))
}
