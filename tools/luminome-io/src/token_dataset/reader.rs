//! Reading a token dataset: memory-mapped, one file or its shards.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::index::{index_path_for, read_index, shard_path, IndexRow};
use super::meta::{TokenDatasetMeta, TokenizerInfo, TOKEN_DATASET_KIND, TOKEN_DATASET_VERSION};
use crate::tensorfile::{ElemType, TensorFile};

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
            validate_shard(&tf, f, &m.tokenizer)?;
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
            // Ids, masks and their types were checked on open (`validate_shard`).
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

/// A shard's values, once on open (its shapes are checked by the caller): integer token ids
/// within the vocabulary, u8 masks of 0/1 (a float mask was read as 4 bytes a flag and failed
/// deep in the model), integer labels. The first bad value is named by record and position.
fn validate_shard(tf: &TensorFile, f: &Path, tok: &TokenizerInfo) -> Result<()> {
    let is_int = |e: ElemType| !matches!(e, ElemType::F32);
    let ids = tf.require("input_ids")?;
    if !is_int(ids.elem) {
        bail!(
            "{}: input_ids are {:?}; token ids are integers",
            f.display(),
            ids.elem
        );
    }
    if let Some(t) = tf.tensor("labels") {
        if !is_int(t.elem) {
            bail!(
                "{}: labels are {:?}; class labels are integers",
                f.display(),
                t.elem
            );
        }
    }
    for name in ["attention_mask", "soft_mask"] {
        let Some(t) = tf.tensor(name) else { continue };
        if t.elem != ElemType::U8 {
            bail!(
                "{}: {name} is {:?}; masks are u8 flags (0 or 1), as luminome-tokenize writes them",
                f.display(),
                t.elem
            );
        }
        if let Some((r, i, v)) = t.first_bad_byte(|v| v <= 1) {
            bail!(
                "{}: record {r}, position {i}: {name} holds {v}, not 0 or 1",
                f.display()
            );
        }
    }
    let vocab = tok.vocab_size() as u64;
    if vocab == 0 {
        bail!(
            "{}: the tokenizer in its metadata has an empty vocabulary, so no token id can be read (a damaged or edited file: tokenize the sequences again)",
            f.display()
        );
    }
    let mut row = Vec::new();
    for r in 0..ids.shape[0] {
        row.clear();
        ids.extend_i64(r, &mut row);
        if let Some(i) = row.iter().position(|&id| id < 0 || id as u64 >= vocab) {
            bail!(
                "{}: record {r}, position {i}: token id {} is outside the vocabulary of {vocab} tokens",
                f.display(),
                row[i]
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token_dataset::{IndexRow, TokenDatasetWriter, TokenDatasetWriterOptions, TokenRow};

    /// A two-record dataset, then the same with its ids rewritten as i64 with a −1 in record 1.
    #[test]
    fn a_token_id_outside_the_vocabulary_is_refused_naming_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.safetensors");
        let mut w = TokenDatasetWriter::new(TokenDatasetWriterOptions {
            dest: good.clone(),
            tokenizer: TokenizerInfo::nucleotide(true, true),
            max_length: Some(4),
            has_labels: false,
            has_soft_mask: false,
            shard_records: None,
            rc: "none".into(),
            sources: vec![],
            tool: "test".into(),
            tool_version: "0".into(),
            command_line: String::new(),
        })
        .unwrap();
        for i in 0..2u64 {
            w.push(TokenRow {
                ids: &[1, 5, 6, 2],
                soft_mask: None,
                label: None,
                index: IndexRow {
                    record: i,
                    shard: 0,
                    name: format!("s{i}"),
                    interval: None,
                    seq_length: 2,
                    window_offset: 0,
                    window_length: 2,
                    strand: '+',
                },
            })
            .unwrap();
        }
        w.finish().unwrap();
        assert_eq!(
            TokenDataset::open(&good)
                .unwrap()
                .batch(&[0, 1])
                .unwrap()
                .input_ids
                .len(),
            8
        );
        let bytes = std::fs::read(&good).unwrap();
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
        let ids: Vec<u8> = [1i64, 5, 6, 2, 1, -1, 6, 2]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mask = st.tensor("attention_mask").unwrap();
        let views = vec![
            (
                "input_ids".to_string(),
                safetensors::tensor::TensorView::new(safetensors::Dtype::I64, vec![2, 4], &ids)
                    .unwrap(),
            ),
            ("attention_mask".to_string(), mask),
        ];
        let bad = dir.path().join("bad.safetensors");
        safetensors::serialize_to_file(views, meta.metadata().clone(), &bad).unwrap();
        std::fs::copy(
            dir.path().join("good.index.tsv"),
            dir.path().join("bad.index.tsv"),
        )
        .unwrap();
        // Refused on open, before any batch: every record is checked once.
        let e = TokenDataset::open(&bad).err().unwrap().to_string();
        assert!(
            e.contains(
                "bad.safetensors: record 1, position 1: token id -1 is outside the vocabulary of 10"
            ),
            "{e}"
        );
        // A float attention mask: named as such (it failed deep in the model).
        let fmask: Vec<u8> = [1f32; 8].iter().flat_map(|v| v.to_le_bytes()).collect();
        let ok_ids: Vec<u8> = [1i64, 5, 6, 2, 1, 7, 6, 2]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let views = vec![
            (
                "input_ids".to_string(),
                safetensors::tensor::TensorView::new(safetensors::Dtype::I64, vec![2, 4], &ok_ids)
                    .unwrap(),
            ),
            (
                "attention_mask".to_string(),
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![2, 4], &fmask)
                    .unwrap(),
            ),
        ];
        safetensors::serialize_to_file(views, meta.metadata().clone(), &bad).unwrap();
        let e = TokenDataset::open(&bad).err().unwrap().to_string();
        assert!(
            e.contains("bad.safetensors: attention_mask is F32; masks are u8 flags"),
            "{e}"
        );
        // A tokenizer with an empty vocabulary in the metadata: said so, not "outside the
        // vocabulary of 0 tokens".
        let mut md = meta.metadata().clone().unwrap();
        let mut lum: serde_json::Value = serde_json::from_str(&md["luminome"]).unwrap();
        lum["tokenizer"]["vocab"] = serde_json::json!([]);
        md.insert("luminome".to_string(), lum.to_string());
        let views = vec![
            (
                "input_ids".to_string(),
                safetensors::tensor::TensorView::new(safetensors::Dtype::I64, vec![2, 4], &ok_ids)
                    .unwrap(),
            ),
            (
                "attention_mask".to_string(),
                st.tensor("attention_mask").unwrap(),
            ),
        ];
        safetensors::serialize_to_file(views, Some(md), &bad).unwrap();
        let e = TokenDataset::open(&bad).err().unwrap().to_string();
        assert!(
            e.contains("bad.safetensors: the tokenizer in its metadata has an empty vocabulary"),
            "{e}"
        );
    }
}
