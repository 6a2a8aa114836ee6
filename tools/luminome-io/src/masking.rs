//! BERT masking of token batches for masked-LM training: choose 15 % of the real (non-special)
//! tokens of each row; of those, 80 % become [MASK], 10 % a random non-special token, 10 % stay.
//! The chosen positions, their original ids and their loss weights (down-weighted where the base
//! was soft-masked, i.e. lowercase) are what the loss is computed on. Seeded: the same RNG state
//! gives the same masking.

use anyhow::{bail, Result};
use rand::Rng;

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
}
