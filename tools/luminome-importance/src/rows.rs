//! Sharding the explanation of expression and tabular models. Their per-sample result is one
//! row of f32 numbers (an expression sample's α or region × feature contributions, with its
//! region rows and used-region count; a tabular sample's column scores); every output — TSV,
//! bedGraph, npz, ranking — is computed from those rows in sample order. So a `--shard I/N`
//! part holds only the rows of its samples (whole passes of `--batch-size`, each one of the
//! unsharded run's, so the same bits), and `--gather` replays the parts' rows, in sample order,
//! through the code one job runs on the rows it computes: the same bytes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use luminome_cli::shard::{PartCheck, ShardSpec};
use luminome_io::tensorfile::{ColumnSpec, ElemType, StreamingTensorWriter, TensorFile};

use crate::args::ImportanceArgs;

/// Metadata key marking a part file of sample rows.
const KIND: &str = "luminome_importance_rows_part";

/// How a run goes: one job over `records`, one part over its share, or a gather.
pub enum RowRun<'r> {
    /// Explain these samples; with `Some`, into a part.
    Explain {
        records: &'r [usize],
        part: Option<RowPart>,
    },
    /// `--gather`: the rows come from the parts ([`replay`]).
    Gather,
}

/// Starts a run over the selected `records` (dataset rows) in passes of `pass`, each sample's
/// result `width` f32 values and `ints` i64 values.
pub fn start<'r>(
    args: &ImportanceArgs,
    records: &'r [usize],
    pass: usize,
    width: usize,
    ints: usize,
) -> Result<RowRun<'r>> {
    if !args.gather.is_empty() {
        return Ok(RowRun::Gather);
    }
    let Some(spec) = args.shard else {
        return Ok(RowRun::Explain {
            records,
            part: None,
        });
    };
    let part = RowPart::create(args, spec, records.len(), pass, width, ints)?;
    Ok(RowRun::Explain {
        records: &records[spec.records(records.len(), pass)],
        part: Some(part),
    })
}

/// What a part records of the run and the gather checks against its own arguments: the
/// dataset's and checkpoint's contents, every option that changes a sample's row (the method,
/// its steps, the class explained, the samples selected), the pass size, the version. What the
/// gather derives from the rows (`--top`, `--npz`, `--bedgraph`, `--ranking`) is its own.
fn run_identity(
    args: &ImportanceArgs,
    records: usize,
    pass: usize,
) -> Result<BTreeMap<String, String>> {
    use luminome_cli::shard::fingerprint;
    let options = format!(
        "method={:?} subset={:?} records={:?} target={:?} ig_steps={}",
        args.method, args.subset, args.records, args.target, args.ig_steps
    );
    Ok(BTreeMap::from([
        ("dataset".into(), fingerprint(&args.dataset)?),
        ("checkpoint".into(), fingerprint(&args.checkpoint)?),
        ("options".into(), options),
        ("selected".into(), records.to_string()),
        ("pass".into(), pass.to_string()),
        ("version".into(), env!("CARGO_PKG_VERSION").into()),
    ]))
}

/// The columns of a part: the sample's dataset row, its f32 values, its i64 values.
const ROW: usize = 0;
const VALUES: usize = 1;
const INTS: usize = 2;

/// One part's rows, written to `-o`.
pub struct RowPart {
    dest: PathBuf,
    meta: BTreeMap<String, String>,
    tensors: StreamingTensorWriter,
    ints: usize,
}

impl RowPart {
    fn create(
        args: &ImportanceArgs,
        spec: ShardSpec,
        records: usize,
        pass: usize,
        width: usize,
        ints: usize,
    ) -> Result<Self> {
        let mut meta = run_identity(args, records, pass)?;
        meta.insert("device".into(), args.runtime.device.clone());
        meta.insert(KIND.into(), "1".into());
        meta.insert("shard".into(), spec.to_string());
        let mut cols = vec![
            ColumnSpec::fixed("row", ElemType::I64, &[]),
            ColumnSpec::fixed("values", ElemType::F32, &[width]),
        ];
        if ints > 0 {
            cols.push(ColumnSpec::fixed("ints", ElemType::I64, &[ints]));
        }
        Ok(Self {
            dest: args.output.clone(),
            meta,
            tensors: StreamingTensorWriter::new(&args.output, cols)?,
            ints,
        })
    }

    /// Dataset row `row`'s result.
    pub fn push(&mut self, row: usize, values: &[f32], ints: &[i64]) -> Result<()> {
        self.tensors.push_i64(ROW, &[row as i64])?;
        self.tensors.push_f32(VALUES, values)?;
        if self.ints > 0 {
            self.tensors.push_i64(INTS, ints)?;
        }
        Ok(())
    }

    pub fn commit(self) -> Result<()> {
        let dest = self.dest;
        self.tensors
            .finish(self.meta)?
            .commit()
            .with_context(|| format!("cannot write {}", dest.display()))
    }
}

/// `--gather`: checks the parts (each of 1..N once, this run's, whole and holding the passes
/// that follow each other's, each sample the selected one) and hands every sample's row to
/// `sample(row, values, ints)` in sample order.
pub fn replay(
    args: &ImportanceArgs,
    records: &[usize],
    pass: usize,
    (width, ints): (usize, usize),
    mut sample: impl FnMut(usize, &[f32], &[i64]) -> Result<()>,
) -> Result<()> {
    let identity = run_identity(args, records.len(), pass)?;
    let parts = luminome_cli::shard::open_parts(
        &args.gather,
        &PartCheck {
            kind: KIND,
            tool: "luminome-importance",
            identity: &identity,
            identity_names: "dataset, model, options, --batch-size or version",
            same_among: &["device"],
        },
    )?;
    let mut next = 0usize;
    let (mut values, mut extra, mut row) = (Vec::new(), Vec::new(), Vec::new());
    for part in &parts {
        let path = part.path.display();
        let want = part.spec.records(records.len(), pass);
        let n = check_shapes(&part.file, width, ints)
            .with_context(|| format!("{path}: not what luminome-importance --shard writes"))?;
        if next != want.start || n != want.len() {
            bail!(
                "{path}: part {} holds {n} samples, not the {} that follow sample {next}",
                part.spec,
                want.len()
            );
        }
        for k in 0..n {
            row.clear();
            part.file.require("row")?.extend_i64(k, &mut row);
            if row.first() != Some(&(records[next] as i64)) {
                bail!(
                    "{path}: its sample {k} is not dataset row {}",
                    records[next]
                );
            }
            values.clear();
            part.file.require("values")?.extend_f32(k, &mut values);
            extra.clear();
            if ints > 0 {
                part.file.require("ints")?.extend_i64(k, &mut extra);
            }
            sample(records[next], &values, &extra)?;
            next += 1;
        }
    }
    if next != records.len() {
        bail!(
            "--gather: the parts end at sample {next} of {}",
            records.len()
        );
    }
    Ok(())
}

/// A part's sample count, after checking every tensor has that many whole rows of the widths
/// this run gives.
fn check_shapes(file: &TensorFile, width: usize, ints: usize) -> Result<usize> {
    let n = file.require("row")?.shape.first().copied().unwrap_or(0);
    let mut want = vec![
        ("row", ElemType::I64, vec![n]),
        ("values", ElemType::F32, vec![n, width]),
    ];
    if ints > 0 {
        want.push(("ints", ElemType::I64, vec![n, ints]));
    }
    for (name, elem, shape) in want {
        let t = file.require(name)?;
        let whole = shape.iter().product::<usize>() * elem.size();
        if t.elem != elem || t.shape != shape.as_slice() || t.bytes.len() != whole {
            bail!(
                "its {name} is not [{}] {elem:?}",
                shape
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(n)
}
