//! Reading a token dataset: memory-mapped, one file or its shards.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::index::{index_path_for, read_index, shard_path, IndexRow};
use super::meta::{TokenDatasetMeta, TokenizerInfo, TOKEN_DATASET_KIND, TOKEN_DATASET_VERSION};
use crate::tensorfile::TensorFile;

/// A batch of records read from a token dataset, row-major `[batch, max_length]`.
#[derive(Debug, Clone, Default)]
pub struct TokenBatch {
    pub batch: usize,
    pub max_length: usize,
    pub input_ids: Vec<u32>,
    pub attention_mask: Vec<u8>,
    pub soft_mask: Option<Vec<u8>>,
    pub labels: Option<Vec<i64>>,
}

/// A token dataset opened for reading (memory-mapped, one file or its shards).
pub struct TokenDataset {
    path: PathBuf,
    shards: Vec<TensorFile>,
    /// Cumulative record counts: shard `i` holds records `starts[i]..starts[i + 1]`.
    starts: Vec<u64>,
    meta: TokenDatasetMeta,
    max_length: usize,
}

impl TokenDataset {
    /// Opens `x.safetensors`, or its shards `x.00000.safetensors`, ... when `x.safetensors`
    /// does not exist.
    pub fn open(path: &Path) -> Result<Self> {
        let files: Vec<PathBuf> = if path.exists() {
            vec![path.to_path_buf()]
        } else {
            let mut v = Vec::new();
            while shard_path(path, v.len()).exists() {
                v.push(shard_path(path, v.len()));
            }
            if v.is_empty() {
                bail!(
                    "{}: no such dataset (nor shards {})",
                    path.display(),
                    shard_path(path, 0).display()
                );
            }
            v
        };
        let mut shards = Vec::new();
        let mut starts = vec![0u64];
        let mut meta: Option<TokenDatasetMeta> = None;
        let mut max_length = None;
        for f in &files {
            let tf = TensorFile::open(f)?;
            let kind = tf.metadata().get("kind").cloned().unwrap_or_default();
            if kind != TOKEN_DATASET_KIND {
                bail!(
                    "{}: not a Luminome token dataset (kind {:?}, expected {TOKEN_DATASET_KIND:?})",
                    f.display(),
                    kind
                );
            }
            let m: TokenDatasetMeta = serde_json::from_str(
                tf.metadata()
                    .get("luminome")
                    .map(String::as_str)
                    .unwrap_or(""),
            )
            .with_context(|| format!("{}: unreadable dataset metadata", f.display()))?;
            if m.format_version > TOKEN_DATASET_VERSION {
                bail!("{}: dataset format version {} is newer than this tool reads ({TOKEN_DATASET_VERSION})", f.display(), m.format_version);
            }
            let ids = tf.require("input_ids")?;
            if ids.shape.len() != 2 {
                bail!("{}: input_ids must be 2-dimensional", f.display());
            }
            let l = ids.shape[1];
            // Every per-record tensor must have a row per record (a short one would be read past
            // its end) and, for the masks, the rows' length.
            let n = ids.shape[0];
            for (name, row_shape) in [
                ("attention_mask", vec![l]),
                ("soft_mask", vec![l]),
                ("labels", vec![]),
            ] {
                let Some(t) = tf.tensor(name) else {
                    if name == "attention_mask" {
                        tf.require(name)?;
                    }
                    continue;
                };
                let mut want = vec![n];
                want.extend(row_shape);
                if t.shape != want.as_slice() {
                    bail!(
                        "{}: {name} has shape {:?}, but input_ids {:?} needs {want:?}",
                        f.display(),
                        t.shape,
                        ids.shape
                    );
                }
            }
            if *max_length.get_or_insert(l) != l {
                bail!("{}: shards have different row lengths", f.display());
            }
            starts.push(starts.last().unwrap() + ids.shape[0] as u64);
            if meta.is_none() {
                meta = Some(m);
            }
            shards.push(tf);
        }
        let mut meta = meta.expect("at least one shard");
        meta.total_records = *starts.last().unwrap();
        Ok(Self {
            path: path.to_path_buf(),
            shards,
            starts,
            meta,
            max_length: max_length.unwrap_or(0),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn meta(&self) -> &TokenDatasetMeta {
        &self.meta
    }

    pub fn tokenizer(&self) -> &TokenizerInfo {
        &self.meta.tokenizer
    }

    pub fn len(&self) -> usize {
        *self.starts.last().unwrap() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn max_length(&self) -> usize {
        self.max_length
    }

    pub fn has_labels(&self) -> bool {
        self.shards.iter().all(|s| s.tensor("labels").is_some())
    }

    pub fn has_soft_mask(&self) -> bool {
        self.shards.iter().all(|s| s.tensor("soft_mask").is_some())
    }

    fn locate(&self, record: usize) -> (usize, usize) {
        let r = record as u64;
        let shard = self.starts.partition_point(|&s| s <= r) - 1;
        (shard, (r - self.starts[shard]) as usize)
    }

    /// Reads the given records into one batch.
    pub fn batch(&self, records: &[usize]) -> Result<TokenBatch> {
        let mut b = TokenBatch {
            batch: records.len(),
            max_length: self.max_length,
            input_ids: Vec::with_capacity(records.len() * self.max_length),
            attention_mask: Vec::with_capacity(records.len() * self.max_length),
            soft_mask: self.has_soft_mask().then(Vec::new),
            labels: self.has_labels().then(Vec::new),
        };
        for &r in records {
            if r >= self.len() {
                bail!(
                    "record {r} is out of range (the dataset has {})",
                    self.len()
                );
            }
            let (s, row) = self.locate(r);
            let shard = &self.shards[s];
            shard
                .require("input_ids")?
                .extend_u32(row, &mut b.input_ids);
            b.attention_mask
                .extend_from_slice(shard.require("attention_mask")?.row_bytes(row));
            if let Some(sm) = b.soft_mask.as_mut() {
                sm.extend_from_slice(shard.require("soft_mask")?.row_bytes(row));
            }
            if let Some(l) = b.labels.as_mut() {
                shard.require("labels")?.extend_i64(row, l);
            }
        }
        Ok(b)
    }

    /// Reads the record index beside the dataset.
    pub fn read_index(&self) -> Result<Vec<IndexRow>> {
        read_index(&index_path_for(&self.path))
    }
}
