//! Sharded tokenizing for clusters: `--shard I/N` tokenizes part I of a run's units (records,
//! or the windows cut from them) into a part file; `--gather PARTS` joins the parts into the
//! dataset one run writes, byte for byte.
//!
//! Units are numbered in input order, as one run reads them. Part I takes the blocks of
//! [`BLOCK`] units whose block number b has b mod N = I − 1: round robin, so a part needs no
//! count of the units before it starts and every part gets an even share of a chromosome cut
//! into windows. Every part still reads (and checks) every input; it tokenizes and writes only
//! its own units. A part holds each row's ids, soft mask, label, unit number and index line; the
//! gather merges the parts by unit number into the writer a one-job run uses, so the dataset,
//! its `--shard-records` files, its index and its metadata are that run's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use luminome_cli::shard::{fingerprint, PartCheck, ShardSpec};
use luminome_io::tensorfile::{ColumnSpec, ElemType, StreamingTensorWriter, TensorFile, TensorRef};
use luminome_io::token_dataset::{IndexRow, PendingRows, TokenRow, UNKNOWN_LENGTH};

use crate::args::Args;
use crate::pipeline::TokenizeJob;

/// `--shard I/N`: the part a run writes, and what it records of the run.
pub struct PartOf {
    pub spec: ShardSpec,
    pub identity: BTreeMap<String, String>,
}

/// Units per block: the reader's batch.
pub const BLOCK: u64 = 1024;

/// Metadata key marking a part file.
const KIND: &str = "luminome_tokenize_part";

/// Whether unit `serial` of the run belongs to part `spec`.
pub fn owns(spec: ShardSpec, serial: u64) -> bool {
    (serial / BLOCK) % spec.count as u64 == (spec.index - 1) as u64
}

/// What a part records of the run that made it and the gather checks against its own
/// arguments: the inputs' contents, the tokenizer and every option that changes a row.
/// (`--shard-records` is not among them: parts are one file each, the gather writes the shards.)
pub fn run_identity(args: &Args, job: &TokenizeJob) -> Result<BTreeMap<String, String>> {
    let inputs: Result<Vec<String>> = args.inputs.iter().map(|p| fingerprint(p)).collect();
    let reference = args.reference.as_deref().map(fingerprint).transpose()?;
    let tokenizer = job
        .scheme
        .info(job.add_cls, job.add_sep, job.hf_json.clone());
    let options = format!(
        "format={:?} labels={:?} max_length={:?} overflow={:?} window={:?} stride={:?} rc={:?} \
         max_n={:?} non_acgt={:?} soft_mask={} sequence_column={:?} label_column={:?} \
         no_labels={} name_column={:?} flank={} width={:?}",
        args.format,
        args.label,
        args.max_length,
        args.overflow,
        args.window,
        args.stride,
        args.rc,
        args.max_n,
        args.non_acgt,
        args.soft_mask,
        args.sequence_column,
        args.label_column,
        args.no_labels,
        args.name_column,
        args.flank,
        args.width
    );
    Ok(BTreeMap::from([
        ("inputs".into(), inputs?.join(",")),
        ("reference".into(), reference.unwrap_or_default()),
        ("tokenizer".into(), serde_json::to_string(&tokenizer)?),
        ("options".into(), options),
        ("version".into(), env!("CARGO_PKG_VERSION").into()),
    ]))
}

/// The columns of a part file, in order.
const IDS: usize = 0;
const TOKENS: usize = 1;
const UNIT: usize = 2;
const INDEX: usize = 3;

/// Writes one part: the rows of its units, in order, with what the gather needs to put them
/// back among the others' rows.
pub(crate) struct PartWriter {
    dest: PathBuf,
    spec: ShardSpec,
    identity: BTreeMap<String, String>,
    tensors: StreamingTensorWriter,
    soft_mask: Option<usize>,
    labels: Option<usize>,
    /// Index rows of a streamed record, held until its length is known.
    pending: PendingRows,
    rows: u64,
}

impl PartWriter {
    pub(crate) fn new(
        dest: &Path,
        spec: ShardSpec,
        identity: BTreeMap<String, String>,
        job: &TokenizeJob,
        has_labels: bool,
        row_length: Option<usize>,
    ) -> Result<Self> {
        let tokenizer = job
            .scheme
            .info(job.add_cls, job.add_sep, job.hf_json.clone());
        let row = |name: &str, elem, pad| match row_length {
            Some(l) => ColumnSpec::fixed(name, elem, &[l]),
            None => ColumnSpec::ragged(name, elem, pad),
        };
        let ids_elem = ElemType::smallest_unsigned_for(tokenizer.vocab_size());
        let mut cols = vec![
            row("input_ids", ids_elem, tokenizer.pad_id as u64),
            ColumnSpec::fixed("tokens", ElemType::I64, &[]),
            ColumnSpec::fixed("unit", ElemType::I64, &[]),
            ColumnSpec::ragged("index", ElemType::U8, 0),
        ];
        let mut next = cols.len();
        let mut optional = |wanted: bool, spec: ColumnSpec| {
            wanted.then(|| {
                cols.push(spec);
                next += 1;
                next - 1
            })
        };
        let soft_mask = optional(job.soft_mask, row("soft_mask", ElemType::U8, 0));
        let labels = optional(has_labels, ColumnSpec::fixed("labels", ElemType::I64, &[]));
        Ok(Self {
            dest: dest.to_path_buf(),
            spec,
            identity,
            tensors: StreamingTensorWriter::new(dest, cols)?,
            soft_mask,
            labels,
            pending: PendingRows::default(),
            rows: 0,
        })
    }

    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    pub(crate) fn push(&mut self, row: TokenRow<'_>, serial: u64) -> Result<()> {
        let t = &mut self.tensors;
        t.push_u32(IDS, row.ids)?;
        t.push_i64(TOKENS, &[row.ids.len() as i64])?;
        t.push_i64(UNIT, &[serial as i64])?;
        if let Some(c) = self.soft_mask {
            t.push_bytes(c, row.soft_mask.context("internal: soft mask missing")?)?;
        }
        if let Some(c) = self.labels {
            t.push_i64(c, &[row.label.context("internal: label missing")?])?;
        }
        if row.index.seq_length == UNKNOWN_LENGTH {
            self.pending.push(&row.index)?;
        } else {
            t.push_bytes(INDEX, row.index.to_line().as_bytes())?;
        }
        self.rows += 1;
        Ok(())
    }

    /// Ends a streamed record: its held index rows get its length.
    pub(crate) fn end_record(&mut self, seq_length: u64) -> Result<()> {
        let tensors = &mut self.tensors;
        // A part stores each line without its newline (as `IndexRow::to_line` gives it).
        self.pending.end_record(seq_length, |line| {
            tensors.push_bytes(INDEX, &line[..line.len() - 1])
        })
    }

    /// Commits the part; `units` and `records` are the run's totals, which every part saw.
    pub(crate) fn finish(self, units: u64, records: u64) -> Result<()> {
        if !self.pending.is_empty() {
            bail!("internal: a streamed record was not ended");
        }
        let mut meta = self.identity;
        meta.insert(KIND.into(), "1".into());
        meta.insert("shard".into(), self.spec.to_string());
        meta.insert("units".into(), units.to_string());
        meta.insert("records".into(), records.to_string());
        let file = self.tensors.finish(meta)?;
        file.commit()
            .with_context(|| format!("cannot write {}", self.dest.display()))
    }
}

/// One part, opened and checked, with its place in the merge.
struct OpenPart {
    file: TensorFile,
    spec: ShardSpec,
    rows: usize,
    next: usize,
}

/// A part's tensor, checked to hold `rows` rows of byte-sized or integer elements.
fn part_tensor<'a>(part: &'a OpenPart, name: &str) -> Result<TensorRef<'a>> {
    let t = part.file.require(name)?;
    let whole = t.shape.iter().product::<usize>() * t.elem.size();
    if t.shape.first() != Some(&part.rows) || t.bytes.len() != whole || t.elem == ElemType::F32 {
        bail!(
            "{}: its {name} is not what luminome-tokenize --shard writes",
            part.file.path().display()
        );
    }
    Ok(t)
}

/// Opens the parts, checks them (each of 1..N once, all of one run — this gather's identity —
/// and all having seen the same units and records) and returns them in part order with the
/// run's unit and record counts.
fn open_parts(
    paths: &[PathBuf],
    identity: &BTreeMap<String, String>,
) -> Result<(Vec<OpenPart>, u64, u64)> {
    let parts = luminome_cli::shard::open_parts(
        paths,
        &PartCheck {
            kind: KIND,
            tool: "luminome-tokenize",
            identity,
            identity_names: "inputs, tokenizer, options or version",
            same_among: &["units", "records"],
        },
    )?;
    let first = parts.first().context("--gather needs the part files")?;
    let number = |k: &str| -> Result<u64> {
        let meta = first.file.metadata();
        meta.get(k)
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("{}: no {k} in its metadata", first.path.display()))
    };
    let (units, records) = (number("units")?, number("records")?);
    let parts = parts
        .into_iter()
        .map(|p| {
            let rows = p.file.require("unit")?.shape.first().copied().unwrap_or(0);
            Ok(OpenPart {
                file: p.file,
                spec: p.spec,
                rows,
                next: 0,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((parts, units, records))
}

/// What the gather hands the writers: rows in the order one run writes them.
pub(crate) trait RowSink {
    fn push(&mut self, row: TokenRow<'_>) -> Result<()>;
}

/// Merges the parts' rows by unit number into `sink`; the run's record count.
pub(crate) fn gather(
    paths: &[PathBuf],
    identity: &BTreeMap<String, String>,
    soft_mask: bool,
    has_labels: bool,
    sink: &mut dyn RowSink,
) -> Result<u64> {
    let (mut parts, units, records) = open_parts(paths, identity)?;
    let count = parts.len() as u64;
    let (mut ids, mut values) = (Vec::new(), Vec::new());
    for block in 0..units.div_ceil(BLOCK) {
        let k = (block % count) as usize;
        let part = &parts[k];
        let (unit, tokens) = (part_tensor(part, "unit")?, part_tensor(part, "tokens")?);
        let (id_col, index) = (part_tensor(part, "input_ids")?, part_tensor(part, "index")?);
        let soft = soft_mask
            .then(|| part_tensor(part, "soft_mask"))
            .transpose()?;
        let labels = has_labels
            .then(|| part_tensor(part, "labels"))
            .transpose()?;
        let path = part.file.path().to_path_buf();
        let (mut last, mut r) = (None, part.next);
        while r < part.rows {
            values.clear();
            unit.extend_i64(r, &mut values);
            let serial = values[0] as u64;
            if serial / BLOCK != block {
                break;
            }
            if last.is_some_and(|l| serial < l) {
                bail!("{}: row {r}: its units are out of order", path.display());
            }
            last = Some(serial);
            values.clear();
            tokens.extend_i64(r, &mut values);
            let n = usize::try_from(values[0])
                .ok()
                .filter(|&n| n <= id_col.row_len())
                .with_context(|| format!("{}: row {r}: a bad token count", path.display()))?;
            ids.clear();
            id_col.extend_u32(r, &mut ids);
            ids.truncate(n);
            let line = index.row_bytes(r);
            let line = &line[..line.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)];
            let index_row = std::str::from_utf8(line)
                .ok()
                .and_then(IndexRow::from_line)
                .with_context(|| format!("{}: row {r}: a malformed index line", path.display()))?;
            let label = match labels {
                Some(l) => {
                    values.clear();
                    l.extend_i64(r, &mut values);
                    Some(values[0])
                }
                None => None,
            };
            sink.push(TokenRow {
                ids: &ids,
                soft_mask: soft.map(|s| &s.row_bytes(r)[..n]),
                label,
                index: index_row,
            })?;
            r += 1;
        }
        parts[k].next = r;
    }
    if let Some(p) = parts.iter().find(|p| p.next != p.rows) {
        bail!(
            "{}: part {} holds rows of units that are not its own ({} of {} rows merged)",
            p.file.path().display(),
            p.spec,
            p.next,
            p.rows
        );
    }
    Ok(records)
}

/// The part's summary line.
pub(crate) fn part_line(spec: ShardSpec, rows: u64, units: u64, dest: &Path) -> String {
    format!(
        "luminome-tokenize: part {spec}: {rows} rows from its share of {units} units → {}",
        dest.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_belongs_to_exactly_one_part_in_blocks() {
        for count in 1..=5 {
            for serial in 0..(BLOCK * 11) {
                let owners: Vec<usize> = (1..=count)
                    .filter(|&index| owns(ShardSpec { index, count }, serial))
                    .collect();
                assert_eq!(owners.len(), 1, "unit {serial} of {count} parts");
                // A block's units all go to one part.
                let first = (serial / BLOCK) * BLOCK;
                assert!(owns(
                    ShardSpec {
                        index: owners[0],
                        count
                    },
                    first
                ));
            }
        }
    }
}
