//! Reading safetensors files through a memory map.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use safetensors::tensor::{Metadata, TensorInfo};

use super::ElemType;

/// A read-only, memory-mapped safetensors file.
pub struct TensorFile {
    path: PathBuf,
    map: memmap2::Mmap,
    data_start: usize,
    tensors: HashMap<String, TensorInfo>,
    metadata: HashMap<String, String>,
}

/// A borrowed view of one tensor's bytes.
#[derive(Clone, Copy)]
pub struct TensorRef<'a> {
    pub elem: ElemType,
    pub shape: &'a [usize],
    pub bytes: &'a [u8],
}

impl<'a> TensorRef<'a> {
    /// Elements in one row (the product of all dimensions but the first).
    pub fn row_len(&self) -> usize {
        self.shape.iter().skip(1).product()
    }

    /// The first byte-sized element that `ok` refuses, as (row, position in the row, byte), over
    /// the whole tensor: the value checks datasets make on open.
    pub fn first_bad_byte(&self, ok: impl Fn(u8) -> bool) -> Option<(usize, usize, u8)> {
        let n = self.row_len().max(1);
        let i = self.bytes.iter().position(|&v| !ok(v))?;
        Some((i / n, i % n, self.bytes[i]))
    }

    pub fn row_bytes(&self, row: usize) -> &'a [u8] {
        let n = self.row_len() * self.elem.size();
        &self.bytes[row * n..(row + 1) * n]
    }

    /// Appends row `row` as u32 values (integer tensors only).
    pub fn extend_u32(&self, row: usize, out: &mut Vec<u32>) {
        let b = self.row_bytes(row);
        match self.elem {
            ElemType::U8 => out.extend(b.iter().map(|&v| v as u32)),
            ElemType::I8 => out.extend(b.iter().map(|&v| v as i8 as u32)),
            ElemType::U16 => out.extend(
                b.chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]) as u32),
            ),
            ElemType::U32 | ElemType::I32 => out.extend(
                b.chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            ),
            ElemType::I64 => out.extend(
                b.chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap()) as u32),
            ),
            ElemType::F32 => out.extend(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u32),
            ),
        }
    }

    /// Appends row `row` as i64 values (integer tensors only).
    pub fn extend_i64(&self, row: usize, out: &mut Vec<i64>) {
        let b = self.row_bytes(row);
        match self.elem {
            ElemType::I64 => out.extend(
                b.chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap())),
            ),
            ElemType::I32 => out.extend(
                b.chunks_exact(4)
                    .map(|c| i32::from_le_bytes(c.try_into().unwrap()) as i64),
            ),
            ElemType::I8 => out.extend(b.iter().map(|&v| v as i8 as i64)),
            ElemType::U8 => out.extend(b.iter().map(|&v| v as i64)),
            ElemType::U16 => out.extend(
                b.chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]) as i64),
            ),
            ElemType::U32 => out.extend(
                b.chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as i64),
            ),
            ElemType::F32 => out.extend(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as i64),
            ),
        }
    }

    /// Appends row `row` as f32 values.
    pub fn extend_f32(&self, row: usize, out: &mut Vec<f32>) {
        let b = self.row_bytes(row);
        match self.elem {
            ElemType::F32 => out.extend(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            ),
            ElemType::I64 => out.extend(
                b.chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f32),
            ),
            ElemType::I8 => out.extend(b.iter().map(|&v| v as i8 as f32)),
            _ => {
                let mut tmp = Vec::new();
                self.extend_u32(row, &mut tmp);
                out.extend(tmp.into_iter().map(|v| v as f32));
            }
        }
    }
}

impl TensorFile {
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        // SAFETY: the map is read-only; Luminome never modifies a finished output in place (it
        // writes a new file and renames), so the mapped bytes do not change under us.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) }
            .with_context(|| format!("cannot map {}", path.display()))?;
        let (n, meta): (usize, Metadata) =
            safetensors::SafeTensors::read_metadata(&map).map_err(|e| {
                anyhow::anyhow!("{}: not a valid safetensors file: {e}", path.display())
            })?;
        let data_start = 8 + n;
        let tensors = meta
            .tensors()
            .into_iter()
            .map(|(k, v)| (k, v.clone()))
            .collect();
        let metadata = meta.metadata().clone().unwrap_or_default();
        Ok(Self {
            path: path.to_path_buf(),
            map,
            data_start,
            tensors,
            metadata,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn metadata(&self) -> &HashMap<String, String> {
        &self.metadata
    }

    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.tensors.keys().map(String::as_str).collect();
        v.sort();
        v
    }

    pub fn tensor(&self, name: &str) -> Option<TensorRef<'_>> {
        let info = self.tensors.get(name)?;
        let elem = ElemType::from_dtype(info.dtype)?;
        let (a, b) = info.data_offsets;
        Some(TensorRef {
            elem,
            shape: &info.shape,
            bytes: &self.map[self.data_start + a..self.data_start + b],
        })
    }

    /// Like [`TensorFile::tensor`], with an error naming the file when it is missing.
    pub fn require(&self, name: &str) -> Result<TensorRef<'_>> {
        self.tensor(name).ok_or_else(|| {
            anyhow::anyhow!(
                "{}: no tensor named {name:?} (has: {})",
                self.path.display(),
                self.names().join(", ")
            )
        })
    }
}
