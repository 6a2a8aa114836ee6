//! BERT masking of token batches for masked-LM training: choose 15 % of the real (non-special)
//! tokens of each row; of those, 80 % become [MASK], 10 % a random non-special token, 10 % stay.
//! The chosen positions, their original ids and their loss weights (down-weighted where the base
//! was soft-masked, i.e. lowercase) are what the loss is computed on. Seeded: the same RNG state
//! gives the same masking.

use anyhow::{bail, Result};
use rand::Rng;

use crate::pair_dataset::IGNORE_INDEX;
use crate::token_dataset::{TokenBatch, TokenizerInfo};

/// Masking settings.
#[derive(Debug, Clone, Copy)]
pub struct MaskingConfig {
    /// Fraction of real tokens chosen (0.15).
    pub select_prob: f64,
    /// Of the chosen: replaced by [MASK] (0.8), by a random token (0.1); the rest stay.
    pub mask_prob: f64,
    pub random_prob: f64,
    /// Loss weight of a chosen position whose base was soft-masked (lowercase); 1.0 = no
    /// down-weighting.
    pub soft_mask_weight: f32,
}

impl Default for MaskingConfig {
    fn default() -> Self {
        Self {
            select_prob: 0.15,
            mask_prob: 0.8,
            random_prob: 0.1,
            soft_mask_weight: 1.0,
        }
    }
}

/// A batch after masking: the corrupted ids, and the chosen positions (flat index b·L + i) with
/// their original ids and loss weights.
#[derive(Debug, Clone, PartialEq)]
pub struct MaskedBatch {
    pub input_ids: Vec<u32>,
    pub positions: Vec<u32>,
    pub targets: Vec<u32>,
    pub weights: Vec<f32>,
}

/// Applies BERT masking to a batch. Every row with at least one real token gets at least one
/// chosen position, so the loss is always defined.
pub fn mask_batch(
    batch: &TokenBatch,
    tok: &TokenizerInfo,
    cfg: &MaskingConfig,
    rng: &mut impl Rng,
) -> Result<MaskedBatch> {
    let Some(mask_id) = tok.mask_id else {
        bail!("the dataset's tokenizer has no [MASK] token; masked-LM pretraining needs one");
    };
    let replacements = tok.non_special_ids();
    if replacements.is_empty() {
        bail!("the dataset's vocabulary has no non-special tokens");
    }
    let l = batch.max_length;
    let mut out = MaskedBatch {
        input_ids: batch.input_ids.clone(),
        positions: Vec::new(),
        targets: Vec::new(),
        weights: Vec::new(),
    };
    for row in 0..batch.batch {
        let candidates: Vec<usize> = (row * l..(row + 1) * l)
            .filter(|&i| batch.attention_mask[i] != 0 && tok.is_maskable(batch.input_ids[i]))
            .collect();
        let mut chosen: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|_| rng.random_bool(cfg.select_prob))
            .collect();
        if chosen.is_empty() && !candidates.is_empty() {
            chosen.push(candidates[rng.random_range(0..candidates.len())]);
        }
        for i in chosen {
            let original = batch.input_ids[i];
            let r: f64 = rng.random();
            if r < cfg.mask_prob {
                out.input_ids[i] = mask_id;
            } else if r < cfg.mask_prob + cfg.random_prob {
                out.input_ids[i] = replacements[rng.random_range(0..replacements.len())];
            }
            out.positions.push(i as u32);
            out.targets.push(original);
            let soft = batch.soft_mask.as_ref().is_some_and(|s| s[i] != 0);
            out.weights
                .push(if soft { cfg.soft_mask_weight } else { 1.0 });
        }
    }
    if out.positions.is_empty() {
        bail!("no maskable tokens in the batch (every row is empty or special tokens only)");
    }
    Ok(out)
}

/// How a pair of strands is masked: the same positions on both strands.
#[derive(Debug, Clone, Copy)]
pub struct PairMasking {
    pub mode: crate::pair_dataset::MaskMode,
    /// Fraction of the positions where both strands carry A/C/G/T (random mode); at least one
    /// position of a row that has any is chosen.
    pub fraction: f64,
    /// 80 % [MASK], 10 % a random base, 10 % kept — decided once per position for both strands.
    pub bert_replacement: bool,
    /// B is A's complement: a random replacement base on A gets its complement on B.
    pub complement: bool,
}

/// The labels and masked positions of one masked pair of rows.
#[derive(Debug, Clone, PartialEq)]
pub struct MaskedPair {
    /// The original id at masked positions, [`IGNORE_INDEX`] elsewhere.
    pub labels_a: Vec<i64>,
    pub labels_b: Vec<i64>,
    pub mask_positions: Vec<u8>,
}

/// The id of each base of the vocabulary, `[A, C, G, T]`, when all four are single tokens (the
/// upper-case token when a vocabulary has both cases; a published model's may be lower-case).
pub fn base_ids(tok: &TokenizerInfo) -> Option<[u32; 4]> {
    let id = |b: &str| {
        let pos = |f: &dyn Fn(&String) -> bool| tok.vocab.iter().position(f).map(|i| i as u32);
        pos(&|t| t == b).or_else(|| pos(&|t| t.eq_ignore_ascii_case(b)))
    };
    Some([id("A")?, id("C")?, id("G")?, id("T")?])
}

/// Masks a pair of rows in place (`a`, `b`: token ids of the same length, `attention`: 1 for a
/// base). The same positions are chosen on both strands, only where both carry A/C/G/T; in
/// variant-site mode exactly `site`. Returns the labels and masked positions.
pub fn mask_pair(
    a: &mut [u32],
    b: &mut [u32],
    attention: &[u8],
    site: Option<usize>,
    tok: &TokenizerInfo,
    cfg: &PairMasking,
    rng: &mut impl Rng,
) -> Result<MaskedPair> {
    let Some(mask_id) = tok.mask_id else {
        bail!("the vocabulary has no [MASK] token");
    };
    let Some(bases) = base_ids(tok) else {
        bail!("the vocabulary has no single-base A, C, G, T tokens");
    };
    let l = a.len();
    if b.len() != l || attention.len() != l {
        bail!("internal: strands of different lengths");
    }
    let is_base = |id: u32| bases.contains(&id);
    let maskable = |i: usize| attention[i] != 0 && is_base(a[i]) && is_base(b[i]);
    let chosen: Vec<usize> = match cfg.mode {
        crate::pair_dataset::MaskMode::VariantSite => {
            let s = site.filter(|&s| s < l && maskable(s)).ok_or_else(|| {
                anyhow::anyhow!(
                    "internal: the variant site is not an A/C/G/T position of both strands"
                )
            })?;
            vec![s]
        }
        crate::pair_dataset::MaskMode::Random => {
            let candidates: Vec<usize> = (0..l).filter(|&i| maskable(i)).collect();
            if candidates.is_empty() {
                Vec::new()
            } else {
                let k = ((cfg.fraction * candidates.len() as f64).round() as usize)
                    .clamp(1, candidates.len());
                let mut picked: Vec<usize> = rand::seq::index::sample(rng, candidates.len(), k)
                    .into_iter()
                    .map(|j| candidates[j])
                    .collect();
                picked.sort_unstable();
                picked
            }
        }
    };
    let mut out = MaskedPair {
        labels_a: vec![IGNORE_INDEX; l],
        labels_b: vec![IGNORE_INDEX; l],
        mask_positions: vec![0; l],
    };
    let bert = cfg.bert_replacement && cfg.mode == crate::pair_dataset::MaskMode::Random;
    for i in chosen {
        out.labels_a[i] = i64::from(a[i]);
        out.labels_b[i] = i64::from(b[i]);
        out.mask_positions[i] = 1;
        let r: f64 = if bert { rng.random() } else { 0.0 };
        if r < 0.8 {
            a[i] = mask_id;
            b[i] = mask_id;
        } else if r < 0.9 {
            let k = rng.random_range(0..4);
            a[i] = bases[k];
            b[i] = if cfg.complement {
                bases[3 - k]
            } else {
                bases[k]
            };
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn nucleotide_tokenizer() -> TokenizerInfo {
        TokenizerInfo::nucleotide(true, true)
    }

    /// [CLS] seq [SEP] in the nucleotide vocabulary.
    fn encode(seq: &[u8]) -> Vec<u32> {
        let mut ids = vec![1];
        ids.extend(seq.iter().map(|&b| match b {
            b'A' => 5,
            b'C' => 6,
            b'G' => 7,
            b'T' => 8,
            _ => 9,
        }));
        ids.push(2);
        ids
    }

    fn batch(rows: usize, len: usize) -> TokenBatch {
        let l = len + 2 + 3; // [CLS] seq [SEP] + 3 padding
        let mut b = TokenBatch {
            batch: rows,
            max_length: l,
            ..Default::default()
        };
        for r in 0..rows {
            let seq: Vec<u8> = (0..len).map(|i| b"ACGT"[(i * 7 + r) % 4]).collect();
            let mut ids = encode(&seq);
            ids.resize(l, 0);
            b.attention_mask
                .extend(ids.iter().map(|&i| u8::from(i != 0)));
            b.input_ids.extend(ids);
        }
        // Soft-mask the first half of each row.
        b.soft_mask = Some((0..rows * l).map(|i| u8::from(i % l < l / 2)).collect());
        b
    }

    #[test]
    fn masking_follows_bert_proportions_and_never_touches_specials_or_padding() {
        let b = batch(200, 100);
        let tok = nucleotide_tokenizer();
        let cfg = MaskingConfig {
            soft_mask_weight: 0.1,
            ..Default::default()
        };
        let m = mask_batch(
            &b,
            &tok,
            &cfg,
            &mut rand_chacha::ChaCha8Rng::seed_from_u64(1),
        )
        .unwrap();
        let real = 200 * 100;
        let chosen = m.positions.len() as f64 / real as f64;
        assert!((chosen - 0.15).abs() < 0.01, "chosen fraction {chosen}");
        let (mut masked, mut random, mut kept) = (0, 0, 0);
        for (&p, &t) in m.positions.iter().zip(&m.targets) {
            let p = p as usize;
            assert_eq!(b.input_ids[p], t, "target is the original id");
            assert!(
                (5..=8).contains(&t),
                "only bases are chosen, not specials or padding"
            );
            match m.input_ids[p] {
                3 => masked += 1,
                x if x == t => kept += 1,
                _ => random += 1,
            }
        }
        let n = m.positions.len() as f64;
        assert!((masked as f64 / n - 0.8).abs() < 0.03, "{masked}");
        // A random replacement can draw the original base (1 in 5), which then counts as kept.
        assert!((random as f64 / n - 0.08).abs() < 0.02, "{random}");
        assert!((kept as f64 / n - 0.12).abs() < 0.02, "{kept}");
        // Positions not chosen are untouched.
        let chosen_set: std::collections::HashSet<u32> = m.positions.iter().copied().collect();
        for i in 0..b.input_ids.len() {
            if !chosen_set.contains(&(i as u32)) {
                assert_eq!(m.input_ids[i], b.input_ids[i]);
            }
        }
        // Soft-masked positions carry the down-weight.
        let l = b.max_length;
        for (&p, &w) in m.positions.iter().zip(&m.weights) {
            let expected = if (p as usize) % l < l / 2 { 0.1 } else { 1.0 };
            assert_eq!(w, expected);
        }
        // Same seed, same masking.
        let again = mask_batch(
            &b,
            &tok,
            &cfg,
            &mut rand_chacha::ChaCha8Rng::seed_from_u64(1),
        )
        .unwrap();
        assert_eq!(again, m);
    }

    #[test]
    fn a_vocabulary_without_mask_token_is_refused() {
        let mut tok = nucleotide_tokenizer();
        tok.mask_id = None;
        let err = mask_batch(
            &batch(2, 5),
            &tok,
            &MaskingConfig::default(),
            &mut rand_chacha::ChaCha8Rng::seed_from_u64(1),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("[MASK]"), "{err}");
    }

    fn pair_cfg(bert: bool) -> PairMasking {
        PairMasking {
            mode: crate::pair_dataset::MaskMode::Random,
            fraction: 0.15,
            bert_replacement: bert,
            complement: true,
        }
    }

    #[test]
    fn a_pair_is_masked_at_the_same_positions_on_both_strands() {
        let tok = TokenizerInfo::nucleotide(false, false);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let comp = |id: u32| match id {
            5 => 8,
            6 => 7,
            7 => 6,
            8 => 5,
            x => x,
        };
        let (mut masked, mut total) = (0usize, 0usize);
        for row in 0..200 {
            // 60 bases, an N at 7, three padding positions.
            let mut a: Vec<u32> = (0..63).map(|i| 5 + ((i * 7 + row) % 4) as u32).collect();
            a[7] = 9;
            a[60..].fill(0);
            let mut b: Vec<u32> = a.iter().map(|&x| comp(x)).collect();
            let attention: Vec<u8> = a.iter().map(|&x| u8::from(x != 0)).collect();
            let (a0, b0) = (a.clone(), b.clone());
            let m = mask_pair(
                &mut a,
                &mut b,
                &attention,
                None,
                &tok,
                &pair_cfg(true),
                &mut rng,
            )
            .unwrap();
            let chosen: Vec<usize> = (0..63).filter(|&i| m.mask_positions[i] == 1).collect();
            assert_eq!(chosen.len(), 9, "round(0.15 * 59 maskable)");
            for i in 0..63 {
                let is_chosen = m.mask_positions[i] == 1;
                // Labels on both strands exactly at the chosen positions, with the originals.
                assert_eq!(m.labels_a[i] != IGNORE_INDEX, is_chosen);
                assert_eq!(m.labels_b[i] != IGNORE_INDEX, is_chosen);
                if is_chosen {
                    assert!(i != 7 && i < 60, "never N or padding");
                    assert_eq!((m.labels_a[i], m.labels_b[i]), (a0[i] as i64, b0[i] as i64));
                    // Neither strand shows the original pair while the other hides it.
                    assert_eq!(
                        a[i] == 3,
                        b[i] == 3,
                        "position {i}: masked on one strand only"
                    );
                    if a[i] != 3 {
                        assert_eq!(
                            b[i],
                            comp(a[i]),
                            "a replacement keeps the pair complementary"
                        );
                    }
                    masked += usize::from(a[i] == 3);
                    total += 1;
                } else {
                    assert_eq!((a[i], b[i]), (a0[i], b0[i]));
                }
            }
        }
        let share = masked as f64 / total as f64;
        assert!((share - 0.8).abs() < 0.04, "[MASK] share {share}");
    }

    #[test]
    fn variant_site_mode_masks_exactly_the_site() {
        let tok = TokenizerInfo::nucleotide(false, false);
        let mut a = vec![5, 6, 7, 8, 5];
        let mut b = vec![5, 6, 5, 8, 5];
        let cfg = PairMasking {
            mode: crate::pair_dataset::MaskMode::VariantSite,
            fraction: 0.15,
            bert_replacement: true,
            complement: false,
        };
        let m = mask_pair(
            &mut a,
            &mut b,
            &[1; 5],
            Some(2),
            &tok,
            &cfg,
            &mut rand_chacha::ChaCha8Rng::seed_from_u64(1),
        )
        .unwrap();
        assert_eq!(m.mask_positions, [0, 0, 1, 0, 0]);
        assert_eq!((a[2], b[2]), (3, 3));
        assert_eq!((m.labels_a[2], m.labels_b[2]), (7, 5));
    }
}
