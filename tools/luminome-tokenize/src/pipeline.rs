//! The tokenize run: a reading thread turns the input into units (see [`crate::source`]) while
//! this thread tokenizes them (on a pool: `parallel_tokenizing`) and writes the dataset in input
//! order. Reading and decompression overlap tokenizing and writing.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use luminome_io::token_dataset::{IndexRow, Interval, TokenRow, UNKNOWN_LENGTH};
use rayon::prelude::*;

use crate::bases::{self, ChangeCounts};
use crate::inputs::{input_formats, read_input};
use crate::outputs::Outputs;
use crate::scheme::Scheme;
use crate::source::{Cut, Message, SourceOptions, Unit};
use crate::split::SplitPlan;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// From the file name: .csv/.tsv/.txt → table, .bed/.narrowPeak/.broadPeak → bed, else FASTA/FASTQ.
    Auto,
    /// FASTA or FASTQ (detected from the first record).
    Fastx,
    /// CSV/TSV with a header.
    Table,
    /// BED/narrowPeak intervals with --reference.
    Bed,
    /// CSV/TSV of (query, passage) pairs → a retrieval pairs dataset for dual encoders.
    Pairs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Overflow {
    /// Refuse a record longer than the maximum.
    Error,
    /// Keep the start of a long record.
    Truncate,
    /// Cut long records into windows (--window bases, every --stride bases).
    Window,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RcMode {
    /// Sequences as given.
    None,
    /// Each sequence, then its reverse complement.
    Both,
    /// Only the reverse complement.
    Only,
}

impl RcMode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            RcMode::None => "none",
            RcMode::Both => "both",
            RcMode::Only => "only",
        }
    }
}

/// One input file and the label its FASTA/FASTQ/BED records get (tables carry their own).
#[derive(Debug, Clone)]
pub struct JobInput {
    pub path: PathBuf,
    pub label: Option<i64>,
}

/// Everything a tokenize run needs, independent of the command line.
pub struct TokenizeJob {
    /// Read in order into one dataset (or, with [`TokenizeJob::split`], shared out).
    pub inputs: Vec<JobInput>,
    pub format: InputFormat,
    pub output: PathBuf,
    pub scheme: Scheme,
    pub hf_json: Option<String>,
    pub add_cls: bool,
    pub add_sep: bool,
    pub max_length: Option<usize>,
    pub overflow: Overflow,
    pub window: Option<usize>,
    pub stride: Option<usize>,
    pub rc: RcMode,
    pub soft_mask: bool,
    /// Rows whose fraction of N bases exceeds this are dropped (counted in [`Summary::n_skipped`]).
    pub max_n: Option<f64>,
    pub source: SourceOptions,
    pub shard_records: Option<u64>,
    /// `--split`: whole records shared out into train/dev[/test] datasets beside `output`.
    pub split: Option<SplitPlan>,
    pub threads: usize,
    pub command_line: String,
    pub quiet: bool,
    /// `--shard I/N`: write this part of the units only.
    pub part: Option<crate::shard::PartOf>,
}

/// What a run did, for the summary line and tests.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub input_records: u64,
    pub rows: u64,
    pub row_length: Option<usize>,
    pub bases: u64,
    pub changed: ChangeCounts,
    pub truncated: u64,
    /// Units (records or windows) dropped by --max-n.
    pub n_skipped: u64,
    /// With `--split`: rows written to each split, in [`SplitPlan::names`] order.
    pub split_rows: Vec<(String, u64)>,
}

/// True when `--max-n` drops this unit: more than the allowed fraction of its bases are N.
fn too_many_n(job: &TokenizeJob, unit: &Unit) -> bool {
    job.max_n.is_some_and(|f| {
        let n = unit.bases.iter().filter(|&&b| b == b'N').count();
        n as f64 > f * unit.bases.len() as f64
    })
}

struct Framing {
    cut: Cut,
    /// Fixed row length in tokens, or `None` to pad to the longest row.
    row_length: Option<usize>,
}

fn framing(job: &TokenizeJob) -> Result<Framing> {
    let specials = usize::from(job.add_cls) + usize::from(job.add_sep);
    // A window is one dataset row: past 16 Mb a row no model here can take would be allocated.
    if let Some(w) = job.window {
        if w == 0 || w > 1 << 24 {
            bail!("--window must be between 1 and 16777216 bases, got {w}");
        }
    }
    let content_tokens = match job.max_length {
        Some(l) if l <= specials => bail!("--max-length {l} leaves no room for sequence tokens"),
        Some(l) => Some(l - specials),
        None => None,
    };
    let base_cap = job
        .window
        .or_else(|| content_tokens.and_then(|t| job.scheme.bases_for_tokens(t)));
    let cut = match (job.overflow, base_cap) {
        (Overflow::Window, None) => {
            bail!("--overflow window needs --window BASES (or --max-length with a nucleotide or k-mer scheme)")
        }
        (Overflow::Window, Some(size)) => {
            let stride = job.stride.unwrap_or(size);
            if stride == 0 || stride > 1 << 30 {
                bail!("--stride must be between 1 and 1073741824 bases, got {stride}");
            }
            Cut::Windows { size, stride }
        }
        (Overflow::Truncate, Some(n)) => Cut::Truncate(n),
        (Overflow::Error, Some(n)) => Cut::Limit(n),
        (_, None) => Cut::Whole,
    };
    if let Some(w) = job.window {
        if let (Some(t), Some(need)) = (content_tokens, job.scheme.tokens_for_bases(w)) {
            if need > t {
                bail!("--window {w} bases make {need} tokens, more than --max-length allows ({t} after specials)");
            }
        }
    }
    let row_length = job.max_length.or_else(|| match cut {
        Cut::Windows { size, .. } => job.scheme.tokens_for_bases(size).map(|t| t + specials),
        _ => None,
    });
    Ok(Framing { cut, row_length })
}

/// One row ready to write.
struct Row {
    ids: Vec<u32>,
    soft: Vec<u8>,
    truncated: bool,
    unit_index: usize,
    strand: char,
}

pub(crate) fn encode_row(
    job: &TokenizeJob,
    bases: &[u8],
    soft: &[u8],
    row_length: Option<usize>,
    origin: &str,
) -> Result<(Vec<u32>, Vec<u8>, bool)> {
    let mut ids = Vec::with_capacity(bases.len() + 2);
    let mut sm = Vec::with_capacity(if job.soft_mask { bases.len() + 2 } else { 0 });
    if job.add_cls {
        ids.push(
            job.scheme
                .cls_id()
                .context("the tokenizer has no [CLS] token; use --no-cls")?,
        );
        if job.soft_mask {
            sm.push(0);
        }
    }
    job.scheme
        .encode(bases, job.soft_mask.then_some(soft), &mut ids, &mut sm)?;
    let sep = if job.add_sep {
        Some(
            job.scheme
                .sep_id()
                .context("the tokenizer has no [SEP] token; use --no-sep")?,
        )
    } else {
        None
    };
    let mut truncated = false;
    if let Some(l) = job.max_length {
        let room = l - usize::from(sep.is_some());
        if ids.len() > room {
            match job.overflow {
                Overflow::Truncate => {
                    ids.truncate(room);
                    if job.soft_mask {
                        sm.truncate(room);
                    }
                    truncated = true;
                }
                _ => bail!(
                    "{origin}: {} tokens do not fit in --max-length {l} (use --overflow truncate, or a smaller --window)",
                    ids.len() + usize::from(sep.is_some())
                ),
            }
        }
    }
    if let Some(sep) = sep {
        ids.push(sep);
        if job.soft_mask {
            sm.push(0);
        }
    }
    if let Some(l) = row_length {
        ids.resize(l, job.scheme.pad_id());
        if job.soft_mask {
            sm.resize(l, 0);
        }
    }
    Ok((ids, sm, truncated))
}

fn tokenize_unit(
    job: &TokenizeJob,
    unit: &Unit,
    unit_index: usize,
    row_length: Option<usize>,
) -> Result<Vec<Row>> {
    let mut rows = Vec::with_capacity(2);
    // Bases cut before tokenizing (--overflow truncate with --max-length or --window keeps a
    // record's first bases): counted as truncated, as rows whose tokens were cut are.
    let bases_cut = job.overflow == Overflow::Truncate
        && unit.window_offset == 0
        && unit.seq_length != UNKNOWN_LENGTH
        && (unit.bases.len() as u64) < unit.seq_length;
    if job.rc != RcMode::Only {
        let (ids, soft, truncated) =
            encode_row(job, &unit.bases, &unit.soft, row_length, &unit.origin)?;
        let truncated = truncated || bases_cut;
        rows.push(Row {
            ids,
            soft,
            truncated,
            unit_index,
            strand: unit.strand,
        });
    }
    if job.rc != RcMode::None {
        let (mut rb, mut rs) = (Vec::new(), Vec::new());
        bases::reverse_complement(&unit.bases, &unit.soft, &mut rb, &mut rs);
        let (ids, soft, truncated) = encode_row(job, &rb, &rs, row_length, &unit.origin)?;
        let truncated = truncated || bases_cut;
        let strand = if unit.strand == '-' { '+' } else { '-' };
        rows.push(Row {
            ids,
            soft,
            truncated,
            unit_index,
            strand,
        });
    }
    Ok(rows)
}

fn progress_bar(quiet: bool) -> indicatif::ProgressBar {
    if quiet {
        return indicatif::ProgressBar::hidden();
    }
    let bar =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {elapsed} {human_pos} rows {msg}")
            .expect("valid template"),
    );
    bar
}

/// Runs a tokenize job to completion; on error nothing is left at the output paths.
pub fn run(job: &TokenizeJob) -> Result<Summary> {
    let start = Instant::now();
    let framing = framing(job)?;
    let formats = input_formats(job)?;
    let mut outputs = Outputs::open(job, &formats, framing.row_length)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(job.threads.max(1))
        .build()
        .context("cannot start the worker threads")?;
    let progress = progress_bar(job.quiet);
    let mut summary = Summary {
        row_length: framing.row_length,
        ..Default::default()
    };
    let source_opts = SourceOptions {
        cut: framing.cut,
        ..job.source.clone()
    };

    let (tx, rx) = mpsc::sync_channel::<Message>(4);
    let reader_result = std::thread::scope(|scope| -> Result<Result<(u64, ChangeCounts, u64)>> {
        let formats = &formats;
        let reader = std::thread::Builder::new()
            .name("lum-reader".into())
            .spawn_scoped(scope, move || -> Result<(u64, ChangeCounts, u64)> {
                let mut changes = ChangeCounts::default();
                let (mut records, mut serial) = (0u64, 0u64);
                for (input, &format) in job.inputs.iter().zip(formats) {
                    // Records are numbered across inputs, as --split's first pass numbered them.
                    let first = records;
                    let mut sink = |m: Message| {
                        let m = match m {
                            Message::Units(mut units) => {
                                for u in &mut units {
                                    u.record += first;
                                    u.serial = serial;
                                    serial += 1;
                                }
                                // --shard: only this part's units go on to be tokenized.
                                if let Some(part) = &job.part {
                                    units.retain(|u| crate::shard::owns(part.spec, u.serial));
                                    if units.is_empty() {
                                        return Ok(());
                                    }
                                }
                                Message::Units(units)
                            }
                            end => end,
                        };
                        tx.send(m).map_err(|_| anyhow::anyhow!("stopped"))
                    };
                    let opts = SourceOptions {
                        constant_label: input.label,
                        ..source_opts.clone()
                    };
                    records += read_input(&input.path, format, &opts, &mut changes, &mut sink)?;
                }
                Ok((records, changes, serial))
            })
            .context("cannot start the reading thread")?;
        let consumed = (|| -> Result<()> {
            for message in rx.iter() {
                match message {
                    Message::Units(units) => {
                        write_units(
                            job,
                            &pool,
                            units,
                            framing.row_length,
                            &mut outputs,
                            &mut summary,
                        )?;
                        progress.set_position(outputs.rows());
                    }
                    // Rows of a streamed record all went to one dataset; the others hold
                    // none pending, for which ending a record does nothing.
                    Message::EndRecord(len) => outputs.end_record(len)?,
                }
            }
            Ok(())
        })();
        // If tokenizing failed, dropping the receiver stops the reader at its next send.
        drop(rx);
        let read = reader
            .join()
            .map_err(|_| anyhow::anyhow!("the reading thread panicked"))?;
        consumed?;
        Ok(read)
    })?;
    let (records, changes, units) = reader_result?;
    progress.finish_and_clear();
    summary.input_records = records;
    summary.rows = outputs.rows();
    summary.changed = changes;
    let paths = outputs.paths.clone();
    summary.split_rows = outputs.finish(records, units)?;
    if !job.quiet {
        let line = match &job.part {
            Some(part) => crate::shard::part_line(part.spec, summary.rows, units, &job.output),
            None => summary_line(job, &summary, &paths, start),
        };
        eprintln!("{line}");
    }
    Ok(summary)
}

/// `--gather`: the parts' rows, merged by unit number, written as [`run`] writes one job's.
pub fn gather(
    job: &TokenizeJob,
    parts: &[PathBuf],
    identity: &std::collections::BTreeMap<String, String>,
) -> Result<Summary> {
    let start = Instant::now();
    let framing = framing(job)?;
    let formats = input_formats(job)?;
    let has_labels = crate::inputs::inputs_have_labels(job, &formats)?;
    let mut outputs = Outputs::open(job, &formats, framing.row_length)?;
    let records = crate::shard::gather(parts, identity, job.soft_mask, has_labels, &mut outputs)?;
    let summary = Summary {
        input_records: records,
        rows: outputs.rows(),
        row_length: framing.row_length,
        ..Default::default()
    };
    let paths = outputs.paths.clone();
    outputs.finish(records, 0)?;
    if !job.quiet {
        let line = summary_line(job, &summary, &paths, start);
        eprintln!("{line} (gathered from {} parts)", parts.len());
    }
    Ok(summary)
}

/// Whether a batch is tokenized on the pool. A table-driven scheme costs about what reading
/// costs, so at `--threads 2` the reading thread and this one already fill two cores (a pool
/// measured 1.10x the CPU and no faster on E. coli + chr22 6-mers); a HuggingFace tokenizer
/// costs ~20x more per base than reading, so the pool's two workers take 0.62x the wall time of
/// one (docs/tokenize.md).
fn parallel_tokenizing(job: &TokenizeJob) -> bool {
    job.threads > 2 || (job.threads == 2 && !job.scheme.is_table_driven())
}

/// Tokenizes a batch of units (on the pool: [`parallel_tokenizing`]) and writes their rows in
/// order.
fn write_units(
    job: &TokenizeJob,
    pool: &rayon::ThreadPool,
    mut units: Vec<Unit>,
    row_length: Option<usize>,
    outputs: &mut Outputs,
    summary: &mut Summary,
) -> Result<()> {
    // --max-n: drop gap windows once, here, before any tokenizing.
    let before = units.len();
    units.retain(|u| !too_many_n(job, u));
    summary.n_skipped += (before - units.len()) as u64;
    let rows: Vec<Row> = if parallel_tokenizing(job) {
        pool.install(|| {
            units
                .par_iter()
                .enumerate()
                .map(|(i, u)| tokenize_unit(job, u, i, row_length))
                .collect::<Result<Vec<_>>>()
        })?
        .into_iter()
        .flatten()
        .collect()
    } else {
        let mut rows = Vec::with_capacity(units.len());
        for (i, u) in units.iter().enumerate() {
            rows.extend(tokenize_unit(job, u, i, row_length)?);
        }
        rows
    };
    for row in rows {
        let u = &units[row.unit_index];
        summary.bases += u.bases.len() as u64;
        summary.truncated += u64::from(row.truncated);
        outputs.push(
            u,
            TokenRow {
                ids: &row.ids,
                soft_mask: job.soft_mask.then_some(row.soft.as_slice()),
                label: u.label,
                index: IndexRow {
                    record: 0,
                    shard: 0,
                    name: u.name.to_string(),
                    // A streamed row's interval is its window in the record, which the writer
                    // makes once the record ends; a string per window here would be dropped.
                    interval: u
                        .coords
                        .as_ref()
                        .filter(|_| u.seq_length != UNKNOWN_LENGTH)
                        .map(|(c, s, e)| Interval {
                            chrom: c.to_string(),
                            start: *s,
                            end: *e,
                        }),
                    seq_length: u.seq_length,
                    window_offset: u.window_offset,
                    window_length: u.bases.len() as u64,
                    strand: row.strand,
                },
            },
        )?;
    }
    Ok(())
}

/// The run's one summary line on stderr.
fn summary_line(job: &TokenizeJob, summary: &Summary, paths: &[PathBuf], start: Instant) -> String {
    let tokens = summary
        .row_length
        .map(|l| format!(" of {l} tokens"))
        .unwrap_or_default();
    let mut line = match &job.split {
        None => format!(
            "luminome-tokenize: {} records → {} rows{tokens} → {}",
            summary.input_records,
            summary.rows,
            job.output.display()
        ),
        Some(plan) => {
            let counts: Vec<String> = summary
                .split_rows
                .iter()
                .map(|(_, n)| n.to_string())
                .collect();
            let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            format!(
                "luminome-tokenize: {} records → {} rows{tokens} ({}, whole records stratified by label, --seed {}) → {}",
                summary.input_records,
                counts.join(" / "),
                plan.names().join(" / "),
                plan.seed,
                shown.join(", ")
            )
        }
    };
    line += &format!(" ({:.1}s)", start.elapsed().as_secs_f64());
    if summary.changed.total() > 0 {
        line += &format!("; changed to N: {}", summary.changed.summary());
    }
    if summary.truncated > 0 {
        line += &format!(
            "; {} rows truncated to their first bases (--overflow window tokenizes all of \
             a long record, --overflow error refuses it)",
            summary.truncated
        );
    }
    if summary.n_skipped > 0 {
        line += &format!(
            "; {} windows/records skipped with more than {} N (--max-n)",
            summary.n_skipped,
            job.max_n.unwrap_or(0.0)
        );
    }
    line
}
