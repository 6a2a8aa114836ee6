//! Sharded prediction for clusters: `--shard I/N` predicts one contiguous part of the dataset's
//! records and writes a part file; `--gather PARTS` joins the parts into the outputs of one run.
//!
//! A shard is whole batches of `--batch-size` records, so every batch it runs is a batch of the
//! unsharded run and its numbers are the same bits (a batch's composition can move the last
//! float bit). A part holds the TSV rows as written and the predictor's [`Tally`] (the exact
//! scores behind the VCF, track, npz and metrics); the gather replays the tallies in record
//! order, so its outputs are the unsharded run's, byte for byte.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use luminome_engine::predict::Tally;
use luminome_io::tensorfile::write_tensors;
use safetensors::tensor::TensorView;
use safetensors::Dtype;

use crate::args::PredictArgs;
use luminome_cli::shard::{fingerprint, open_parts, PartCheck};
pub use luminome_cli::shard::{is_gather_arg, ShardSpec};

/// Metadata keys of a part file.
const KIND: &str = "luminome_predict_part";

/// What a part records of the run that made it, and the gather checks against its own
/// arguments: everything that changes a number (records, batch size, columns, the dataset's
/// and the checkpoints' contents, the scoring options, the tool's version).
fn run_identity(args: &PredictArgs, n: usize, header: &str) -> Result<BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    m.insert("records".into(), n.to_string());
    m.insert("batch_size".into(), args.batch_size.to_string());
    m.insert("header".into(), header.to_string());
    m.insert("dataset".into(), fingerprint(&args.dataset)?);
    let checkpoints: Result<Vec<String>> =
        args.checkpoints.iter().map(|c| fingerprint(c)).collect();
    m.insert("checkpoints".into(), checkpoints?.join(","));
    let options = format!(
        "strands={:?} subset={:?} get_heads={:?}",
        args.strands, args.subset, args.get_heads
    );
    m.insert("options".into(), options);
    m.insert("version".into(), env!("CARGO_PKG_VERSION").into());
    Ok(m)
}

/// What a part is compared on with the other parts only (the gather, which computes nothing,
/// may run elsewhere): the device its numbers came from.
fn part_only(args: &PredictArgs) -> BTreeMap<String, String> {
    BTreeMap::from([("device".to_string(), args.runtime.device.clone())])
}

/// One shard's output, written by [`write_part`].
pub struct Part {
    pub spec: ShardSpec,
    pub range: Range<usize>,
    /// The TSV rows (no header), as the unsharded run writes them.
    pub rows: Vec<u8>,
    pub tally: Option<Tally>,
}

/// Writes `part` to `dest` (committed by the caller).
pub fn write_part(
    dest: &Path,
    args: &PredictArgs,
    n: usize,
    header: &str,
    part: &Part,
) -> Result<luminome_io::atomic::AtomicFile> {
    let mut meta = run_identity(args, n, header)?;
    meta.extend(part_only(args));
    meta.insert(KIND.into(), "1".into());
    meta.insert("shard".into(), part.spec.to_string());
    meta.insert("first_record".into(), part.range.start.to_string());
    meta.insert("end_record".into(), part.range.end.to_string());
    let mut tensors = vec![(
        "rows".to_string(),
        TensorView::new(Dtype::U8, vec![part.rows.len()], &part.rows)?,
    )];
    let (records, values);
    if let Some(t) = &part.tally {
        records = t
            .records
            .iter()
            .flat_map(|r| r.to_le_bytes())
            .collect::<Vec<u8>>();
        values = t
            .values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>();
        let shape = vec![t.records.len(), t.width];
        tensors.push((
            "tally_records".into(),
            TensorView::new(Dtype::I64, vec![t.records.len()], &records)?,
        ));
        tensors.push((
            "tally_values".into(),
            TensorView::new(Dtype::F64, shape, &values)?,
        ));
    }
    write_tensors(dest, &tensors, &meta)
}

/// Reads and checks every part: each of 1..N once, all of one run (the same [`run_identity`]
/// as this gather's arguments, the same device among themselves), contiguous records from 0 to
/// `n`; writes their rows to `out` in record order, one part at a time, and returns their
/// tallies joined (`None` when the parts carry none).
pub fn gather(
    args: &PredictArgs,
    n: usize,
    header: &str,
    out: &mut impl std::io::Write,
) -> Result<Option<Tally>> {
    let expected = run_identity(args, n, header)?;
    let parts = open_parts(
        &args.gather,
        &PartCheck {
            kind: KIND,
            tool: "luminome-predict",
            identity: &expected,
            identity_names: "dataset, model, options, --batch-size or version",
            same_among: &["device"],
        },
    )?;
    join(
        parts.into_iter().map(|p| (p.path, p.spec)),
        n,
        args.batch_size,
        out,
    )
}

/// Writes the parts' rows to `out` and joins their tallies, checking their records follow on
/// and that every part carries a tally or none does. Each part is read once, whole (its rows
/// and tally; the metadata was checked by [`gather`]).
fn join(
    parts: impl Iterator<Item = (PathBuf, ShardSpec)>,
    n: usize,
    batch: usize,
    out: &mut impl std::io::Write,
) -> Result<Option<Tally>> {
    let (mut tally, mut next, mut with_tally) = (None::<Tally>, 0usize, None::<bool>);
    for (path, spec) in parts {
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let not_valid =
            |e| anyhow::anyhow!("{}: not a valid safetensors file: {e}", path.display());
        let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).map_err(not_valid)?;
        let file = safetensors::SafeTensors::deserialize(&bytes).map_err(not_valid)?;
        let bound = |k: &str| -> Result<usize> {
            meta.metadata()
                .as_ref()
                .and_then(|m| m.get(k)?.parse().ok())
                .with_context(|| format!("{}: no {k} in its metadata", path.display()))
        };
        let range = bound("first_record")?..bound("end_record")?;
        if range != spec.records(n, batch) || range.start != next {
            bail!(
                "{}: part {spec} holds records {range:?}, not those that follow record {next}",
                path.display()
            );
        }
        next = range.end;
        match file.tensor("rows") {
            Ok(rows) if rows.dtype() == Dtype::U8 && rows.shape().len() == 1 => {
                out.write_all(rows.data())?
            }
            _ => bail!(
                "{}: its rows are not the bytes luminome-predict --shard writes",
                path.display()
            ),
        }
        let part_tally = read_tally(&file, &path)?;
        if *with_tally.get_or_insert(part_tally.is_some()) != part_tally.is_some() {
            bail!(
                "{}: some parts carry a tally and others not: parts of different runs",
                path.display()
            );
        }
        if let Some(t) = part_tally {
            let inside = t.records.iter().all(|&r| range.contains(&(r as usize)));
            if !inside || tally.as_ref().is_some_and(|have| have.width != t.width) {
                bail!(
                    "{}: its tally is not one of its own records",
                    path.display()
                );
            }
            let all = tally.get_or_insert_with(|| Tally {
                width: t.width,
                ..Tally::default()
            });
            all.records.extend(t.records);
            all.values.extend(t.values);
        }
    }
    if next != n {
        bail!("--gather: the parts end at record {next} of {n}");
    }
    Ok(tally)
}

/// A part's tally, when it has one (f64 values, which luminome-io's dataset reader does not
/// hold: a classifier's probabilities stay exact).
fn read_tally(file: &safetensors::SafeTensors, path: &Path) -> Result<Option<Tally>> {
    let Ok(records) = file.tensor("tally_records") else {
        return Ok(None);
    };
    let values = file
        .tensor("tally_values")
        .map_err(|_| anyhow::anyhow!("{}: tally_records without tally_values", path.display()))?;
    let (n, width) = match values.shape() {
        [n, w] => (*n, *w),
        _ => (usize::MAX, 0),
    };
    let fits =
        records.dtype() == Dtype::I64 && values.dtype() == Dtype::F64 && records.shape() == [n];
    if !fits {
        bail!(
            "{}: its tally is not one luminome-predict --shard writes",
            path.display()
        );
    }
    let le8 = |c: &[u8]| <[u8; 8]>::try_from(c).expect("8 bytes");
    Ok(Some(Tally {
        width,
        records: records
            .data()
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(le8(c)))
            .collect(),
        values: values
            .data()
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(le8(c)))
            .collect(),
    }))
}
