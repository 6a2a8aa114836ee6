//! Turning inputs into *units*: cleaned base strings (a whole record, or one window of it) with
//! their label and where they came from. Tokenizing units is [`crate::pipeline`]'s job.
//!
//! Windows are cut in forward genomic orientation; a unit on the minus strand (a BED interval
//! with strand `-`) is reverse-complemented after cutting.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use luminome_io::bed::{self, Strand};
use luminome_io::reference::Reference;
use luminome_io::seqtable::{SeqTableOptions, SeqTableReader};
use luminome_io::token_dataset::UNKNOWN_LENGTH;
use luminome_io::InputError;

use crate::bases::{self, ChangeCounts, NonAcgtPolicy};

/// One row-to-be.
#[derive(Debug, Clone)]
pub struct Unit {
    /// Cleaned bases (ACGTN) in the row's orientation.
    pub bases: Vec<u8>,
    pub soft: Vec<u8>,
    pub label: Option<i64>,
    pub name: Arc<str>,
    /// Genomic interval of the bases (forward coordinates) when the input had coordinates.
    pub coords: Option<(Arc<str>, u64, u64)>,
    /// `+`: bases as on the forward strand of `coords`; `-`: their reverse complement.
    pub strand: char,
    /// Length of the source sequence; [`UNKNOWN_LENGTH`] while a record is still streaming.
    pub seq_length: u64,
    pub window_offset: u64,
    /// Where the unit came from, for error messages: file and location text.
    pub origin: Arc<str>,
    /// The record's number, from 0 in its input (the run numbers on across inputs).
    pub record: u64,
    /// The unit's number across the run (set as units leave the reader; `--shard` shares
    /// units out by it).
    pub serial: u64,
}

/// How records are cut to length, in bases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Whole records.
    Whole,
    /// The first `n` bases of each record.
    Truncate(usize),
    /// Refuse records longer than `n` bases.
    Limit(usize),
    /// Windows of `size` bases every `stride` bases; the last window may be shorter.
    Windows { size: usize, stride: usize },
}

/// Messages from the reading thread to the tokenizing one.
pub enum Message {
    Units(Vec<Unit>),
    /// The record whose units were just sent has ended with this many bases.
    EndRecord(u64),
}

#[derive(Clone)]
pub struct SourceOptions {
    pub cut: Cut,
    pub policy: NonAcgtPolicy,
    pub threads: usize,
    /// A label given to every record of a FASTA/FASTQ/BED input.
    pub constant_label: Option<i64>,
    pub table: SeqTableOptions,
    pub reference: Option<PathBuf>,
    /// Bases added on each side of BED intervals.
    pub flank: u64,
    /// Resize BED intervals to this width around their centre (narrowPeak: the summit).
    pub width: Option<u64>,
    /// Units carry their bases' soft-mask flags (`--soft-mask`). Without it a FASTA/FASTQ
    /// unit carries none: a chromosome's windows would copy a flag per base for nothing.
    pub soft_mask: bool,
}

pub type Sink<'a> = dyn FnMut(Message) -> Result<()> + 'a;

const BATCH: usize = 1024;

/// Units on their way to the sink, sent [`BATCH`] at a time: the batching of every reader.
struct Batcher<'s, 'a> {
    units: Vec<Unit>,
    sink: &'s mut Sink<'a>,
}

impl<'s, 'a> Batcher<'s, 'a> {
    fn new(sink: &'s mut Sink<'a>) -> Self {
        Self {
            units: Vec::with_capacity(BATCH),
            sink,
        }
    }

    /// Sends the units held once there is a batch of them.
    fn send_if_full(&mut self) -> Result<()> {
        if self.units.len() >= BATCH {
            (self.sink)(Message::Units(std::mem::take(&mut self.units)))?;
        }
        Ok(())
    }

    fn push(&mut self, unit: Unit) -> Result<()> {
        self.units.push(unit);
        self.send_if_full()
    }

    /// Sends every unit held.
    fn flush(&mut self) -> Result<()> {
        if !self.units.is_empty() {
            (self.sink)(Message::Units(std::mem::take(&mut self.units)))?;
        }
        Ok(())
    }

    /// Sends every unit held, then the end of the record they came from (its length in bases).
    fn end_record(&mut self, length: u64) -> Result<()> {
        self.flush()?;
        (self.sink)(Message::EndRecord(length))
    }
}

/// Cuts one in-memory sequence (already cleaned) into units.
#[allow(clippy::too_many_arguments)]
fn cut_in_memory(
    bases: &[u8],
    soft: &[u8],
    cut: Cut,
    origin: &Arc<str>,
    make: &dyn Fn(u64, Vec<u8>, Vec<u8>) -> Unit,
    out: &mut Vec<Unit>,
) -> Result<()> {
    match cut {
        Cut::Whole => out.push(make(0, bases.to_vec(), soft.to_vec())),
        Cut::Truncate(n) => {
            let n = n.min(bases.len());
            out.push(make(0, bases[..n].to_vec(), soft[..n].to_vec()));
        }
        Cut::Limit(n) => {
            if bases.len() > n {
                anyhow::bail!(
                    "{origin}: sequence of {} bases is longer than the maximum of {n} (use --overflow truncate or --overflow window)",
                    bases.len()
                );
            }
            out.push(make(0, bases.to_vec(), soft.to_vec()));
        }
        Cut::Windows { size, stride } => {
            let mut start = 0usize;
            loop {
                let end = (start + size).min(bases.len());
                out.push(make(
                    start as u64,
                    bases[start..end].to_vec(),
                    soft[start..end].to_vec(),
                ));
                if end >= bases.len() {
                    break;
                }
                start += stride;
            }
        }
    }
    Ok(())
}

fn clean_or_fail(
    raw: &[u8],
    policy: NonAcgtPolicy,
    bases_out: &mut Vec<u8>,
    soft_out: &mut Vec<u8>,
    changes: &mut ChangeCounts,
    offset: u64,
    err: &dyn Fn(String) -> InputError,
) -> Result<(), InputError> {
    bases::clean(raw, policy, bases_out, soft_out, changes).map_err(|mut bad| {
        bad.position += offset as usize;
        err(bad.describe())
    })
}

/// Drops the buffered bases before record offset `keep_from` (`b`/`s` start at `buf_start`) —
/// but only once they are at least half the buffer (or 64 kb): dropping per window moved the
/// rest of the buffer every time, quadratic on a chromosome written as one line.
fn compact(b: &mut Vec<u8>, s: &mut Vec<u8>, buf_start: &mut u64, keep_from: u64) {
    if keep_from <= *buf_start {
        return;
    }
    let drop = ((keep_from - *buf_start) as usize).min(b.len());
    if drop >= (b.len() / 2).max(1 << 16) || drop == b.len() {
        b.drain(..drop);
        s.drain(..drop);
        *buf_start += drop as u64;
    }
}

/// Reads a CSV/TSV sequence table.
pub fn read_table(
    path: &Path,
    opts: &SourceOptions,
    changes: &mut ChangeCounts,
    sink: &mut Sink<'_>,
) -> Result<u64> {
    let mut reader = SeqTableReader::open(path, &opts.table)?;
    let mut batch = Batcher::new(sink);
    let (mut b, mut s) = (Vec::new(), Vec::new());
    let mut n = 0u64;
    while let Some(row) = reader.read_row()? {
        n += 1;
        b.clear();
        s.clear();
        let line = row.line;
        clean_or_fail(
            &row.sequence,
            opts.policy,
            &mut b,
            &mut s,
            changes,
            0,
            &|m| InputError::line(path, line, m),
        )?;
        let origin: Arc<str> = format!("{}: line {line}", path.display()).into();
        let name: Arc<str> = row.name.into();
        let seq_length = b.len() as u64;
        let label = row.label;
        let make = |offset: u64, bases: Vec<u8>, soft: Vec<u8>| Unit {
            bases,
            soft,
            label,
            name: name.clone(),
            coords: None,
            strand: '+',
            seq_length,
            window_offset: offset,
            origin: origin.clone(),
            record: n - 1,
            serial: 0,
        };
        cut_in_memory(&b, &s, opts.cut, &origin, &make, &mut batch.units)?;
        batch.send_if_full()?;
    }
    batch.flush()?;
    if n == 0 {
        return Err(InputError::file(path, "the table has a header but no data rows").into());
    }
    Ok(n)
}

/// Reads BED/narrowPeak intervals and fetches their sequence from the reference.
pub fn read_bed(
    path: &Path,
    opts: &SourceOptions,
    changes: &mut ChangeCounts,
    sink: &mut Sink<'_>,
) -> Result<u64> {
    let ref_path = opts
        .reference
        .as_deref()
        .ok_or_else(|| anyhow::anyhow!("BED input {} needs --reference FASTA", path.display()))?;
    let mut reference = Reference::open(ref_path)?;
    let mut reader = bed::open(path)?;
    let mut batch = Batcher::new(sink);
    let (mut b, mut s) = (Vec::new(), Vec::new());
    let mut n = 0u64;
    while let Some(rec) = reader.read_record()? {
        n += 1;
        let line = rec.line;
        let err = |m: String| InputError::line(path, line, m);
        let Some(chrom_len) = reference.length(&rec.chrom) else {
            let known: Vec<&str> = reference
                .sequences()
                .iter()
                .take(5)
                .map(|(n, _)| n.as_str())
                .collect();
            return Err(err(format!(
                "chromosome {:?} is not in the reference {} (it has: {}{})",
                rec.chrom,
                ref_path.display(),
                known.join(", "),
                if reference.sequences().len() > 5 {
                    ", ..."
                } else {
                    ""
                }
            ))
            .into());
        };
        // Coordinates are below 2^40 (the BED reader's bound), so sums do not overflow; widths
        // and flanks are added saturating and then checked against the chromosome.
        let (mut start, mut end) = (rec.start, rec.end);
        if let Some(w) = opts.width {
            let centre = rec
                .summit()
                .map(|p| rec.start + p)
                .unwrap_or(rec.start + (rec.end - rec.start) / 2);
            start = centre.saturating_sub(w / 2);
            end = start.saturating_add(w);
        }
        let start = start.checked_sub(opts.flank).ok_or_else(|| {
            err(format!(
                "interval {}:{start}-{end} extended by --flank {} starts before 0",
                rec.chrom, opts.flank
            ))
        })?;
        let end = end.saturating_add(opts.flank);
        if end > chrom_len {
            return Err(err(format!(
                "interval {}:{start}-{end} runs past the end of {} (length {chrom_len})",
                rec.chrom, rec.chrom
            ))
            .into());
        }
        let raw = reference.fetch(&rec.chrom, start, end)?;
        b.clear();
        s.clear();
        clean_or_fail(&raw, opts.policy, &mut b, &mut s, changes, 0, &err)?;
        let origin: Arc<str> = format!("{}: line {line}", path.display()).into();
        let chrom: Arc<str> = rec.chrom.as_str().into();
        let name: Arc<str> = rec
            .name
            .clone()
            .unwrap_or_else(|| format!("{}:{start}-{end}", rec.chrom))
            .into();
        let minus = rec.strand == Strand::Reverse;
        let seq_length = end - start;
        let label = opts.constant_label;
        let make = |offset: u64, bases: Vec<u8>, soft: Vec<u8>| {
            let len = bases.len() as u64;
            let (bases, soft, strand) = if minus {
                let (mut rb, mut rs) = (Vec::new(), Vec::new());
                bases::reverse_complement(&bases, &soft, &mut rb, &mut rs);
                (rb, rs, '-')
            } else {
                (bases, soft, '+')
            };
            Unit {
                bases,
                soft,
                label,
                name: name.clone(),
                coords: Some((chrom.clone(), start + offset, start + offset + len)),
                strand,
                seq_length,
                window_offset: offset,
                origin: origin.clone(),
                record: n - 1,
                serial: 0,
            }
        };
        cut_in_memory(&b, &s, opts.cut, &origin, &make, &mut batch.units)?;
        batch.send_if_full()?;
    }
    batch.flush()?;
    if n == 0 {
        return Err(InputError::file(path, "no intervals in the BED file").into());
    }
    Ok(n)
}

/// Reads FASTA/FASTQ records, streaming each record through in windows when cutting by
/// windows, so a chromosome never sits in memory whole.
pub fn read_fastx(
    path: &Path,
    opts: &SourceOptions,
    changes: &mut ChangeCounts,
    sink: &mut Sink<'_>,
) -> Result<u64> {
    let mut reader = luminome_io::fastx::open(path, opts.threads)?;
    let mut batch = Batcher::new(sink);
    let mut bufs = Buffers::default();
    let mut n = 0u64;
    while let Some(h) = reader.next_header()? {
        n += 1;
        let name: Arc<str> = h.name.as_str().into();
        let origin: Arc<str> =
            format!("{}: record {} ({})", path.display(), h.number, h.name).into();
        let number = h.number;
        let err = |m: String| InputError::record(path, number, Some(&h.name), m);
        let unit = |offset: u64, bases: &[u8], soft: &[u8], seq_length: u64| Unit {
            coords: Some((name.clone(), offset, offset + bases.len() as u64)),
            bases: bases.to_vec(),
            soft: if opts.soft_mask {
                soft.to_vec()
            } else {
                Vec::new()
            },
            label: opts.constant_label,
            name: name.clone(),
            strand: '+',
            seq_length,
            window_offset: offset,
            origin: origin.clone(),
            record: n - 1,
            serial: 0,
        };
        let mut record = Record {
            reader: &mut reader,
            bufs: &mut bufs,
            policy: opts.policy,
            changes: &mut *changes,
            err: &err,
        };
        match opts.cut {
            Cut::Windows { size, stride } => {
                let read = record.stream_windows(size, stride, &unit, &mut batch)?;
                batch.end_record(read)?;
            }
            Cut::Truncate(limit) => {
                let read = record.read_truncated(limit)?;
                batch.push(unit(0, &bufs.bases, &bufs.soft, read))?;
            }
            Cut::Whole | Cut::Limit(_) => {
                let limit = match opts.cut {
                    Cut::Limit(limit) => Some(limit),
                    _ => None,
                };
                record.read_whole(limit)?;
                let len = bufs.bases.len() as u64;
                batch.push(unit(0, &bufs.bases, &bufs.soft, len))?;
            }
        }
    }
    batch.flush()?;
    if n == 0 {
        return Err(InputError::file(path, "no FASTA/FASTQ records (the file is empty)").into());
    }
    Ok(n)
}

/// Makes a record's unit from its offset, bases, soft-mask flags and the record's length.
type MakeUnit<'a> = dyn Fn(u64, &[u8], &[u8], u64) -> Unit + 'a;

/// The buffers a FASTA/FASTQ record is read into, kept across records: the raw line, and the
/// cleaned bases and soft mask.
#[derive(Default)]
struct Buffers {
    raw: Vec<u8>,
    bases: Vec<u8>,
    soft: Vec<u8>,
}

/// The record under a FASTA/FASTQ reader's header, read one of three ways.
struct Record<'r, 'e> {
    reader: &'r mut luminome_io::fastx::FastxReader<Box<dyn std::io::BufRead + Send>>,
    bufs: &'r mut Buffers,
    policy: NonAcgtPolicy,
    changes: &'r mut ChangeCounts,
    err: &'e dyn Fn(String) -> InputError,
}

impl Record<'_, '_> {
    /// Windows of `size` bases every `stride` bases, each made a unit as soon as its bases are
    /// read (`bufs` hold the cleaned bases from record offset `buf_start` on); the record's
    /// length.
    fn stream_windows(
        &mut self,
        size: usize,
        stride: usize,
        unit: &MakeUnit,
        batch: &mut Batcher,
    ) -> Result<u64> {
        let Buffers {
            raw,
            bases: b,
            soft: s,
        } = &mut *self.bufs;
        b.clear();
        s.clear();
        let mut buf_start = 0u64;
        let mut next = 0u64;
        let mut read = 0u64;
        let mut finished = false;
        loop {
            while !finished && buf_start + (b.len() as u64) < next + size as u64 {
                // The lines that complete the window are gathered and cleaned in one call: a
                // call per line (60 bases in most FASTA) cost more than the cleaning itself.
                let wanted = (next + size as u64 - buf_start - b.len() as u64) as usize;
                raw.clear();
                while raw.len() < wanted {
                    if !self.reader.read_sequence_line(raw)? {
                        finished = true;
                        break;
                    }
                }
                clean_or_fail(raw, self.policy, b, s, self.changes, read, self.err)?;
                read += raw.len() as u64;
                // Drop bases before the next window (stride > size skips bases).
                compact(b, s, &mut buf_start, next);
            }
            let buf_end = buf_start + b.len() as u64;
            if next >= buf_end {
                break;
            }
            let lo = (next - buf_start) as usize;
            let hi = ((next + size as u64).min(buf_end) - buf_start) as usize;
            batch.push(unit(next, &b[lo..hi], &s[lo..hi], UNKNOWN_LENGTH))?;
            if finished && next + size as u64 >= buf_end {
                break;
            }
            next += stride as u64;
            compact(b, s, &mut buf_start, next.min(buf_end));
        }
        Ok(read)
    }

    /// The first `limit` bases into `bufs`, the rest read past; the record's length.
    fn read_truncated(&mut self, limit: usize) -> Result<u64> {
        let Buffers {
            raw,
            bases: b,
            soft: s,
        } = &mut *self.bufs;
        b.clear();
        s.clear();
        let mut read = 0u64;
        raw.clear();
        while self.reader.read_sequence_line(raw)? {
            if b.len() < limit {
                let take = (limit - b.len()).min(raw.len());
                clean_or_fail(
                    &raw[..take],
                    self.policy,
                    b,
                    s,
                    self.changes,
                    read,
                    self.err,
                )?;
            }
            read += raw.len() as u64;
            raw.clear();
        }
        Ok(read)
    }

    /// The whole record into `bufs`; one longer than `limit` bases is refused.
    fn read_whole(&mut self, limit: Option<usize>) -> Result<()> {
        let Buffers {
            raw,
            bases: b,
            soft: s,
        } = &mut *self.bufs;
        self.reader.read_sequence(raw)?;
        if let Some(limit) = limit.filter(|&l| raw.len() > l) {
            return Err((self.err)(format!(
                "sequence of {} bases is longer than the maximum of {limit} (use --overflow truncate or --overflow window)",
                raw.len()
            ))
            .into());
        }
        b.clear();
        s.clear();
        clean_or_fail(raw, self.policy, b, s, self.changes, 0, self.err)?;
        Ok(())
    }
}
