//! Retrieval pairs datasets, a small E. coli retrieval task and an untrained dual encoder.

use std::path::Path;

use anyhow::Result;
use luminome_io::token_dataset::TokenizerInfo;

use super::{encode_kmers, nucleotide_tokenizer, save_test_checkpoint};

/// (query, passage, passage name) triples of a retrieval task.
pub type RetrievalTriples = Vec<(Vec<u8>, Vec<u8>, String)>;

/// Writes a retrieval pairs dataset (nucleotide ids with [CLS]/[SEP]) of `(query, passage)`
/// sequences, groups by identical sequence; index names `q<i>` and the passage's own name.
pub fn write_retrieval_pairs(dest: &Path, pairs: &[(Vec<u8>, Vec<u8>, String)]) -> Result<()> {
    write_retrieval_pairs_k(dest, pairs, 1)
}

/// [`write_retrieval_pairs`] with overlapping `k`-mer tokens (k = 1: single nucleotides).
pub fn write_retrieval_pairs_k(
    dest: &Path,
    pairs: &[(Vec<u8>, Vec<u8>, String)],
    k: usize,
) -> Result<()> {
    use luminome_io::retrieval_pairs::{
        RetrievalIndexRow, RetrievalPairsMeta, RetrievalPairsWriter,
    };
    use std::collections::HashMap;
    let tok = if k == 1 {
        nucleotide_tokenizer()
    } else {
        TokenizerInfo::kmer(k, 1, true, true)
    };
    let mut w = RetrievalPairsWriter::create(dest.to_path_buf(), &tok)?;
    let (mut qg, mut pg): (HashMap<Vec<u8>, u32>, HashMap<Vec<u8>, u32>) = Default::default();
    for (i, (q, p, name)) in pairs.iter().enumerate() {
        let n = qg.len() as u32;
        let a = *qg.entry(q.clone()).or_insert(n);
        let n = pg.len() as u32;
        let b = *pg.entry(p.clone()).or_insert(n);
        w.push(
            &encode_kmers(q, k),
            &encode_kmers(p, k),
            [a, b],
            RetrievalIndexRow {
                record: 0,
                query_id: format!("q{i}"),
                passage_id: name.clone(),
                line: i as u64 + 2,
            },
        )?;
    }
    w.finish(RetrievalPairsMeta {
        kind: String::new(),
        format_version: 0,
        tokenizer: tok,
        text: false,
        num_records: 0,
        distinct_queries: 0,
        distinct_passages: 0,
        query_length: 0,
        passage_length: 0,
        index_file: String::new(),
        counts: Default::default(),
        sources: vec![],
        tool: "luminome-engine tests".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line: String::new(),
    })
}

/// A small retrieval task from the bundled E. coli slice (`test-data/ecoli/ecoli_50kb.fa`):
/// passages are the `window`-base windows from base `from` (`n_windows` of them); each gives
/// `per_window` queries, exact substrings of `query_len` bases at seeded offsets (the reverse
/// complement for every second one when `rc`). Returns (pairs, windows) with window names
/// `NC_000913.3:start-end`.
pub fn ecoli_retrieval_task(
    from: usize,
    n_windows: usize,
    window: usize,
    query_len: usize,
    per_window: usize,
    rc: bool,
    seed: u64,
) -> (RetrievalTriples, Vec<(String, Vec<u8>)>) {
    use rand::{Rng, SeedableRng};
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-data/ecoli/ecoli_50kb.fa"),
    )
    .expect("test-data/ecoli/ecoli_50kb.fa");
    let genome: Vec<u8> = text
        .lines()
        .filter(|l| !l.starts_with('>'))
        .flat_map(|l| l.trim().bytes())
        .collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut windows = Vec::new();
    let mut pairs = Vec::new();
    for w in 0..n_windows {
        let start = from + w * window;
        let p = genome[start..start + window].to_vec();
        let name = format!("NC_000913.3:{start}-{}", start + window);
        for k in 0..per_window {
            let off = rng.random_range(0..=window - query_len);
            let mut q = p[off..off + query_len].to_vec();
            if rc && k % 2 == 1 {
                q = q
                    .iter()
                    .rev()
                    .map(|b| match b {
                        b'A' => b'T',
                        b'C' => b'G',
                        b'G' => b'C',
                        b'T' => b'A',
                        x => *x,
                    })
                    .collect();
            }
            pairs.push((q, p.clone(), name.clone()));
        }
        windows.push((name, p));
    }
    (pairs, windows)
}

/// A random-weight dual encoder (d 16, one layer, nucleotide vocabulary, rows up to
/// `max_length` tokens) written to `dest` as a checkpoint.
pub fn write_dual_checkpoint(
    dest: &Path,
    max_length: usize,
    attention: crate::backbones::AttentionKind,
    shared: bool,
    seed: u64,
) -> Result<()> {
    let tok = nucleotide_tokenizer();
    let config = crate::ModelConfig::from(crate::models::dual::DualConfig {
        encoder: crate::backbones::EncoderConfig {
            vocab_size: tok.vocab_size(),
            d_model: 16,
            num_layers: 1,
            num_heads: 2,
            ffn_dim: 32,
            dropout: 0.0,
            max_length,
            position: crate::backbones::PositionEncoding::Learned,
            layer_norm_eps: 1e-5,
            pad_id: tok.pad_id,
            attention,
        },
        shared,
        temperature: 0.05,
    });
    let built = crate::BuiltModel::new(&config, &candle_core::Device::Cpu, seed)?;
    save_test_checkpoint(
        dest,
        config,
        crate::input::InputSpec::Tokens(tok),
        &built.varmap,
    )
}
