//! Writing a token dataset with memory bounded by one record.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::index::{
    index_path_for, shard_path, IndexRow, PendingRows, INDEX_HEADER, UNKNOWN_LENGTH,
};
use super::meta::{TokenDatasetMeta, TokenizerInfo, TOKEN_DATASET_KIND, TOKEN_DATASET_VERSION};
use crate::atomic::{AtomicFile, AtomicWriter};
use crate::tensorfile::{ColumnSpec, ElemType, StreamingTensorWriter};

/// One tokenized record to write.
pub struct TokenRow<'a> {
    pub ids: &'a [u32],
    pub soft_mask: Option<&'a [u8]>,
    pub label: Option<i64>,
    pub index: IndexRow,
}

pub struct TokenDatasetWriterOptions {
    pub dest: PathBuf,
    pub tokenizer: TokenizerInfo,
    /// Fixed row length; `None`: pad to the longest record.
    pub max_length: Option<usize>,
    pub has_labels: bool,
    pub has_soft_mask: bool,
    /// Start a new shard every this many records; `None`: one file.
    pub shard_records: Option<u64>,
    pub rc: String,
    pub sources: Vec<String>,
    pub tool: String,
    pub tool_version: String,
    pub command_line: String,
}

/// Writes a token dataset with memory bounded by one record (see [`StreamingTensorWriter`]).
pub struct TokenDatasetWriter {
    opts: TokenDatasetWriterOptions,
    current: Option<StreamingTensorWriter>,
    current_rows: u64,
    finished_shards: Vec<(AtomicFile, u64, usize, Vec<i64>)>,
    shard_labels: Vec<i64>,
    index: AtomicWriter,
    total: u64,
    mask_row: Vec<u8>,
    all_labels: std::collections::BTreeSet<i64>,
    /// Index rows of a streamed record, held until its length is known.
    pending: PendingRows,
    /// An index line, reused.
    line: Vec<u8>,
}

impl TokenDatasetWriter {
    pub fn new(opts: TokenDatasetWriterOptions) -> Result<Self> {
        let mut index = AtomicWriter::create(index_path_for(&opts.dest))?;
        writeln!(index, "{INDEX_HEADER}")?;
        let mut w = Self {
            opts,
            current: None,
            current_rows: 0,
            finished_shards: Vec::new(),
            shard_labels: Vec::new(),
            index,
            total: 0,
            mask_row: Vec::new(),
            all_labels: Default::default(),
            pending: PendingRows::default(),
            line: Vec::new(),
        };
        w.start_shard()?;
        Ok(w)
    }

    fn shard_dest(&self, i: usize) -> PathBuf {
        if self.opts.shard_records.is_some() {
            shard_path(&self.opts.dest, i)
        } else {
            self.opts.dest.clone()
        }
    }

    fn start_shard(&mut self) -> Result<()> {
        let ids_elem = ElemType::smallest_unsigned_for(self.opts.tokenizer.vocab_size());
        let pad = self.opts.tokenizer.pad_id as u64;
        let mut cols = Vec::new();
        let row = |name: &str, elem, pad| match self.opts.max_length {
            Some(l) => ColumnSpec::fixed(name, elem, &[l]),
            None => ColumnSpec::ragged(name, elem, pad),
        };
        cols.push(row("input_ids", ids_elem, pad));
        cols.push(row("attention_mask", ElemType::U8, 0));
        if self.opts.has_soft_mask {
            cols.push(row("soft_mask", ElemType::U8, 0));
        }
        if self.opts.has_labels {
            cols.push(ColumnSpec::fixed("labels", ElemType::I64, &[]));
        }
        let dest = self.shard_dest(self.finished_shards.len());
        self.current = Some(StreamingTensorWriter::new(dest, cols)?);
        self.current_rows = 0;
        Ok(())
    }

    fn close_shard(&mut self) -> Result<()> {
        let Some(w) = self.current.take() else {
            return Ok(());
        };
        // A shard's header is written when the shard closes, before the shard count is known:
        // each shard records its own number and the records written up to it; readers take the
        // total from the shards themselves.
        let max_length = self.opts.max_length.unwrap_or(0);
        let labels = std::mem::take(&mut self.shard_labels);
        let shard = self
            .opts
            .shard_records
            .map(|_| (self.finished_shards.len(), 0));
        let meta = self.metadata(self.current_rows, max_length, labels.clone(), shard);
        let file = w.finish(meta)?;
        self.finished_shards
            .push((file, self.current_rows, max_length, labels));
        Ok(())
    }

    fn metadata(
        &self,
        rows: u64,
        max_length: usize,
        _labels: Vec<i64>,
        shard: Option<(usize, usize)>,
    ) -> BTreeMap<String, String> {
        let meta = TokenDatasetMeta {
            kind: TOKEN_DATASET_KIND.into(),
            format_version: TOKEN_DATASET_VERSION,
            tokenizer: self.opts.tokenizer.clone(),
            num_records: rows,
            total_records: self.total,
            max_length,
            has_labels: self.opts.has_labels,
            has_soft_mask: self.opts.has_soft_mask,
            label_values: self.all_labels.iter().copied().collect(),
            rc: self.opts.rc.clone(),
            sources: self.opts.sources.clone(),
            coordinates: "0-based half-open".into(),
            index_file: index_path_for(&self.opts.dest)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            shard,
            tool: self.opts.tool.clone(),
            tool_version: self.opts.tool_version.clone(),
            command_line: self.opts.command_line.clone(),
        };
        let mut m = BTreeMap::new();
        m.insert("kind".into(), TOKEN_DATASET_KIND.into());
        m.insert("format_version".into(), TOKEN_DATASET_VERSION.to_string());
        m.insert(
            "luminome".into(),
            serde_json::to_string(&meta).expect("serialisable"),
        );
        m
    }

    /// Records written so far.
    pub fn len(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    pub fn push(&mut self, row: TokenRow<'_>) -> Result<()> {
        if let Some(limit) = self.opts.shard_records {
            if self.current_rows >= limit {
                self.close_shard()?;
                self.start_shard()?;
            }
        }
        if let Some(l) = self.opts.max_length {
            if row.ids.len() != l {
                bail!(
                    "internal: row of {} ids for a dataset of length {l}",
                    row.ids.len()
                );
            }
        }
        let shard = self.finished_shards.len();
        let w = self.current.as_mut().expect("a shard is open");
        w.push_u32(0, row.ids)?;
        self.mask_row.clear();
        let pad = self.opts.tokenizer.pad_id;
        crate::byte_loops::extend_not_pad_mask(row.ids, pad, &mut self.mask_row);
        w.push_bytes(1, &self.mask_row)?;
        let mut col = 2;
        if self.opts.has_soft_mask {
            let sm = row.soft_mask.context("internal: soft mask missing")?;
            w.push_bytes(col, sm)?;
            col += 1;
        }
        if self.opts.has_labels {
            let label = row.label.context("internal: label missing")?;
            w.push_i64(col, &[label])?;
            self.all_labels.insert(label);
            self.shard_labels.push(label);
        }
        let index = IndexRow {
            record: self.total,
            shard,
            ..row.index
        };
        if index.seq_length == UNKNOWN_LENGTH {
            self.pending.push(&index)?;
        } else {
            if !self.pending.is_empty() {
                bail!("internal: a streamed record was not ended");
            }
            self.line.clear();
            index.append_line(&mut self.line);
            self.index.write_all(&self.line)?;
        }
        self.total += 1;
        self.current_rows += 1;
        Ok(())
    }

    /// Ends a streamed record: writes the held index lines of its rows, now that its length is
    /// known. Their interval is their window within the record, named by the record.
    pub fn end_record(&mut self, seq_length: u64) -> Result<()> {
        let index = &mut self.index;
        self.pending
            .end_record(seq_length, |line| Ok(index.write_all(line)?))
    }

    /// Finishes every shard and the index and moves them to their final names.
    pub fn finish(mut self) -> Result<()> {
        if !self.pending.is_empty() {
            bail!("internal: a streamed record was not ended");
        }
        if self.total == 0 {
            bail!("no records were produced; nothing written");
        }
        self.close_shard()?;
        // The index goes first, the dataset last: a dataset at its final path always has an
        // index beside it. No SIGINT/SIGTERM in between: the handler waits for the whole group,
        // so an interruption never leaves an index without its dataset.
        let (index, shards) = (self.index, self.finished_shards);
        crate::temps::commit_section(|| {
            index.commit()?;
            for (file, _, _, _) in shards {
                file.commit()?;
            }
            Ok(())
        })
    }
}
