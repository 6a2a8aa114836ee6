//! Writing safetensors files: row by row through spill files, or whole tensors at once.

use std::collections::BTreeMap;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use safetensors::tensor::Dtype;

use super::ElemType;
use crate::atomic::{check_output_dir, AtomicFile};

/// The shape of one row of a tensor (the tensor is `[rows, ..row shape]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowShape {
    /// Every row has this shape.
    Fixed(Vec<usize>),
    /// One-dimensional rows of varying length, padded to the longest with `pad` at the end.
    PadToLongest { pad: u64 },
}

#[derive(Debug, Clone)]
pub struct ColumnSpec {
    pub name: String,
    pub elem: ElemType,
    pub shape: RowShape,
}

impl ColumnSpec {
    pub fn fixed(name: &str, elem: ElemType, shape: &[usize]) -> Self {
        Self {
            name: name.into(),
            elem,
            shape: RowShape::Fixed(shape.to_vec()),
        }
    }

    pub fn ragged(name: &str, elem: ElemType, pad: u64) -> Self {
        Self {
            name: name.into(),
            elem,
            shape: RowShape::PadToLongest { pad },
        }
    }
}

struct Column {
    spec: ColumnSpec,
    spill: BufWriter<tempfile::NamedTempFile>,
    /// Keeps the spill file on the list an interrupted run removes.
    _registered: crate::temps::Registered,
    rows: u64,
    /// Ragged columns: element count of each row.
    row_lens: Vec<u32>,
    max_len: usize,
    scratch: Vec<u8>,
}

/// Writes a safetensors file row by row. See the module documentation.
pub struct StreamingTensorWriter {
    dest: PathBuf,
    columns: Vec<Column>,
}

fn encode_into(elem: ElemType, values: impl Iterator<Item = u64>, out: &mut Vec<u8>) {
    for v in values {
        match elem {
            ElemType::U8 => out.push(v as u8),
            ElemType::I8 => out.push(v as i64 as i8 as u8),
            ElemType::U16 => out.extend_from_slice(&(v as u16).to_le_bytes()),
            ElemType::U32 => out.extend_from_slice(&(v as u32).to_le_bytes()),
            ElemType::I32 => out.extend_from_slice(&(v as i64 as i32).to_le_bytes()),
            ElemType::I64 => out.extend_from_slice(&(v as i64).to_le_bytes()),
            ElemType::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
        }
    }
}

/// The JSON header of a safetensors file whose tensors are stored in the order given, back to
/// back: keys (tensor names, `__metadata__`) sorted, padded with spaces to a multiple of 8 bytes.
/// A `BTreeMap` throughout, so the same tensors and metadata always give the same bytes.
fn header(
    entries: &[(&str, Dtype, Vec<usize>, usize)],
    metadata: &BTreeMap<String, String>,
) -> Result<Vec<u8>> {
    let mut header: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    let mut offset = 0usize;
    for (name, dtype, shape, nbytes) in entries {
        header.insert(
            name.to_string(),
            serde_json::json!({
                "dtype": format!("{dtype:?}"),
                "shape": shape,
                "data_offsets": [offset, offset + nbytes],
            }),
        );
        offset += nbytes;
    }
    header.insert("__metadata__".into(), serde_json::to_value(metadata)?);
    let mut header_bytes = serde_json::to_vec(&header)?;
    while header_bytes.len() % 8 != 0 {
        header_bytes.push(b' ');
    }
    Ok(header_bytes)
}

/// Writes whole in-memory tensors (anything safetensors can view: candle tensors, for one) and
/// their metadata to an uncommitted atomic file. Tensors are stored sorted by name and the
/// header is ordered ([`header`]), so the same tensors and metadata give the same bytes: the
/// `HashMap` that `safetensors::serialize` takes for metadata changes its order from run to run.
pub fn write_tensors<V: safetensors::View>(
    dest: &Path,
    tensors: &[(String, V)],
    metadata: &BTreeMap<String, String>,
) -> Result<AtomicFile> {
    let mut order: Vec<&(String, V)> = tensors.iter().collect();
    order.sort_by(|a, b| a.0.cmp(&b.0));
    let entries: Vec<(&str, Dtype, Vec<usize>, usize)> = order
        .iter()
        .map(|(n, t)| (n.as_str(), t.dtype(), t.shape().to_vec(), t.data_len()))
        .collect();
    let header_bytes = header(&entries, metadata)?;
    let mut out = AtomicFile::create(dest)?;
    {
        let mut w = BufWriter::with_capacity(1 << 20, out.file());
        w.write_all(&(header_bytes.len() as u64).to_le_bytes())?;
        w.write_all(&header_bytes)?;
        for (_, t) in order {
            w.write_all(&t.data())?;
        }
        w.flush()
            .with_context(|| format!("cannot write {}", dest.display()))?;
    }
    Ok(out)
}

impl StreamingTensorWriter {
    pub fn new(dest: impl AsRef<Path>, specs: Vec<ColumnSpec>) -> Result<Self> {
        let dest = dest.as_ref().to_path_buf();
        let parent = check_output_dir(&dest)?;
        let columns = specs
            .into_iter()
            .map(|spec| {
                crate::temps::sweep_stale(&parent);
                let tmp = tempfile::Builder::new()
                    .prefix(&crate::temps::prefix("luminome-spill"))
                    .suffix(crate::temps::SUFFIX)
                    .tempfile_in(&parent)
                    .with_context(|| {
                        format!("cannot create a spill file in {}", parent.display())
                    })?;
                Ok(Column {
                    spec,
                    _registered: crate::temps::Registered::new(tmp.path()),
                    spill: BufWriter::with_capacity(1 << 20, tmp),
                    rows: 0,
                    row_lens: Vec::new(),
                    max_len: 0,
                    scratch: Vec::new(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { dest, columns })
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.spec.name == name)
    }

    pub fn rows(&self, column: usize) -> u64 {
        self.columns[column].rows
    }

    /// Appends one row of raw little-endian bytes.
    pub fn push_bytes(&mut self, column: usize, bytes: &[u8]) -> Result<()> {
        let col = &mut self.columns[column];
        let size = col.spec.elem.size();
        if !bytes.len().is_multiple_of(size) {
            bail!(
                "internal: row of {} bytes for a {}-byte type",
                bytes.len(),
                size
            );
        }
        let n = bytes.len() / size;
        match &col.spec.shape {
            RowShape::Fixed(shape) => {
                let want: usize = shape.iter().product();
                if n != want {
                    bail!(
                        "internal: row of {n} values for tensor {} with rows of {want}",
                        col.spec.name
                    );
                }
            }
            RowShape::PadToLongest { .. } => {
                col.row_lens.push(u32::try_from(n).context("row too long")?);
                col.max_len = col.max_len.max(n);
            }
        }
        col.spill
            .write_all(bytes)
            .context("cannot write to the spill file")?;
        col.rows += 1;
        Ok(())
    }

    /// Appends one row of integer values, narrowed to the column's element type.
    pub fn push_u32(&mut self, column: usize, values: &[u32]) -> Result<()> {
        let mut scratch = std::mem::take(&mut self.columns[column].scratch);
        scratch.clear();
        let elem = self.columns[column].spec.elem;
        // The common id widths get their own loops (the generic one matches the type per value).
        match elem {
            ElemType::U8 => crate::byte_loops::extend_narrowed_u8(values, &mut scratch),
            ElemType::U16 => scratch.extend(values.iter().flat_map(|&v| (v as u16).to_le_bytes())),
            ElemType::U32 => scratch.extend(values.iter().flat_map(|&v| v.to_le_bytes())),
            _ => encode_into(elem, values.iter().map(|&v| v as u64), &mut scratch),
        }
        let r = self.push_bytes(column, &scratch);
        self.columns[column].scratch = scratch;
        r
    }

    pub fn push_f32(&mut self, column: usize, values: &[f32]) -> Result<()> {
        if self.columns[column].spec.elem != ElemType::F32 {
            bail!("internal: f32 row for a non-f32 tensor");
        }
        let mut scratch = std::mem::take(&mut self.columns[column].scratch);
        scratch.clear();
        for v in values {
            scratch.extend_from_slice(&v.to_le_bytes());
        }
        let r = self.push_bytes(column, &scratch);
        self.columns[column].scratch = scratch;
        r
    }

    pub fn push_i64(&mut self, column: usize, values: &[i64]) -> Result<()> {
        let mut scratch = std::mem::take(&mut self.columns[column].scratch);
        scratch.clear();
        encode_into(
            self.columns[column].spec.elem,
            values.iter().map(|&v| v as u64),
            &mut scratch,
        );
        let r = self.push_bytes(column, &scratch);
        self.columns[column].scratch = scratch;
        r
    }

    /// Writes the finished safetensors file to a temporary name beside the destination and
    /// returns it uncommitted, so the caller can commit it together with companion outputs.
    pub fn finish(self, metadata: BTreeMap<String, String>) -> Result<AtomicFile> {
        let rows = self.columns.first().map(|c| c.rows).unwrap_or(0);
        let mut entries = Vec::new();
        for col in &self.columns {
            if col.rows != rows {
                bail!(
                    "internal: tensor {} has {} rows, expected {rows}",
                    col.spec.name,
                    col.rows
                );
            }
            let row_shape = match &col.spec.shape {
                RowShape::Fixed(s) => s.clone(),
                RowShape::PadToLongest { .. } => vec![col.max_len],
            };
            let mut shape = vec![rows as usize];
            shape.extend(&row_shape);
            let nbytes = shape.iter().product::<usize>() * col.spec.elem.size();
            entries.push((col.spec.name.as_str(), col.spec.elem.dtype(), shape, nbytes));
        }
        let header_bytes = header(&entries, &metadata)?;
        let mut out = AtomicFile::create(&self.dest)?;
        {
            let mut w = BufWriter::with_capacity(1 << 20, out.file());
            w.write_all(&(header_bytes.len() as u64).to_le_bytes())?;
            w.write_all(&header_bytes)?;
            w.flush()?;
        }
        for col in self.columns {
            let mut spill = col
                .spill
                .into_inner()
                .map_err(|e| anyhow::anyhow!("cannot flush a spill file: {}", e.error()))?;
            spill.as_file_mut().seek(SeekFrom::Start(0))?;
            match col.spec.shape {
                RowShape::Fixed(_) => {
                    // Plain file-to-file copy (copy_file_range on Linux).
                    std::io::copy(spill.as_file_mut(), out.file())
                        .with_context(|| format!("cannot write {}", self.dest.display()))?;
                }
                RowShape::PadToLongest { pad } => {
                    let size = col.spec.elem.size();
                    let mut pad_bytes = Vec::new();
                    encode_into(col.spec.elem, std::iter::once(pad), &mut pad_bytes);
                    let mut reader = BufReader::with_capacity(1 << 20, spill.as_file_mut());
                    let mut w = BufWriter::with_capacity(1 << 20, out.file());
                    let mut row = Vec::new();
                    for &len in &col.row_lens {
                        row.resize(len as usize * size, 0);
                        reader.read_exact(&mut row)?;
                        w.write_all(&row)?;
                        for _ in len as usize..col.max_len {
                            w.write_all(&pad_bytes)?;
                        }
                    }
                    w.flush()?;
                }
            }
        }
        Ok(out)
    }
}
