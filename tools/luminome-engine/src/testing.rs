//! Small helpers for tests and examples: the single-nucleotide vocabulary of
//! `luminome-tokenize` and a writer of token datasets from in-memory sequences.

use std::path::Path;

use anyhow::Result;
use luminome_io::token_dataset::{
    IndexRow, TokenDatasetWriter, TokenDatasetWriterOptions, TokenRow, TokenizerInfo,
};

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

/// Writes sequences (and optional labels) as a token dataset padded to `max_length`.
pub fn write_dataset(
    dest: &Path,
    seqs: &[Vec<u8>],
    labels: Option<&[i64]>,
    max_length: usize,
) -> Result<()> {
    let tok = nucleotide_tokenizer();
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
        let mut ids = encode(s);
        anyhow::ensure!(
            ids.len() <= max_length,
            "sequence {i} is longer than {max_length} tokens"
        );
        ids.resize(max_length, 0);
        w.push(TokenRow {
            ids: &ids,
            soft_mask: None,
            label: labels.map(|l| l[i]),
            index: IndexRow {
                record: i as u64,
                shard: 0,
                name: format!("seq{i}"),
                coords: ".".into(),
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

/// Writes a paired dataset of sequences (strand B their complements), `fraction` of the positions
/// masked on both strands (all [MASK]), rows padded to the longest sequence.
pub fn write_pair_dataset(dest: &Path, seqs: &[Vec<u8>], fraction: f64, seed: u64) -> Result<()> {
    use luminome_io::masking::{mask_pair, PairMasking};
    use luminome_io::pair_dataset::{
        MaskMode, PairDatasetMeta, PairDatasetWriter, PairIndexRow, PairMaskingInfo, PairRow,
        Pairing,
    };
    use rand::SeedableRng;
    let tok = TokenizerInfo::nucleotide(false, false);
    let l = seqs.iter().map(Vec::len).max().unwrap_or(0);
    let masking = PairMasking {
        mode: MaskMode::Random,
        fraction,
        bert_replacement: false,
        complement: true,
    };
    let mut w = PairDatasetWriter::create(dest.to_path_buf(), l, &[])?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for (i, s) in seqs.iter().enumerate() {
        let mut a: Vec<u32> = encode(s)[1..=s.len()].to_vec();
        a.resize(l, 0);
        let mut b: Vec<u32> = a
            .iter()
            .map(|&x| if (5..=8).contains(&x) { 13 - x } else { x })
            .collect();
        let attention: Vec<u8> = a.iter().map(|&x| u8::from(x != 0)).collect();
        let m = mask_pair(&mut a, &mut b, &attention, None, &tok, &masking, &mut rng)?;
        w.push(PairRow {
            ids_a: &a,
            ids_b: &b,
            labels_a: &m.labels_a,
            labels_b: &m.labels_b,
            mask_positions: &m.mask_positions,
            attention_mask: &attention,
            index: PairIndexRow {
                record: 0,
                name: format!("seq{i}"),
                coords: ".".into(),
                site: None,
                variant: None,
                info: vec![],
            },
        })?;
    }
    w.finish(PairDatasetMeta {
        kind: String::new(),
        format_version: 0,
        tokenizer: tok,
        pairing: Pairing::Complement,
        masking: PairMaskingInfo {
            mode: MaskMode::Random,
            fraction,
            bert_replacement: false,
            seed,
        },
        window: l,
        num_records: 0,
        coordinates: "0-based half-open".into(),
        index_file: String::new(),
        counts: Default::default(),
        info_keys: vec![],
        sources: vec![],
        tool: "luminome-engine tests".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line: String::new(),
    })
}
