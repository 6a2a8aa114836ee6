//! Writing a paired dataset record by record (memory bounded by one record).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};

use super::index::{pair_index_path, PairIndexRow};
use super::meta::{PairDatasetMeta, PAIR_DATASET_KIND, PAIR_DATASET_VERSION};
use crate::atomic::AtomicWriter;
use crate::tensorfile::{ColumnSpec, ElemType, StreamingTensorWriter};

/// One record to write: both strands' input ids and labels, the masked positions, the padding
/// mask, and its index row.
pub struct PairRow<'a> {
    pub ids_a: &'a [u32],
    pub ids_b: &'a [u32],
    pub labels_a: &'a [i64],
    pub labels_b: &'a [i64],
    pub mask_positions: &'a [u8],
    pub attention_mask: &'a [u8],
    pub index: PairIndexRow,
}

pub struct PairDatasetWriter {
    dest: PathBuf,
    tensors: StreamingTensorWriter,
    index: AtomicWriter,
    window: usize,
    written: u64,
    bytes: Vec<u8>,
}

impl PairDatasetWriter {
    /// A dataset of rows of `window` tokens at `dest`, its index beside it.
    pub fn create(dest: PathBuf, window: usize, info_keys: &[String]) -> Result<Self> {
        let cols = [
            "ids_a",
            "ids_b",
            "labels_a",
            "labels_b",
            "mask_positions",
            "attention_mask",
        ]
        .map(|name| {
            let elem = if name.starts_with("labels") {
                ElemType::I8
            } else {
                ElemType::U8
            };
            ColumnSpec::fixed(name, elem, &[window])
        })
        .to_vec();
        let tensors = StreamingTensorWriter::new(&dest, cols)?;
        let mut index = AtomicWriter::create(pair_index_path(&dest))?;
        writeln!(index, "{}", PairIndexRow::header(info_keys))?;
        Ok(Self {
            dest,
            tensors,
            index,
            window,
            written: 0,
            bytes: Vec::with_capacity(window),
        })
    }

    pub fn push(&mut self, mut row: PairRow<'_>) -> Result<()> {
        let l = self.window;
        for (what, n) in [
            ("ids_a", row.ids_a.len()),
            ("ids_b", row.ids_b.len()),
            ("labels_a", row.labels_a.len()),
            ("labels_b", row.labels_b.len()),
            ("mask_positions", row.mask_positions.len()),
            ("attention_mask", row.attention_mask.len()),
        ] {
            if n != l {
                bail!("internal: {what} of {n} values for rows of {l}");
            }
        }
        for (col, ids) in [row.ids_a, row.ids_b].into_iter().enumerate() {
            if ids.iter().any(|&v| v > u8::MAX as u32) {
                bail!("internal: token id above 255 in a paired dataset");
            }
            self.tensors.push_u32(col, ids)?;
        }
        for (col, labels) in [(2, row.labels_a), (3, row.labels_b)] {
            self.bytes.clear();
            for &v in labels {
                let v = i8::try_from(v)
                    .map_err(|_| anyhow::anyhow!("internal: label {v} does not fit int8"))?;
                self.bytes.push(v as u8);
            }
            self.tensors.push_bytes(col, &self.bytes)?;
        }
        self.tensors.push_bytes(4, row.mask_positions)?;
        self.tensors.push_bytes(5, row.attention_mask)?;
        row.index.record = self.written;
        writeln!(self.index, "{}", row.index.to_line())?;
        self.written += 1;
        Ok(())
    }

    pub fn len(&self) -> u64 {
        self.written
    }

    pub fn is_empty(&self) -> bool {
        self.written == 0
    }

    /// Writes the header and moves the dataset and its index into place (the index first, so a
    /// dataset at its final path always has one).
    pub fn finish(self, mut meta: PairDatasetMeta) -> Result<()> {
        if self.written == 0 {
            bail!("no records were produced; nothing written");
        }
        meta.kind = PAIR_DATASET_KIND.into();
        meta.format_version = PAIR_DATASET_VERSION;
        meta.num_records = self.written;
        meta.window = self.window;
        meta.index_file = pair_index_path(&self.dest)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut md = BTreeMap::new();
        md.insert("kind".to_string(), PAIR_DATASET_KIND.to_string());
        md.insert(
            "format_version".to_string(),
            PAIR_DATASET_VERSION.to_string(),
        );
        md.insert("luminome".to_string(), serde_json::to_string(&meta)?);
        let file = self.tensors.finish(md)?;
        let index = self.index;
        // Index, then dataset, with no SIGINT/SIGTERM between them.
        crate::temps::commit_section(|| {
            index.commit()?;
            file.commit()
        })
    }
}
