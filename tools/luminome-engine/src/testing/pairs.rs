//! Paired-strand (bi-strand masked LM) datasets for tests.

use std::path::Path;

use anyhow::Result;
use luminome_io::token_dataset::TokenizerInfo;

use super::encode;

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
                window: None,
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
