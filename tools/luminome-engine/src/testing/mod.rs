//! Small helpers for tests and examples: the single-nucleotide vocabulary of
//! `luminome-tokenize`, writers of token datasets from in-memory sequences, and (one file per
//! kind) paired-strand datasets, region datasets, retrieval tasks and untrained checkpoints.

mod checkpoints;
mod pairs;
mod published;
mod regions;
mod retrieval;

pub use checkpoints::{
    tabular_model, write_bag_of_tokens_checkpoint, write_cnn_checkpoint, write_tabular_checkpoint,
    write_transformer_classifier_checkpoint,
};
pub use pairs::write_pair_dataset;
pub use published::{encode_published, write_published_checkpoint};
pub use regions::{
    write_expression_checkpoint, write_region_dataset, write_region_dataset_features,
    write_region_dataset_named,
};
pub use retrieval::{
    ecoli_retrieval_task, write_dual_checkpoint, write_retrieval_pairs, write_retrieval_pairs_k,
    RetrievalTriples,
};

use std::path::Path;

use anyhow::Result;
use luminome_io::token_dataset::{
    IndexRow, TokenDatasetWriter, TokenDatasetWriterOptions, TokenRow, TokenizerInfo,
};

/// The largest absolute element-wise difference of two tensors of one shape, as f64 (tests
/// comparing two computations of the same thing). Panics on a shape or dtype mismatch.
pub fn max_abs_diff(a: &candle_core::Tensor, b: &candle_core::Tensor) -> f64 {
    (a - b)
        .and_then(|d| d.abs())
        .and_then(|d| d.to_dtype(candle_core::DType::F64))
        .and_then(|d| d.max_all())
        .and_then(|d| d.to_scalar::<f64>())
        .expect("two tensors of one shape and dtype")
}

/// The largest |a − b| of two `[B, L, D]` tensors at the positions where `mask` (`[B, L]`) is
/// 1, and at the others (padding): how tests compare hidden states with a reference's.
pub fn max_abs_diff_masked(
    a: &candle_core::Tensor,
    b: &candle_core::Tensor,
    mask: &candle_core::Tensor,
) -> (f64, f64) {
    assert_eq!(a.dims(), b.dims(), "two tensors of one shape");
    let m = mask
        .to_dtype(a.dtype())
        .and_then(|m| m.unsqueeze(2))
        .expect("a [B, L] mask");
    let on = a.broadcast_mul(&m).expect("mask fits");
    let off = (1.0 - &m)
        .and_then(|k| a.broadcast_mul(&k))
        .expect("mask fits");
    let on_b = b.broadcast_mul(&m).expect("mask fits");
    let off_b = (1.0 - &m)
        .and_then(|k| b.broadcast_mul(&k))
        .expect("mask fits");
    (max_abs_diff(&on, &on_b), max_abs_diff(&off, &off_b))
}

/// [PAD]=0 [CLS]=1 [SEP]=2 [MASK]=3 [UNK]=4 A=5 C=6 G=7 T=8 N=9, [CLS] seq [SEP].
pub fn nucleotide_tokenizer() -> TokenizerInfo {
    TokenizerInfo::nucleotide(true, true)
}

/// Token ids of a DNA string in the nucleotide vocabulary, with [CLS] and [SEP].
pub fn encode(seq: &[u8]) -> Vec<u32> {
    let mut ids = vec![1];
    ids.extend(seq.iter().map(|b| match b.to_ascii_uppercase() {
        b'A' => 5,
        b'C' => 6,
        b'G' => 7,
        b'T' => 8,
        b'N' => 9,
        _ => 4,
    }));
    ids.push(2);
    ids
}

/// ids `[B, len]` (u32) and mask `[B, len]` (f32) of DNA strings, each [CLS] seq [SEP] then
/// padding, on the CPU (for tests that run models directly).
pub fn padded_batch(seqs: &[&[u8]], len: usize) -> (candle_core::Tensor, candle_core::Tensor) {
    let mut ids = Vec::new();
    let mut mask = Vec::new();
    for s in seqs {
        let mut row = encode(s);
        let n = row.len();
        row.resize(len, 0);
        ids.extend(row);
        mask.extend((0..len).map(|i| if i < n { 1f32 } else { 0.0 }));
    }
    let dev = candle_core::Device::Cpu;
    (
        candle_core::Tensor::from_vec(ids, (seqs.len(), len), &dev).expect("ids"),
        candle_core::Tensor::from_vec(mask, (seqs.len(), len), &dev).expect("mask"),
    )
}

/// Writes sequences (and optional labels) as a token dataset padded to `max_length`.
pub fn write_dataset(
    dest: &Path,
    seqs: &[Vec<u8>],
    labels: Option<&[i64]>,
    max_length: usize,
) -> Result<()> {
    let encode = |s: &[u8]| Ok(encode(s));
    write_token_dataset(
        dest,
        nucleotide_tokenizer(),
        &encode,
        seqs,
        labels,
        max_length,
    )
}

/// Writes sequences (and optional labels) as a token dataset of `tok`, each encoded by
/// `encode_row` and padded with its `[PAD]` to `max_length`.
pub fn write_token_dataset(
    dest: &Path,
    tok: TokenizerInfo,
    encode_row: &dyn Fn(&[u8]) -> Result<Vec<u32>>,
    seqs: &[Vec<u8>],
    labels: Option<&[i64]>,
    max_length: usize,
) -> Result<()> {
    let pad = tok.pad_id;
    let mut w = TokenDatasetWriter::new(TokenDatasetWriterOptions {
        dest: dest.to_path_buf(),
        tokenizer: tok,
        max_length: Some(max_length),
        has_labels: labels.is_some(),
        has_soft_mask: false,
        shard_records: None,
        rc: "none".into(),
        sources: vec![],
        tool: "luminome-engine tests".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line: String::new(),
    })?;
    for (i, s) in seqs.iter().enumerate() {
        let mut ids = encode_row(s)?;
        anyhow::ensure!(
            ids.len() <= max_length,
            "sequence {i} is longer than {max_length} tokens"
        );
        ids.resize(max_length, pad);
        w.push(TokenRow {
            ids: &ids,
            soft_mask: None,
            label: labels.map(|l| l[i]),
            index: IndexRow {
                record: i as u64,
                shard: 0,
                name: format!("seq{i}"),
                interval: None,
                seq_length: s.len() as u64,
                window_offset: 0,
                window_length: s.len() as u64,
                strand: '+',
            },
        })?;
    }
    w.finish()
}

/// A learnable toy task: random DNA of length `len`; label 1 iff the sequence contains
/// `TATA`, which is planted in half of the records. Deterministic for a seed.
pub fn toy_motif_task(n: usize, len: usize, seed: u64) -> (Vec<Vec<u8>>, Vec<i64>) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut seqs = Vec::with_capacity(n);
    let mut labels = Vec::with_capacity(n);
    for i in 0..n {
        let mut s: Vec<u8> = (0..len).map(|_| b"ACG"[rng.random_range(0..3)]).collect();
        if i % 2 == 0 {
            let at = rng.random_range(0..len - 4);
            s[at..at + 4].copy_from_slice(b"TATA");
        }
        let label = s.windows(4).any(|w| w == b"TATA") as i64;
        seqs.push(s);
        labels.push(label);
    }
    (seqs, labels)
}

/// The rows of a TSV with a header line, as column → value maps (for tests reading our outputs).
pub fn tsv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).expect("read TSV");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header line").split('\t').collect();
    lines
        .map(|l| {
            header
                .iter()
                .map(|h| h.to_string())
                .zip(l.split('\t').map(String::from))
                .collect()
        })
        .collect()
}

/// Ids of overlapping `k`-mers (ACGT only) with [CLS]/[SEP], as `luminome-tokenize --scheme kmer
/// -k K` writes them (k = 1: the nucleotide vocabulary's ids).
pub fn encode_kmers(seq: &[u8], k: usize) -> Vec<u32> {
    let code = |b: u8| match b {
        b'A' => 0u32,
        b'C' => 1,
        b'G' => 2,
        b'T' => 3,
        _ => panic!("test sequences are ACGT"),
    };
    let mut ids = vec![1];
    ids.extend(
        seq.windows(k)
            .map(|w| 5 + w.iter().fold(0, |v, &b| (v << 2) | code(b))),
    );
    ids.push(2);
    ids
}

/// Saves an untrained model as a checkpoint (test metadata, no metrics).
fn save_test_checkpoint(
    dest: &Path,
    config: crate::ModelConfig,
    input: crate::input::InputSpec,
    varmap: &candle_nn::VarMap,
) -> Result<()> {
    let meta = crate::checkpoint::CheckpointMeta::new(config, input, vec![], "test", "");
    crate::checkpoint::save_checkpoint(dest, &meta, varmap)
}
