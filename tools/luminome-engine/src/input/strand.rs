//! The reverse complement of single-nucleotide token rows: for reverse-complement augmentation
//! in training (on ids) and reverse-complement-averaged prediction (on one-hot inputs, where it
//! is a fixed permutation of positions and of channels, so gradients flow through it).
//!
//! A row is `[CLS]? b_1 … b_n [SEP]? [PAD]…`; its reverse complement is
//! `[CLS]? comp(b_n) … comp(b_1) [SEP]? [PAD]…`: the specials stay where they are, the bases are
//! reversed and A↔T, C↔G swapped (N stays N).

use anyhow::{bail, Result};
use candle_core::{Tensor, D};
use luminome_io::token_dataset::{TokenizerInfo, TokenizerScheme};
use serde::{Deserialize, Serialize};

/// Where the bases of a row sit and which token complements which. Stored in checkpoints of
/// models that average both strands, so it is plain data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReverseComplement {
    /// Pairs of token ids that complement each other (A↔T, C↔G, N↔N); every other id is its
    /// own complement.
    pub pairs: Vec<(u32, u32)>,
    /// Specials before the bases of every row (1 with [CLS]).
    pub leading: usize,
    /// Specials after the bases of every row (1 with [SEP]).
    pub trailing: usize,
}

impl ReverseComplement {
    /// The reverse complement of a single-nucleotide vocabulary; other schemes are refused
    /// (a k-mer or BPE token has no complement token in the same position).
    pub fn for_tokenizer(tok: &TokenizerInfo) -> Result<Self> {
        if tok.scheme != TokenizerScheme::Nucleotide {
            bail!(
                "reverse complements need single-nucleotide tokens (luminome-tokenize --scheme nucleotide); this dataset's tokens are {}",
                tok.scheme
            );
        }
        let id = |b: &str| -> Result<u32> {
            match tok.vocab.iter().position(|t| t == b) {
                Some(i) => Ok(i as u32),
                None => bail!("the nucleotide vocabulary has no token {b:?}"),
            }
        };
        Ok(Self {
            pairs: vec![
                (id("A")?, id("T")?),
                (id("C")?, id("G")?),
                (id("N")?, id("N")?),
            ],
            leading: usize::from(tok.add_cls),
            trailing: usize::from(tok.add_sep),
        })
    }

    /// The complement of every id below `vocab_size` (ids not in a pair map to themselves).
    pub fn complement_map(&self, vocab_size: usize) -> Vec<u32> {
        let mut map: Vec<u32> = (0..vocab_size as u32).collect();
        for &(a, b) in &self.pairs {
            if (a as usize) < vocab_size && (b as usize) < vocab_size {
                map[a as usize] = b;
                map[b as usize] = a;
            }
        }
        map
    }

    /// For a row whose first `len` positions are tokens: the position each output position
    /// reads from (an involution; specials and padding read from themselves).
    pub fn source_positions(&self, len: usize, row_length: usize) -> Vec<u32> {
        let mut idx: Vec<u32> = (0..row_length as u32).collect();
        if len > self.leading + self.trailing {
            let (first, last) = (self.leading, len - 1 - self.trailing);
            for (j, slot) in idx.iter_mut().enumerate().take(last + 1).skip(first) {
                *slot = (first + last - j) as u32;
            }
        }
        idx
    }

    /// Reverse-complements one row of ids in place; `len`: its tokens (the rest is padding).
    pub fn flip_ids(&self, row: &mut [u32], len: usize, complement: &[u32]) {
        if len <= self.leading + self.trailing {
            return;
        }
        let bases = &mut row[self.leading..len - self.trailing];
        bases.reverse();
        for t in bases {
            *t = complement.get(*t as usize).copied().unwrap_or(*t);
        }
    }

    /// The reverse complement of one-hot inputs `x` `[B, L, V]` (channels = token ids) with mask
    /// `[B, L]`: positions reversed within each row's bases, then channels complemented. Both
    /// are gathers, so the gradient reaches `x`.
    pub fn one_hot(&self, x: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (b, l, v) = x.dims3()?;
        let index = self.position_index(mask)?;
        let moved = x.gather(
            &index.unsqueeze(2)?.broadcast_as((b, l, v))?.contiguous()?,
            1,
        )?;
        let channels = Tensor::from_vec(self.complement_map(v), v, x.device())?;
        moved.index_select(&channels, D::Minus1)
    }

    /// Per-position states `[B, L, …]` of a reverse-complemented input moved back to the
    /// forward strand's positions (the position permutation is its own inverse).
    pub fn back_to_forward(&self, h: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (b, l, d) = h.dims3()?;
        let index = self.position_index(mask)?;
        h.gather(
            &index.unsqueeze(2)?.broadcast_as((b, l, d))?.contiguous()?,
            1,
        )
    }

    /// `[B, L]` u32: the source position of every position (from the mask, which says each
    /// row's length).
    fn position_index(&self, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (b, l) = mask.dims2()?;
        let rows = mask.to_dtype(candle_core::DType::F32)?.to_vec2::<f32>()?;
        let mut idx = Vec::with_capacity(b * l);
        for row in &rows {
            let len = row.iter().rposition(|&m| m != 0.0).map_or(0, |p| p + 1);
            idx.extend(self.source_positions(len, l));
        }
        Tensor::from_vec(idx, (b, l), mask.device())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn rc() -> ReverseComplement {
        ReverseComplement::for_tokenizer(&TokenizerInfo::nucleotide(true, true)).unwrap()
    }

    #[test]
    fn ids_are_reverse_complemented_between_the_specials() {
        let rc = rc();
        let comp = rc.complement_map(10);
        // [CLS] A A C G N [SEP] [PAD] [PAD]
        let mut row = vec![1, 5, 5, 6, 7, 9, 2, 0, 0];
        rc.flip_ids(&mut row, 7, &comp);
        // reverse: N G C A A → complement: N C G T T
        assert_eq!(row, vec![1, 9, 6, 7, 8, 8, 2, 0, 0]);
        rc.flip_ids(&mut row, 7, &comp);
        assert_eq!(row, vec![1, 5, 5, 6, 7, 9, 2, 0, 0]);
    }

    #[test]
    fn one_hot_reverse_complement_matches_the_ids() {
        let rc = rc();
        let dev = Device::Cpu;
        let ids = [1u32, 5, 6, 6, 8, 2, 0, 1, 7, 2, 0, 0];
        let mask = Tensor::from_vec(
            vec![1f32, 1., 1., 1., 1., 1., 1., 1., 1., 1., 0., 0.],
            (2, 6),
            &dev,
        )
        .unwrap();
        let ids_t = Tensor::from_slice(&ids, (2, 6), &dev).unwrap();
        let x = candle_nn::encoding::one_hot(ids_t, 10, 1f32, 0f32).unwrap();
        let flipped = rc.one_hot(&x, &mask).unwrap();
        let back = flipped.argmax(D::Minus1).unwrap().to_vec2::<u32>().unwrap();
        let comp = rc.complement_map(10);
        let (mut a, mut b) = (ids[..6].to_vec(), ids[6..].to_vec());
        rc.flip_ids(&mut a, 6, &comp);
        rc.flip_ids(&mut b, 4, &comp);
        assert_eq!(back, vec![a, b]);
    }

    #[test]
    fn kmer_tokens_are_refused() {
        let tok = TokenizerInfo::kmer(3, 1, true, true);
        let e = ReverseComplement::for_tokenizer(&tok).unwrap_err();
        assert!(e.to_string().contains("single-nucleotide"), "{e}");
    }
}
