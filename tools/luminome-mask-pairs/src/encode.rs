//! Bases to token ids in the nucleotide vocabulary (no [CLS]/[SEP]: index i of a row is base i of
//! its window), complements, and the masked writing of one pair of rows.

use anyhow::Result;
use luminome_io::masking::{mask_pair, PairMasking};
use luminome_io::pair_dataset::{PairDatasetWriter, PairIndexRow, PairRow};
use luminome_io::token_dataset::{special, TokenizerInfo};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A=5 C=6 G=7 T=8, anything else N=9 (lowercase as uppercase).
static IDS: [u32; 256] = {
    let mut t = [9u32; 256];
    t[b'A' as usize] = 5;
    t[b'a' as usize] = 5;
    t[b'C' as usize] = 6;
    t[b'c' as usize] = 6;
    t[b'G' as usize] = 7;
    t[b'g' as usize] = 7;
    t[b'T' as usize] = 8;
    t[b't' as usize] = 8;
    t
};

pub const N_ID: u32 = 9;

pub fn base_id(b: u8) -> u32 {
    IDS[b as usize]
}

/// The id of the complementary base (N and specials unchanged).
pub fn complement_id(id: u32) -> u32 {
    match id {
        5 => 8,
        6 => 7,
        7 => 6,
        8 => 5,
        x => x,
    }
}

/// Every record's masking draws come from its own stream: the same seed gives the same masks
/// whatever the order or number of threads.
fn record_rng(seed: u64, record: u64) -> ChaCha8Rng {
    let mut z = seed ^ record.wrapping_mul(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    ChaCha8Rng::seed_from_u64(z ^ (z >> 31))
}

/// Masks pairs of rows and writes them.
pub struct PairSink {
    pub writer: PairDatasetWriter,
    pub tokenizer: TokenizerInfo,
    pub masking: PairMasking,
    pub seed: u64,
}

impl PairSink {
    /// `a`, `b`: ids of the two strands (padding with [PAD] beyond the bases). Rows without a
    /// maskable position in random mode are written with no label (counted by the caller).
    pub fn push(
        &mut self,
        mut a: Vec<u32>,
        mut b: Vec<u32>,
        site: Option<usize>,
        index: PairIndexRow,
    ) -> Result<bool> {
        let attention: Vec<u8> = a.iter().map(|&id| u8::from(id != special::PAD)).collect();
        let mut rng = record_rng(self.seed, self.writer.len());
        let m = mask_pair(
            &mut a,
            &mut b,
            &attention,
            site,
            &self.tokenizer,
            &self.masking,
            &mut rng,
        )?;
        let any = m.mask_positions.contains(&1);
        self.writer.push(PairRow {
            ids_a: &a,
            ids_b: &b,
            labels_a: &m.labels_a,
            labels_b: &m.labels_b,
            mask_positions: &m.mask_positions,
            attention_mask: &attention,
            index,
        })?;
        Ok(any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_map_to_the_vocabulary_and_complement() {
        let tok = TokenizerInfo::nucleotide(false, false);
        for (b, s) in [
            (b'A', "A"),
            (b'c', "C"),
            (b'G', "G"),
            (b't', "T"),
            (b'R', "N"),
        ] {
            assert_eq!(tok.vocab[base_id(b) as usize], s);
        }
        assert_eq!(
            [5, 6, 7, 8, 9]
                .map(complement_id)
                .map(|i| tok.vocab[i as usize].clone()),
            ["T", "G", "C", "A", "N"]
        );
    }
}
