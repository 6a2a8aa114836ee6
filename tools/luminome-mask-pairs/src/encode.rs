//! Bases to token ids in the nucleotide vocabulary (no [CLS]/[SEP]: index i of a row is base i of
//! its window), complements, and the masked writing of one pair of rows.

use anyhow::Result;
use luminome_io::masking::{base_ids, mask_pair, PairMasking};
use luminome_io::pair_dataset::{PairDatasetWriter, PairIndexRow, PairRow};
use luminome_io::token_dataset::TokenizerInfo;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Bases to the ids of a vocabulary: the nucleotide one (A=5 C=6 G=7 T=8, anything else N=9),
/// or a published model's (`--like`: its A/C/G/T tokens in either case, anything else its N, or
/// its [UNK] when it has no N — as its own tokenizer does).
#[derive(Debug, Clone)]
pub struct BaseVocab {
    ids: [u32; 256],
    complement: Vec<u32>,
    /// The id anything but A/C/G/T becomes.
    pub n: u32,
    pub pad: u32,
}

impl BaseVocab {
    pub fn of(tok: &TokenizerInfo) -> Result<Self> {
        let Some(acgt) = base_ids(tok) else {
            anyhow::bail!("the vocabulary has no single-base A, C, G, T tokens");
        };
        let n = tok
            .vocab
            .iter()
            .position(|t| t.eq_ignore_ascii_case("N"))
            .map(|i| i as u32)
            .or(tok.unk_id)
            .ok_or_else(|| anyhow::anyhow!("the vocabulary has neither N nor [UNK]"))?;
        let mut ids = [n; 256];
        for (base, id) in b"ACGT".iter().zip(acgt) {
            ids[*base as usize] = id;
            ids[base.to_ascii_lowercase() as usize] = id;
        }
        let mut complement: Vec<u32> = (0..tok.vocab_size() as u32).collect();
        for (x, y) in [(0, 3), (1, 2), (2, 1), (3, 0)] {
            complement[acgt[x] as usize] = acgt[y];
        }
        Ok(Self {
            ids,
            complement,
            n,
            pad: tok.pad_id,
        })
    }

    pub fn id(&self, base: u8) -> u32 {
        self.ids[base as usize]
    }

    /// The id of the complementary base (N and specials unchanged).
    pub fn complement(&self, id: u32) -> u32 {
        self.complement.get(id as usize).copied().unwrap_or(id)
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
    pub vocab: BaseVocab,
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
        let attention: Vec<u8> = a.iter().map(|&id| u8::from(id != self.vocab.pad)).collect();
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
        let v = BaseVocab::of(&tok).unwrap();
        let base_id = |b| v.id(b);
        let complement_id = |i| v.complement(i);
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

    #[test]
    fn a_lowercase_vocabulary_without_n_maps_n_to_unk() {
        let tok = TokenizerInfo {
            vocab: ["[PAD]", "[MASK]", "[UNK]", "a", "c", "g", "t"]
                .map(String::from)
                .to_vec(),
            pad_id: 0,
            mask_id: Some(1),
            unk_id: Some(2),
            cls_id: None,
            sep_id: None,
            add_cls: false,
            add_sep: false,
            ..TokenizerInfo::nucleotide(false, false)
        };
        let v = BaseVocab::of(&tok).unwrap();
        assert_eq!(b"ACGTacgtN".map(|b| v.id(b)), [3, 4, 5, 6, 3, 4, 5, 6, 2]);
        assert_eq!([3, 4, 5, 6, 2].map(|i| v.complement(i)), [6, 5, 4, 3, 2]);
    }
}
