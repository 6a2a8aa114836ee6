//! The retrieval pairs dataset: (query, positive passage) rows of token ids for dual encoders.
//! Written by `luminome-tokenize --format pairs`, read by `luminome-train dual` and
//! `luminome-predict`.
//!
//! One safetensors file with, for N pairs (queries padded to Lq tokens, passages to Lp):
//!
//! | tensor | dtype | shape | meaning |
//! |---|---|---|---|
//! | `query_ids`, `passage_ids` | u8/u16/u32 (the smallest for the vocabulary) | [N, Lq], [N, Lp] | token ids, padded with the tokenizer's pad id |
//! | `query_mask`, `passage_mask` | u8 | [N, Lq], [N, Lp] | 1 for a token, 0 for padding |
//! | `query_group`, `passage_group` | u32 | [N] | the same number for rows whose query (passage) has the same tokens: 0, 1, … in order of first appearance |
//!
//! The groups say which rows share a query or a passage: a dual encoder's in-batch negatives must
//! not include another row's copy of the positive, and evaluation scores a query against each
//! distinct passage once.
//!
//! `__metadata__`: `kind` (`luminome.retrieval_pairs`), `format_version`, `luminome` (JSON,
//! [`RetrievalPairsMeta`]). Beside it `<stem>.index.tsv`: `record query_id passage_id line`
//! (`line`: the input line of the pair).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::atomic::AtomicWriter;
use crate::tensorfile::{ColumnSpec, ElemType, StreamingTensorWriter, TensorFile};
use crate::token_dataset::{index_path_for, TokenBatch, TokenizerInfo};

pub const RETRIEVAL_PAIRS_KIND: &str = "luminome.retrieval_pairs";
pub const RETRIEVAL_PAIRS_VERSION: u32 = 1;
pub const RETRIEVAL_INDEX_HEADER: &str = "record\tquery_id\tpassage_id\tline";

/// The JSON under `luminome` in a retrieval pairs dataset's `__metadata__`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RetrievalPairsMeta {
    pub kind: String,
    pub format_version: u32,
    /// One tokenizer for both sides.
    pub tokenizer: TokenizerInfo,
    /// Whether the sides were read as text (a `tokenizer.json` over any text) rather than DNA.
    pub text: bool,
    pub num_records: u64,
    pub distinct_queries: u64,
    pub distinct_passages: u64,
    /// Row lengths Lq and Lp (tokens, specials included).
    pub query_length: usize,
    pub passage_length: usize,
    pub index_file: String,
    /// Rows or sides a rule changed or flagged (e.g. `truncated_passages`,
    /// `queries_with_several_positives`).
    pub counts: BTreeMap<String, u64>,
    pub sources: Vec<String>,
    pub tool: String,
    pub tool_version: String,
    pub command_line: String,
}

/// One line of the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrievalIndexRow {
    pub record: u64,
    pub query_id: String,
    pub passage_id: String,
    /// 1-based line of the input file.
    pub line: u64,
}

/// Reads the index beside a retrieval pairs dataset.
pub fn read_retrieval_index(path: &Path) -> Result<Vec<RetrievalIndexRow>> {
    let (reader, _) = crate::compress::open(path, 1)?;
    let mut rows = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{}: line {}", path.display(), i + 1))?;
        if i == 0 {
            if line != RETRIEVAL_INDEX_HEADER {
                bail!(
                    "{}: line 1: expected the header {RETRIEVAL_INDEX_HEADER:?}",
                    path.display()
                );
            }
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let parse = |s: &str, what: &str| -> Result<u64> {
            s.parse()
                .with_context(|| format!("{}: line {}: bad {what} {s:?}", path.display(), i + 1))
        };
        if f.len() != 4 {
            bail!(
                "{}: line {}: expected 4 columns, found {}",
                path.display(),
                i + 1,
                f.len()
            );
        }
        rows.push(RetrievalIndexRow {
            record: parse(f[0], "record")?,
            query_id: f[1].to_string(),
            passage_id: f[2].to_string(),
            line: parse(f[3], "line")?,
        });
    }
    Ok(rows)
}

/// Writes a retrieval pairs dataset row by row (rows spill to temporary files; memory is bounded
/// by one row).
pub struct RetrievalPairsWriter {
    dest: PathBuf,
    tensors: StreamingTensorWriter,
    index: AtomicWriter,
    written: u64,
    groups: [u32; 2],
    lengths: [usize; 2],
}

impl RetrievalPairsWriter {
    pub fn create(dest: PathBuf, tokenizer: &TokenizerInfo) -> Result<Self> {
        let id = ElemType::smallest_unsigned_for(tokenizer.vocab_size());
        let pad = u64::from(tokenizer.pad_id);
        let cols = vec![
            ColumnSpec::ragged("query_ids", id, pad),
            ColumnSpec::ragged("query_mask", ElemType::U8, 0),
            ColumnSpec::ragged("passage_ids", id, pad),
            ColumnSpec::ragged("passage_mask", ElemType::U8, 0),
            ColumnSpec::fixed("query_group", ElemType::U32, &[]),
            ColumnSpec::fixed("passage_group", ElemType::U32, &[]),
        ];
        let tensors = StreamingTensorWriter::new(&dest, cols)?;
        let mut index = AtomicWriter::create(index_path_for(&dest))?;
        writeln!(index, "{RETRIEVAL_INDEX_HEADER}")?;
        Ok(Self {
            dest,
            tensors,
            index,
            written: 0,
            groups: [0, 0],
            lengths: [0, 0],
        })
    }

    /// Adds one pair: its token ids (unpadded), the groups of its query and passage, and its
    /// index line (the record number is set here). Ids and names may not contain tabs or
    /// newlines (the caller's input checks refuse them).
    pub fn push(
        &mut self,
        query: &[u32],
        passage: &[u32],
        groups: [u32; 2],
        mut index: RetrievalIndexRow,
    ) -> Result<()> {
        if query.is_empty() || passage.is_empty() {
            bail!("internal: an empty side in a retrieval pair");
        }
        for (col, ids) in [(0, query), (2, passage)] {
            self.tensors.push_u32(col, ids)?;
            self.tensors.push_bytes(col + 1, &vec![1u8; ids.len()])?;
        }
        self.tensors.push_u32(4, &[groups[0]])?;
        self.tensors.push_u32(5, &[groups[1]])?;
        self.groups = [
            self.groups[0].max(groups[0] + 1),
            self.groups[1].max(groups[1] + 1),
        ];
        self.lengths = [
            self.lengths[0].max(query.len()),
            self.lengths[1].max(passage.len()),
        ];
        index.record = self.written;
        writeln!(
            self.index,
            "{}\t{}\t{}\t{}",
            index.record, index.query_id, index.passage_id, index.line
        )?;
        self.written += 1;
        Ok(())
    }

    pub fn len(&self) -> u64 {
        self.written
    }

    pub fn is_empty(&self) -> bool {
        self.written == 0
    }

    /// Writes the header and moves the dataset and its index into place (the index first).
    pub fn finish(self, mut meta: RetrievalPairsMeta) -> Result<()> {
        if self.written == 0 {
            bail!("no pairs were read; nothing written");
        }
        meta.kind = RETRIEVAL_PAIRS_KIND.into();
        meta.format_version = RETRIEVAL_PAIRS_VERSION;
        meta.num_records = self.written;
        meta.distinct_queries = u64::from(self.groups[0]);
        meta.distinct_passages = u64::from(self.groups[1]);
        meta.query_length = self.lengths[0];
        meta.passage_length = self.lengths[1];
        meta.index_file = index_path_for(&self.dest)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut md = BTreeMap::new();
        md.insert("kind".to_string(), RETRIEVAL_PAIRS_KIND.to_string());
        md.insert(
            "format_version".to_string(),
            RETRIEVAL_PAIRS_VERSION.to_string(),
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

/// Which side of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Query,
    Passage,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Self::Query => "query",
            Self::Passage => "passage",
        }
    }
}

/// A retrieval pairs dataset opened for reading (memory-mapped).
pub struct RetrievalPairs {
    path: PathBuf,
    file: TensorFile,
    meta: RetrievalPairsMeta,
    len: usize,
    groups: [Vec<u32>; 2],
}

impl RetrievalPairs {
    pub fn open(path: &Path) -> Result<Self> {
        let file = TensorFile::open(path)?;
        let kind = file.metadata().get("kind").cloned().unwrap_or_default();
        if kind != RETRIEVAL_PAIRS_KIND {
            bail!(
                "{}: not a Luminome retrieval pairs dataset (kind {kind:?}, expected {RETRIEVAL_PAIRS_KIND:?}; make one with luminome-tokenize --format pairs)",
                path.display()
            );
        }
        let meta: RetrievalPairsMeta = serde_json::from_str(
            file.metadata()
                .get("luminome")
                .map(String::as_str)
                .unwrap_or(""),
        )
        .with_context(|| format!("{}: unreadable dataset metadata", path.display()))?;
        if meta.format_version > RETRIEVAL_PAIRS_VERSION {
            bail!(
                "{}: format version {} is newer than this tool reads ({RETRIEVAL_PAIRS_VERSION})",
                path.display(),
                meta.format_version
            );
        }
        let n = file
            .require("query_ids")?
            .shape
            .first()
            .copied()
            .unwrap_or(0);
        for (ids, mask) in [("query_ids", "query_mask"), ("passage_ids", "passage_mask")] {
            let t = file.require(ids)?;
            let m = file.require(mask)?;
            if t.shape.len() != 2 || t.shape[0] != n || t.shape[1] == 0 {
                bail!(
                    "{}: {ids} has shape {:?}; expected [{n}, L] with L ≥ 1",
                    path.display(),
                    t.shape
                );
            }
            if m.shape != t.shape || m.elem != ElemType::U8 {
                bail!(
                    "{}: {mask} must be u8 of the shape of {ids} {:?}, found {:?}",
                    path.display(),
                    t.shape,
                    m.shape
                );
            }
        }
        let mut groups: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
        for (k, name) in ["query_group", "passage_group"].iter().enumerate() {
            let t = file.require(name)?;
            if t.shape != [n] {
                bail!(
                    "{}: {name} has shape {:?}; expected [{n}]",
                    path.display(),
                    t.shape
                );
            }
            let mut v = Vec::with_capacity(n);
            for r in 0..n {
                t.extend_u32(r, &mut v);
            }
            groups[k] = v;
        }
        if n == 0 {
            bail!("{}: the dataset holds no pairs", path.display());
        }
        let pairs = Self {
            path: path.to_path_buf(),
            file,
            meta,
            len: n,
            groups,
        };
        pairs.validate()?;
        Ok(pairs)
    }

    /// Every row of both sides, once on open: token ids within the vocabulary, mask flags 0/1,
    /// and at least one token that stands for sequence or text under the mask — a side with none
    /// would be embedded as the zero vector (mean pooling over nothing) and still rank.
    fn validate(&self) -> Result<()> {
        let tok = &self.meta.tokenizer;
        let vocab = tok.vocab_size();
        for (ids, mask, side) in [
            ("query_ids", "query_mask", "query"),
            ("passage_ids", "passage_mask", "passage"),
        ] {
            let (t, m) = (self.file.require(ids)?, self.file.require(mask)?);
            if let Some((r, i, v)) = m.first_bad_byte(|f| f <= 1) {
                bail!(
                    "{}: pair {r}, position {i}: {mask} holds {v}, a mask flag other than 0 or 1",
                    self.path.display()
                );
            }
            let mut row = Vec::new();
            for r in 0..self.len {
                row.clear();
                t.extend_u32(r, &mut row);
                let flags = m.row_bytes(r);
                if let Some(i) = row.iter().position(|&id| id as usize >= vocab) {
                    bail!(
                        "{}: pair {r}, position {i}: {ids} holds {}, a token id outside the vocabulary of {vocab} tokens",
                        self.path.display(),
                        row[i] as i32
                    );
                }
                if !row
                    .iter()
                    .zip(flags)
                    .any(|(&id, &f)| f == 1 && !tok.is_boundary(id))
                {
                    bail!(
                        "{}: pair {r}: the {side} has no tokens under its mask (only padding, [CLS] or [SEP]): it would be embedded as zeros",
                        self.path.display()
                    );
                }
            }
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn meta(&self) -> &RetrievalPairsMeta {
        &self.meta
    }

    pub fn tokenizer(&self) -> &TokenizerInfo {
        &self.meta.tokenizer
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Row length of a side.
    pub fn length(&self, side: Side) -> usize {
        let name = match side {
            Side::Query => "query_ids",
            Side::Passage => "passage_ids",
        };
        self.file.tensor(name).map_or(0, |t| t.shape[1])
    }

    /// The group of each row's query (`Side::Query`) or passage: rows with equal numbers share
    /// it.
    pub fn groups(&self, side: Side) -> &[u32] {
        match side {
            Side::Query => &self.groups[0],
            Side::Passage => &self.groups[1],
        }
    }

    /// One side of the given rows as a token batch (no labels).
    pub fn batch(&self, side: Side, records: &[usize]) -> Result<TokenBatch> {
        let (ids, mask) = match side {
            Side::Query => ("query_ids", "query_mask"),
            Side::Passage => ("passage_ids", "passage_mask"),
        };
        let ids = self.file.require(ids)?;
        let mask = self.file.require(mask)?;
        let l = ids.shape[1];
        let mut b = TokenBatch {
            batch: records.len(),
            max_length: l,
            input_ids: Vec::with_capacity(records.len() * l),
            attention_mask: Vec::with_capacity(records.len() * l),
            soft_mask: None,
            labels: None,
        };
        for &r in records {
            if r >= self.len {
                bail!("record {r} is out of range (the dataset has {})", self.len);
            }
            ids.extend_u32(r, &mut b.input_ids);
            b.attention_mask.extend_from_slice(mask.row_bytes(r));
        }
        Ok(b)
    }

    /// Reads the index beside the dataset.
    /// The pairs' index rows, one per pair (a stale or cut index is refused here, so callers
    /// can index it by row).
    pub fn read_index(&self) -> Result<Vec<RetrievalIndexRow>> {
        let path = index_path_for(&self.path);
        let rows = read_retrieval_index(&path)?;
        if rows.len() != self.len {
            bail!(
                "{}: the pair index {} has {} rows but the dataset has {} pairs",
                self.path.display(),
                path.display(),
                rows.len(),
                self.len
            );
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(tok: &TokenizerInfo) -> RetrievalPairsMeta {
        RetrievalPairsMeta {
            kind: String::new(),
            format_version: 0,
            tokenizer: tok.clone(),
            text: false,
            num_records: 0,
            distinct_queries: 0,
            distinct_passages: 0,
            query_length: 0,
            passage_length: 0,
            index_file: String::new(),
            counts: BTreeMap::new(),
            sources: vec![],
            tool: "test".into(),
            tool_version: "0".into(),
            command_line: String::new(),
        }
    }

    #[test]
    fn written_pairs_read_back_padded_with_their_groups_and_index() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("p.safetensors");
        let tok = TokenizerInfo::nucleotide(true, true);
        let mut w = RetrievalPairsWriter::create(dest.clone(), &tok).unwrap();
        let row = |q: &str, p: &str, line| RetrievalIndexRow {
            record: 0,
            query_id: q.into(),
            passage_id: p.into(),
            line,
        };
        w.push(
            &[1, 5, 6, 2],
            &[1, 5, 6, 7, 8, 2],
            [0, 0],
            row("q1", "p1", 2),
        )
        .unwrap();
        w.push(&[1, 8, 2], &[1, 7, 2], [1, 1], row("q2", "p2", 3))
            .unwrap();
        w.push(
            &[1, 9, 9, 9, 9, 2],
            &[1, 5, 6, 7, 8, 2],
            [2, 0],
            row("q3", "p1", 4),
        )
        .unwrap();
        w.finish(meta(&tok)).unwrap();
        let d = RetrievalPairs::open(&dest).unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!((d.length(Side::Query), d.length(Side::Passage)), (6, 6));
        assert_eq!(d.groups(Side::Passage), &[0, 1, 0]);
        assert_eq!(d.meta().distinct_queries, 3);
        assert_eq!(d.meta().distinct_passages, 2);
        let b = d.batch(Side::Query, &[1]).unwrap();
        assert_eq!(b.input_ids, vec![1, 8, 2, 0, 0, 0]);
        assert_eq!(b.attention_mask, vec![1, 1, 1, 0, 0, 0]);
        assert!(d.batch(Side::Query, &[3]).is_err());
        let idx = d.read_index().unwrap();
        assert_eq!(
            idx[2],
            RetrievalIndexRow {
                record: 2,
                ..row("q3", "p1", 4)
            }
        );
    }

    #[test]
    fn a_side_without_tokens_or_with_an_id_outside_the_vocabulary_is_refused_on_open() {
        let tok = TokenizerInfo::nucleotide(true, true);
        let row = |line| RetrievalIndexRow {
            record: 0,
            query_id: format!("q{line}"),
            passage_id: format!("p{line}"),
            line,
        };
        for (query, says) in [
            (
                &[1u32, 2][..],
                "pair 1: the query has no tokens under its mask",
            ),
            (
                &[1, 5, 40, 2][..],
                "pair 1, position 2: query_ids holds 40, a token id outside",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let dest = dir.path().join("p.safetensors");
            let mut w = RetrievalPairsWriter::create(dest.clone(), &tok).unwrap();
            w.push(&[1, 5, 6, 2], &[1, 7, 8, 2], [0, 0], row(2))
                .unwrap();
            w.push(query, &[1, 6, 6, 2], [1, 1], row(3)).unwrap();
            w.finish(meta(&tok)).unwrap();
            let e = RetrievalPairs::open(&dest).err().unwrap().to_string();
            assert!(e.contains("p.safetensors: ") && e.contains(says), "{e}");
        }
    }

    #[test]
    fn other_files_are_refused_by_kind() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("t.safetensors");
        let mut md = BTreeMap::new();
        md.insert("kind".to_string(), "luminome.token_dataset".to_string());
        let w = StreamingTensorWriter::new(
            &dest,
            vec![ColumnSpec::fixed("input_ids", ElemType::U8, &[2])],
        )
        .unwrap();
        w.finish(md).unwrap().commit().unwrap();
        let e = RetrievalPairs::open(&dest).err().unwrap().to_string();
        assert!(e.contains("not a Luminome retrieval pairs dataset"), "{e}");
    }
}
