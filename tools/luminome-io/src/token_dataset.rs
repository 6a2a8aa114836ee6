//! The token dataset: what `luminome-tokenize` and `luminome-mask-pairs` write and the model
//! tools read.
//!
//! One safetensors file (or numbered shards `<stem>.00000.safetensors`, ... for large inputs)
//! holding, for N records padded to length L:
//!
//! | tensor | dtype | shape | meaning |
//! |---|---|---|---|
//! | `input_ids` | smallest unsigned type holding the vocabulary | [N, L] | token ids, padded with the pad id |
//! | `attention_mask` | u8 | [N, L] | 1 for real tokens (specials included), 0 for padding |
//! | `labels` | i64 | [N] | optional: the record's integer label |
//! | `soft_mask` | u8 | [N, L] | optional: 1 where the token covers a lowercase (repeat-masked) base |
//!
//! `__metadata__` holds `kind` (`luminome.token_dataset`), `format_version`, and `luminome`: a
//! JSON document ([`TokenDatasetMeta`]) with the tokenizer (vocabulary included), the sources,
//! the tool version and command line. Beside it, `<stem>.index.tsv` has one line per record
//! (see [`IndexRow`]).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::atomic::{AtomicFile, AtomicWriter};
use crate::tensorfile::{ColumnSpec, ElemType, StreamingTensorWriter, TensorFile};

pub const TOKEN_DATASET_KIND: &str = "luminome.token_dataset";
pub const TOKEN_DATASET_VERSION: u32 = 1;

/// How ids were made and what they mean: enough for a later tool to decode ids and map tokens
/// back onto bases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenizerInfo {
    /// `nucleotide`, `kmer` or `hf`.
    pub scheme: String,
    /// Token strings, indexed by id.
    pub vocab: Vec<String>,
    pub pad_id: u32,
    pub unk_id: Option<u32>,
    pub cls_id: Option<u32>,
    pub sep_id: Option<u32>,
    pub mask_id: Option<u32>,
    /// Whether [CLS] starts and [SEP] ends every record.
    pub add_cls: bool,
    pub add_sep: bool,
    /// k-mer scheme: k and the step between consecutive k-mers (1 = overlapping, k = non-overlapping).
    pub k: Option<usize>,
    pub kmer_step: Option<usize>,
    /// `hf` scheme: the tokenizer.json it was made with, verbatim.
    pub hf_tokenizer_json: Option<String>,
}

impl TokenizerInfo {
    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// Bases covered by token `t` of a record, as `[start, end)` offsets into the record's
    /// window, for the fixed-width schemes; `None` for specials and the `hf` scheme.
    pub fn token_span(&self, token_index: usize, id: u32) -> Option<(usize, usize)> {
        if Some(id) == self.cls_id || Some(id) == self.sep_id || id == self.pad_id {
            return None;
        }
        let pos = token_index - usize::from(self.add_cls);
        match self.scheme.as_str() {
            "nucleotide" => Some((pos, pos + 1)),
            "kmer" => {
                let k = self.k?;
                let step = self.kmer_step?;
                let width = self
                    .vocab
                    .get(id as usize)
                    .map(|t| t.len())
                    .unwrap_or(k)
                    .min(k);
                Some((pos * step, pos * step + width))
            }
            _ => None,
        }
    }
}

/// The JSON document stored under `luminome` in a token dataset's `__metadata__`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenDatasetMeta {
    pub kind: String,
    pub format_version: u32,
    pub tokenizer: TokenizerInfo,
    /// Records in this file (this shard).
    pub num_records: u64,
    /// Records in the whole dataset, all shards.
    pub total_records: u64,
    /// Padded row length L.
    pub max_length: usize,
    pub has_labels: bool,
    pub has_soft_mask: bool,
    /// Distinct label values, sorted (empty without labels).
    pub label_values: Vec<i64>,
    /// Reverse-complement augmentation used: `none`, `both` or `only`.
    pub rc: String,
    pub sources: Vec<String>,
    /// `0-based half-open` — the convention of the coordinates in the index.
    pub coordinates: String,
    pub index_file: String,
    /// Shard number (and a second number reserved for the shard count, 0 = not recorded);
    /// `None` for a single-file dataset.
    pub shard: Option<(usize, usize)>,
    pub tool: String,
    pub tool_version: String,
    pub command_line: String,
}

/// One line of the record index TSV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexRow {
    /// 0-based record (row) number across the whole dataset.
    pub record: u64,
    pub shard: usize,
    /// Source record name (FASTA id, table row name, BED name).
    pub name: String,
    /// `chr:start-end(strand)` of the bases this row covers, 0-based half-open; `.` when unknown.
    pub coords: String,
    /// Length in bases of the source sequence the row was cut from.
    pub seq_length: u64,
    /// Offset in bases of this row's window within the source sequence (forward strand).
    pub window_offset: u64,
    /// Bases in this row's window.
    pub window_length: u64,
    /// `+` for the sequence as given, `-` for its reverse complement.
    pub strand: char,
}

pub const INDEX_HEADER: &str =
    "record\tshard\tname\tcoords\tseq_length\twindow_offset\twindow_length\tstrand";

/// The index path for a dataset path: `x.safetensors` → `x.index.tsv`.
pub fn index_path_for(dataset: &Path) -> PathBuf {
    let stem = dataset_stem(dataset);
    stem.with_file_name(format!(
        "{}.index.tsv",
        stem.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ))
}

fn dataset_stem(dataset: &Path) -> PathBuf {
    let s = dataset.to_string_lossy();
    PathBuf::from(s.strip_suffix(".safetensors").unwrap_or(&s).to_string())
}

/// Shard `i` of a sharded dataset: `x.safetensors` → `x.00003.safetensors`.
pub fn shard_path(dataset: &Path, i: usize) -> PathBuf {
    let stem = dataset_stem(dataset);
    PathBuf::from(format!("{}.{i:05}.safetensors", stem.display()))
}

/// `seq_length` of a row cut from a record that is still being streamed: the writer holds such
/// rows' index lines (a few bytes each) until [`TokenDatasetWriter::end_record`] gives the length.
pub const UNKNOWN_LENGTH: u64 = u64::MAX;

/// Index fields of a row held until its record's length is known.
struct PendingRow {
    record: u64,
    shard: usize,
    window_offset: u64,
    window_length: u64,
    strand: char,
}

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
    pending: Vec<PendingRow>,
    pending_name: String,
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
            pending: Vec::new(),
            pending_name: String::new(),
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
        self.mask_row
            .extend(row.ids.iter().map(|&id| u8::from(id != pad)));
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
        let i = &row.index;
        if i.seq_length == UNKNOWN_LENGTH {
            if !self.pending.is_empty() && self.pending_name != i.name {
                bail!("internal: rows of two streamed records interleaved");
            }
            self.pending_name.clone_from(&i.name);
            self.pending.push(PendingRow {
                record: self.total,
                shard,
                window_offset: i.window_offset,
                window_length: i.window_length,
                strand: i.strand,
            });
        } else {
            if !self.pending.is_empty() {
                bail!("internal: a streamed record was not ended");
            }
            writeln!(
                self.index,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                self.total,
                shard,
                i.name,
                i.coords,
                i.seq_length,
                i.window_offset,
                i.window_length,
                i.strand
            )?;
        }
        self.total += 1;
        self.current_rows += 1;
        Ok(())
    }

    /// Ends a streamed record: writes the held index lines of its rows, now that its length is
    /// known. Their coordinates are `name:start-end(strand)` within the record.
    pub fn end_record(&mut self, seq_length: u64) -> Result<()> {
        for p in std::mem::take(&mut self.pending) {
            writeln!(
                self.index,
                "{}\t{}\t{}\t{}:{}-{}({})\t{}\t{}\t{}\t{}",
                p.record,
                p.shard,
                self.pending_name,
                self.pending_name,
                p.window_offset,
                p.window_offset + p.window_length,
                p.strand,
                seq_length,
                p.window_offset,
                p.window_length,
                p.strand
            )?;
        }
        Ok(())
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
        // index beside it.
        self.index.commit()?;
        for (file, _, _, _) in self.finished_shards {
            file.commit()?;
        }
        Ok(())
    }
}

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

/// Reads a record index TSV.
pub fn read_index(path: &Path) -> Result<Vec<IndexRow>> {
    let (reader, _) = crate::compress::open(path, 1)?;
    let mut rows = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line =
            line.with_context(|| format!("{}: line {}: cannot read", path.display(), i + 1))?;
        if i == 0 {
            if line.trim_end() != INDEX_HEADER {
                bail!(
                    "{}: line 1: not a Luminome record index header",
                    path.display()
                );
            }
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || anyhow::anyhow!("{}: line {}: malformed index row", path.display(), i + 1);
        if f.len() != 8 {
            return Err(bad());
        }
        rows.push(IndexRow {
            record: f[0].parse().map_err(|_| bad())?,
            shard: f[1].parse().map_err(|_| bad())?,
            name: f[2].to_string(),
            coords: f[3].to_string(),
            seq_length: f[4].parse().map_err(|_| bad())?,
            window_offset: f[5].parse().map_err(|_| bad())?,
            window_length: f[6].parse().map_err(|_| bad())?,
            strand: f[7].chars().next().ok_or_else(bad)?,
        });
    }
    Ok(rows)
}
