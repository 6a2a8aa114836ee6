//! Reading a paired dataset (memory-mapped), its shapes checked on open.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::index::{pair_index_path, read_pair_index, PairIndexRow};
use super::meta::{PairDatasetMeta, PAIR_DATASET_KIND, PAIR_DATASET_VERSION};
use crate::tensorfile::{ElemType, TensorFile};

/// Records `[batch, length]`, row-major.
#[derive(Debug, Clone, Default)]
pub struct PairBatch {
    pub batch: usize,
    pub length: usize,
    pub ids_a: Vec<u32>,
    pub ids_b: Vec<u32>,
    /// −100 off the masked positions.
    pub labels_a: Vec<i64>,
    pub labels_b: Vec<i64>,
    pub mask_positions: Vec<u8>,
    pub attention_mask: Vec<u8>,
}

pub struct PairDataset {
    path: PathBuf,
    file: TensorFile,
    meta: PairDatasetMeta,
    records: usize,
    length: usize,
}

const TENSORS: [(&str, ElemType); 6] = [
    ("ids_a", ElemType::U8),
    ("ids_b", ElemType::U8),
    ("labels_a", ElemType::I8),
    ("labels_b", ElemType::I8),
    ("mask_positions", ElemType::U8),
    ("attention_mask", ElemType::U8),
];

impl PairDataset {
    pub fn open(path: &Path) -> Result<Self> {
        let file = TensorFile::open(path)?;
        let kind = file.metadata().get("kind").cloned().unwrap_or_default();
        if kind != PAIR_DATASET_KIND {
            bail!(
                "{}: not a Luminome paired dataset (kind {kind:?}, expected {PAIR_DATASET_KIND:?}; luminome-mask-pairs writes them)",
                path.display()
            );
        }
        let meta: PairDatasetMeta = serde_json::from_str(
            file.metadata()
                .get("luminome")
                .map(String::as_str)
                .unwrap_or(""),
        )
        .with_context(|| format!("{}: unreadable paired-dataset metadata", path.display()))?;
        if meta.format_version > PAIR_DATASET_VERSION {
            bail!(
                "{}: paired-dataset format version {} is newer than this tool reads ({PAIR_DATASET_VERSION})",
                path.display(),
                meta.format_version
            );
        }
        let first = file.require("ids_a")?;
        let shape = first.shape.to_vec();
        if shape.len() != 2 {
            bail!("{}: ids_a must be 2-dimensional", path.display());
        }
        for (name, elem) in TENSORS {
            let t = file.require(name)?;
            if t.elem != elem || t.shape != shape.as_slice() {
                bail!(
                    "{}: tensor {name} is {:?} {:?}, expected {elem:?} {shape:?}",
                    path.display(),
                    t.elem,
                    t.shape
                );
            }
        }
        let dataset = Self {
            path: path.to_path_buf(),
            file,
            meta,
            records: shape[0],
            length: shape[1],
        };
        dataset.validate()?;
        Ok(dataset)
    }

    /// Every record's values, once on open, so that no tool trains or scores on part of a bad
    /// file before finding the rest: token ids within the vocabulary, labels −100 or a token id,
    /// the two masks 0 or 1. The first bad value is named by record and position.
    fn validate(&self) -> Result<()> {
        let vocab = self.meta.tokenizer.vocab_size();
        let ok_id = |v: u8| (v as usize) < vocab;
        let ok_label = |v: u8| v as i8 as i64 == super::IGNORE_INDEX || (v as i8 >= 0 && ok_id(v));
        let ok_flag = |v: u8| v <= 1;
        type Check<'a> = (&'a str, &'a dyn Fn(u8) -> bool, String);
        let checks: [Check; 6] = [
            (
                "ids_a",
                &ok_id,
                format!("a token id outside the vocabulary of {vocab} tokens"),
            ),
            (
                "ids_b",
                &ok_id,
                format!("a token id outside the vocabulary of {vocab} tokens"),
            ),
            (
                "labels_a",
                &ok_label,
                format!("a label that is neither -100 nor a token id below {vocab}"),
            ),
            (
                "labels_b",
                &ok_label,
                format!("a label that is neither -100 nor a token id below {vocab}"),
            ),
            (
                "mask_positions",
                &ok_flag,
                "a mask flag other than 0 or 1".into(),
            ),
            (
                "attention_mask",
                &ok_flag,
                "a mask flag other than 0 or 1".into(),
            ),
        ];
        for (name, ok, what) in checks {
            if let Some((r, i, v)) = self.file.require(name)?.first_bad_byte(ok) {
                let v = if name.starts_with("labels") {
                    (v as i8).to_string()
                } else {
                    v.to_string()
                };
                bail!(
                    "{}: record {r}, position {i}: {name} holds {v}, {what}",
                    self.path.display()
                );
            }
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn meta(&self) -> &PairDatasetMeta {
        &self.meta
    }

    pub fn len(&self) -> usize {
        self.records
    }

    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Row length L.
    pub fn length(&self) -> usize {
        self.length
    }

    pub fn batch(&self, records: &[usize]) -> Result<PairBatch> {
        let n = records.len() * self.length;
        let mut b = PairBatch {
            batch: records.len(),
            length: self.length,
            ids_a: Vec::with_capacity(n),
            ids_b: Vec::with_capacity(n),
            labels_a: Vec::with_capacity(n),
            labels_b: Vec::with_capacity(n),
            mask_positions: Vec::with_capacity(n),
            attention_mask: Vec::with_capacity(n),
        };
        let t = |name| self.file.require(name);
        let (ia, ib, la, lb, mp, am) = (
            t("ids_a")?,
            t("ids_b")?,
            t("labels_a")?,
            t("labels_b")?,
            t("mask_positions")?,
            t("attention_mask")?,
        );
        for &r in records {
            if r >= self.records {
                bail!(
                    "{}: record {r} is out of range (the dataset has {})",
                    self.path.display(),
                    self.records
                );
            }
            // Values were checked on open (`validate`).
            ia.extend_u32(r, &mut b.ids_a);
            ib.extend_u32(r, &mut b.ids_b);
            la.extend_i64(r, &mut b.labels_a);
            lb.extend_i64(r, &mut b.labels_b);
            b.mask_positions.extend_from_slice(mp.row_bytes(r));
            b.attention_mask.extend_from_slice(am.row_bytes(r));
        }
        Ok(b)
    }

    /// The index beside the dataset, one row per record.
    pub fn read_index(&self) -> Result<Vec<PairIndexRow>> {
        let rows = read_pair_index(&pair_index_path(&self.path), &self.meta.info_keys)?;
        if rows.len() != self.records {
            bail!(
                "{}: the index has {} rows but the dataset has {} records",
                pair_index_path(&self.path).display(),
                rows.len(),
                self.records
            );
        }
        Ok(rows)
    }
}
