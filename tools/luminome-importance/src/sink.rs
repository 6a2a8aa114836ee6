//! Where a sequence-classifier run's per-record outputs go: the TSV, genome track and npz of one
//! job; with `--shard I/N`, a part file holding the same per-record pieces; with `--gather`, the
//! one job's outputs again, replayed from the parts.
//!
//! A part is whole passes of the selected records (passes of the method's size, so every pass
//! is one of the unsharded run's and its numbers the same bits): part I of N takes passes
//! ⌊(I−1)·P/N⌋ to ⌊I·P/N⌋ of the P passes. It holds, per record, the TSV lines as written, the
//! per-base track scores and the npz rows; the gather writes them in record order into the
//! writers one job uses (the track sums scores per base in record order, as one job does), so
//! every output is that job's, byte for byte.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use luminome_cli::shard::{fingerprint, PartCheck, ShardSpec};
use luminome_io::atomic::AtomicWriter;
use luminome_io::npz::{NpyArraySpec, NpyElem, NpzWriter};
use luminome_io::tensorfile::{ColumnSpec, ElemType, StreamingTensorWriter, TensorFile};
use luminome_io::token_dataset::IndexRow;

use crate::args::ImportanceArgs;
use crate::outputs::GenomeTrack;

/// Rows appended to the arrays of an npz (or of a part standing in for one).
pub trait ArrayRows {
    fn push_f32(&mut self, array: usize, values: &[f32]) -> Result<()>;
    fn push_i64(&mut self, array: usize, values: &[i64]) -> Result<()>;
    fn push_u8(&mut self, array: usize, values: &[u8]) -> Result<()>;
}

impl ArrayRows for NpzWriter {
    fn push_f32(&mut self, array: usize, values: &[f32]) -> Result<()> {
        NpzWriter::push_f32(self, array, values)
    }
    fn push_i64(&mut self, array: usize, values: &[i64]) -> Result<()> {
        NpzWriter::push_i64(self, array, values)
    }
    fn push_u8(&mut self, array: usize, values: &[u8]) -> Result<()> {
        NpzWriter::push_u8(self, array, values)
    }
}

/// Metadata key marking a part file.
const KIND: &str = "luminome_importance_part";

/// The part columns before the npz arrays'.
const ROW: usize = 0;
const TSV: usize = 1;
const TSV_LEN: usize = 2;
const TRACK: usize = 3;
const TRACK_SOME: usize = 4;
const TRACK_LEN: usize = 5;

/// A run's outputs: one job's, or one part's.
pub struct RecordOutputs {
    mode: Mode,
}

enum Mode {
    Job(Box<Job>),
    Part(Box<Part>),
}

/// One job's writers.
struct Job {
    tsv: AtomicWriter,
    track: Option<GenomeTrack>,
    npz: Option<NpzWriter>,
}

struct Part {
    dest: PathBuf,
    meta: BTreeMap<String, String>,
    tensors: StreamingTensorWriter,
    /// The current record's TSV lines and track scores.
    tsv: Vec<u8>,
    track: Option<Vec<Option<f32>>>,
    with_track: bool,
    with_npz: bool,
    /// Column of the first npz array.
    arrays_from: usize,
}

fn elem_of(elem: NpyElem) -> Result<ElemType> {
    Ok(match elem {
        NpyElem::F32 => ElemType::F32,
        NpyElem::I64 => ElemType::I64,
        NpyElem::U8 => ElemType::U8,
        NpyElem::Unicode(_) => bail!("internal: text arrays are not sharded"),
    })
}

/// What a part records of the run that made it, and the gather checks against its own
/// arguments: the dataset's, checkpoint's and --positions' contents, every option that changes
/// a number or a line, the records selected and the pass size, the tool's version.
fn run_identity(
    args: &ImportanceArgs,
    records: usize,
    pass: usize,
) -> Result<BTreeMap<String, String>> {
    let positions = args.positions.as_deref().map(fingerprint).transpose()?;
    let options = format!(
        "method={:?} records={:?} only_label={:?} target={:?} reduce={:?} ig_steps={} ism_score={:?} ism_rows={} shuffles={} seed={} npz={} bedgraph={}",
        args.method,
        args.records,
        args.only_label,
        args.target,
        args.reduce,
        args.ig_steps,
        args.ism_score,
        args.ism_rows,
        args.shuffles,
        args.seed,
        args.npz.is_some(),
        args.bedgraph.is_some()
    );
    Ok(BTreeMap::from([
        ("dataset".into(), fingerprint(&args.dataset)?),
        ("checkpoint".into(), fingerprint(&args.checkpoint)?),
        ("positions".into(), positions.unwrap_or_default()),
        ("options".into(), options),
        ("selected".into(), records.to_string()),
        ("pass".into(), pass.to_string()),
        ("version".into(), env!("CARGO_PKG_VERSION").into()),
    ]))
}

impl RecordOutputs {
    /// Starts a run over the selected `records` (dataset rows) in passes of `pass`, whose TSV
    /// starts with `header` and whose npz (with `--npz`) holds `arrays`. With `--gather` it
    /// writes the outputs from the parts and returns `None`: nothing is left to explain.
    /// Otherwise the outputs and the records this run explains (all, or its part's passes).
    pub fn start<'r>(
        args: &ImportanceArgs,
        header: &str,
        arrays: &[NpyArraySpec],
        records: &'r [usize],
        pass: usize,
        index: &[IndexRow],
    ) -> Result<Option<(Self, &'r [usize])>> {
        let mut out = Self::open(args, header, arrays, records.len(), pass)?;
        if !args.gather.is_empty() {
            out.gather(args, records, pass, index, arrays)?;
            out.commit(args, records.len())?;
            return Ok(None);
        }
        let mine = match args.shard {
            Some(spec) => &records[spec.records(records.len(), pass)],
            None => records,
        };
        Ok(Some((out, mine)))
    }

    fn open(
        args: &ImportanceArgs,
        header: &str,
        arrays: &[NpyArraySpec],
        records: usize,
        pass: usize,
    ) -> Result<Self> {
        let Some(spec) = args.shard else {
            let npz = match &args.npz {
                Some(path) => Some(NpzWriter::create(path, arrays)?),
                None => None,
            };
            let mut tsv = AtomicWriter::create(&args.output)?;
            writeln!(tsv, "{header}")?;
            let track = args.bedgraph.as_ref().map(|_| GenomeTrack::default());
            return Ok(Self {
                mode: Mode::Job(Box::new(Job { tsv, track, npz })),
            });
        };
        let mut meta = run_identity(args, records, pass)?;
        meta.insert("device".into(), args.runtime.device.clone());
        meta.insert(KIND.into(), "1".into());
        meta.insert("shard".into(), spec.to_string());
        let mut cols = vec![
            ColumnSpec::fixed("row", ElemType::I64, &[]),
            ColumnSpec::ragged("tsv", ElemType::U8, 0),
            ColumnSpec::fixed("tsv_len", ElemType::I64, &[]),
            ColumnSpec::ragged("track", ElemType::F32, 0),
            ColumnSpec::ragged("track_some", ElemType::U8, 0),
            ColumnSpec::fixed("track_len", ElemType::I64, &[]),
        ];
        let npz_arrays = if args.npz.is_some() { arrays } else { &[] };
        for a in npz_arrays {
            let row: Vec<usize> = a.shape[1..].iter().map(|&d| d as usize).collect();
            cols.push(ColumnSpec::fixed(
                &format!("npz.{}", a.name),
                elem_of(a.elem)?,
                &row,
            ));
        }
        Ok(Self {
            mode: Mode::Part(Box::new(Part {
                dest: args.output.clone(),
                meta,
                tensors: StreamingTensorWriter::new(&args.output, cols)?,
                tsv: Vec::new(),
                track: None,
                with_track: args.bedgraph.is_some(),
                with_npz: args.npz.is_some(),
                arrays_from: TRACK_LEN + 1,
            })),
        })
    }

    /// Where the current record's TSV lines go.
    pub fn tsv(&mut self) -> &mut dyn Write {
        match &mut self.mode {
            Mode::Job(j) => &mut j.tsv,
            Mode::Part(p) => &mut p.tsv,
        }
    }

    /// Whether a genome track is written (`--bedgraph`).
    pub fn has_track(&self) -> bool {
        match &self.mode {
            Mode::Job(j) => j.track.is_some(),
            Mode::Part(p) => p.with_track,
        }
    }

    /// The current record's per-base scores on the genome.
    pub fn track(&mut self, index: &IndexRow, scores: &[Option<f32>]) {
        match &mut self.mode {
            Mode::Job(j) => {
                if let Some(t) = &mut j.track {
                    t.add(index, scores);
                }
            }
            Mode::Part(p) => p.track = Some(scores.to_vec()),
        }
    }

    /// The npz arrays, with `--npz`.
    pub fn arrays(&mut self) -> Option<&mut dyn ArrayRows> {
        match &mut self.mode {
            Mode::Job(j) => j.npz.as_mut().map(|n| n as &mut dyn ArrayRows),
            Mode::Part(p) => p.with_npz.then_some(&mut **p as &mut dyn ArrayRows),
        }
    }

    /// Ends dataset row `row`'s record (a part stores its pieces).
    pub fn end_record(&mut self, row: usize) -> Result<()> {
        let Mode::Part(p) = &mut self.mode else {
            return Ok(());
        };
        p.tensors.push_i64(ROW, &[row as i64])?;
        let tsv = std::mem::take(&mut p.tsv);
        p.tensors.push_bytes(TSV, &tsv)?;
        p.tensors.push_i64(TSV_LEN, &[tsv.len() as i64])?;
        let scores = p.track.take().unwrap_or_default();
        let values: Vec<f32> = scores.iter().map(|s| s.unwrap_or(0.0)).collect();
        let some: Vec<u8> = scores.iter().map(|s| u8::from(s.is_some())).collect();
        p.tensors.push_f32(TRACK, &values)?;
        p.tensors.push_bytes(TRACK_SOME, &some)?;
        p.tensors.push_i64(TRACK_LEN, &[scores.len() as i64])
    }

    /// Commits one job's outputs (the track written, the npz closed) or the part.
    pub fn commit(self, args: &ImportanceArgs, records: usize) -> Result<()> {
        match self.mode {
            Mode::Job(j) => {
                let Job { tsv, track, npz } = *j;
                crate::commit_outputs(args, records, tsv, track.as_ref(), || {
                    npz.map_or(Ok(()), |n| n.commit())
                })
            }
            Mode::Part(p) => {
                let dest = p.dest.clone();
                p.tensors
                    .finish(p.meta)?
                    .commit()
                    .with_context(|| format!("cannot write {}", dest.display()))
            }
        }
    }

    /// `--gather`: the parts' records, checked to be this run's selected `records` (dataset
    /// rows) in order, written as one job writes them.
    fn gather(
        &mut self,
        args: &ImportanceArgs,
        records: &[usize],
        pass: usize,
        index: &[IndexRow],
        arrays: &[NpyArraySpec],
    ) -> Result<()> {
        let identity = run_identity(args, records.len(), pass)?;
        let parts = open_parts(&args.gather, &identity)?;
        let mut next = 0usize;
        for (path, spec, file) in &parts {
            let want = spec.records(records.len(), pass);
            let rows = file.require("row")?.shape.first().copied().unwrap_or(0);
            if next != want.start || rows != want.len() {
                bail!(
                    "{}: part {spec} holds {rows} records, not the {} that follow record {next}",
                    path.display(),
                    want.len()
                );
            }
            for k in 0..rows {
                let r = records[next];
                self.replay_record(file, path, k, r, &index[r], arrays)?;
                next += 1;
            }
        }
        if next != records.len() {
            bail!(
                "--gather: the parts end at record {next} of {}",
                records.len()
            );
        }
        Ok(())
    }

    fn replay_record(
        &mut self,
        file: &TensorFile,
        path: &Path,
        k: usize,
        r: usize,
        index: &IndexRow,
        arrays: &[NpyArraySpec],
    ) -> Result<()> {
        let int = |name: &str| -> Result<i64> {
            let t = file.require(name)?;
            let mut v = Vec::new();
            t.extend_i64(k, &mut v);
            v.first()
                .copied()
                .with_context(|| format!("{}: {name} is empty", path.display()))
        };
        if int("row")? != r as i64 {
            bail!(
                "{}: its record {k} is dataset row {}, not {r}",
                path.display(),
                int("row")?
            );
        }
        let bad = || anyhow::anyhow!("{}: record {k}: a length beyond its row", path.display());
        let tsv_len = usize::try_from(int("tsv_len")?).map_err(|_| bad())?;
        let tsv = file
            .require("tsv")?
            .row_bytes(k)
            .get(..tsv_len)
            .ok_or_else(bad)?;
        self.tsv().write_all(tsv)?;
        if self.has_track() {
            let n = usize::try_from(int("track_len")?).map_err(|_| bad())?;
            let mut values = Vec::new();
            file.require("track")?.extend_f32(k, &mut values);
            let some = file.require("track_some")?.row_bytes(k);
            if values.len() < n || some.len() < n {
                return Err(bad());
            }
            let scores: Vec<Option<f32>> = (0..n)
                .map(|i| (some[i] != 0).then_some(values[i]))
                .collect();
            self.track(index, &scores);
        }
        if let Some(npz) = self.arrays() {
            for (a, spec) in arrays.iter().enumerate() {
                let t = file.require(&format!("npz.{}", spec.name))?;
                match spec.elem {
                    NpyElem::F32 => {
                        let mut v = Vec::new();
                        t.extend_f32(k, &mut v);
                        npz.push_f32(a, &v)?;
                    }
                    NpyElem::I64 => {
                        let mut v = Vec::new();
                        t.extend_i64(k, &mut v);
                        npz.push_i64(a, &v)?;
                    }
                    NpyElem::U8 => npz.push_u8(a, t.row_bytes(k))?,
                    NpyElem::Unicode(_) => bail!("internal: text arrays are not sharded"),
                }
            }
        }
        Ok(())
    }
}

impl ArrayRows for Part {
    fn push_f32(&mut self, array: usize, values: &[f32]) -> Result<()> {
        self.tensors.push_f32(self.arrays_from + array, values)
    }
    fn push_i64(&mut self, array: usize, values: &[i64]) -> Result<()> {
        self.tensors.push_i64(self.arrays_from + array, values)
    }
    fn push_u8(&mut self, array: usize, values: &[u8]) -> Result<()> {
        self.tensors.push_bytes(self.arrays_from + array, values)
    }
}

/// Opens and checks the parts (luminome-cli's checks, and every tensor of the rows it says it
/// has); in part order.
fn open_parts(
    paths: &[PathBuf],
    identity: &BTreeMap<String, String>,
) -> Result<Vec<(PathBuf, ShardSpec, TensorFile)>> {
    let parts = luminome_cli::shard::open_parts(
        paths,
        &PartCheck {
            kind: KIND,
            tool: "luminome-importance",
            identity,
            identity_names: "dataset, model, options, --batch-size or version",
            same_among: &["device"],
        },
    )?;
    parts
        .into_iter()
        .map(|p| {
            check_rows(&p.file, &p.path)?;
            Ok((p.path, p.spec, p.file))
        })
        .collect()
}

/// Every tensor of a part has one row per record and its whole bytes (a row read is in bounds).
fn check_rows(file: &TensorFile, path: &Path) -> Result<()> {
    let rows = file.require("row")?.shape.first().copied().unwrap_or(0);
    for name in file.names() {
        let t = file.require(name)?;
        let whole = t.shape.iter().product::<usize>() * t.elem.size();
        if t.shape.first() != Some(&rows) || t.bytes.len() != whole {
            bail!(
                "{}: its {name} is not what luminome-importance --shard writes",
                path.display()
            );
        }
    }
    Ok(())
}
