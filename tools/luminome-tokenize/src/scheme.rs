//! Tokenization schemes: single nucleotide, k-mer, and a HuggingFace `tokenizer.json`.
//!
//! Vocabularies (ids are stable and recorded in every dataset's metadata):
//! - nucleotide: `[PAD]`=0 `[CLS]`=1 `[SEP]`=2 `[MASK]`=3 `[UNK]`=4 `A`=5 `C`=6 `G`=7 `T`=8 `N`=9
//!   (the Caduceus/AIDO character vocabulary, with the specials first so padding is 0).
//! - kmer (k ≤ 8): the five specials, then all 4^k k-mers over ACGT in lexicographic order, then
//!   the single bases A, C, G, T, N used for the tail of a sequence whose length is not a
//!   multiple of k in non-overlapping mode (as the Nucleotide Transformer does). A k-mer that
//!   contains N is `[UNK]`.
//! - hf: the tokenizer's own vocabulary; `[CLS]`/`[SEP]`/`[PAD]`/`[MASK]`/`[UNK]` are looked up
//!   by those names (DNABERT-2 uses them).
//! - esm-vocab: a Nucleotide Transformer checkpoint's `vocab.txt`, its ids and special tokens
//!   as published (`<pad>` = 1); cut leftmost-longest ([`luminome_io::esm_vocab`]).

use std::path::Path;

use anyhow::{bail, Context, Result};
use luminome_io::esm_vocab::EsmVocabEncoder;
use luminome_io::token_dataset::special::{CLS, PAD, SEP, UNK};
use luminome_io::token_dataset::{special, TokenizerInfo, TokenizerScheme};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KmerMode {
    /// Consecutive k-mers overlap by k-1 bases (DNABERT).
    Overlapping,
    /// Consecutive k-mers tile the sequence (Nucleotide Transformer).
    NonOverlapping,
}

/// Base code: A=0 C=1 G=2 T=3, N (anything else) = 4, as a table for the hot loops.
static CODE: [u8; 256] = {
    let mut t = [4u8; 256];
    t[b'A' as usize] = 0;
    t[b'C' as usize] = 1;
    t[b'G' as usize] = 2;
    t[b'T' as usize] = 3;
    t
};

#[inline]
fn code(b: u8) -> u32 {
    CODE[b as usize] as u32
}

/// [`code`] by four comparisons instead of the table: a table lookup per base is a gather the
/// compiler leaves scalar, the comparisons vectorise.
#[inline(always)]
fn code_by_comparing(b: u8) -> u32 {
    4 - 4 * u32::from(b == b'A')
        - 3 * u32::from(b == b'C')
        - 2 * u32::from(b == b'G')
        - u32::from(b == b'T')
}

/// The nucleotide scheme's ids (5 + [`code`]) of `bases`, appended to `ids`.
fn nucleotide_ids(bases: &[u8], ids: &mut Vec<u32>) {
    let start = ids.len();
    ids.resize(start + bases.len(), 0);
    vectorised::nucleotide_ids(bases, &mut ids[start..]);
}

/// Clones for AVX2 and AVX-512 beside the baseline (SSE2, where the comparisons ran four bases
/// at a time), chosen at run time; integer work, so every clone gives the same ids.
// multiversion's dispatcher calls a clone only after detecting its features at run time; the
// unsafe it generates is that call.
#[allow(unsafe_code)]
mod vectorised {
    #[multiversion::multiversion(targets(
        "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
        "x86_64+avx2+fma"
    ))]
    pub(super) fn nucleotide_ids(bases: &[u8], ids: &mut [u32]) {
        for (id, &b) in ids.iter_mut().zip(bases) {
            *id = 5 + super::code_by_comparing(b);
        }
    }
}

pub enum Scheme {
    Nucleotide,
    Kmer {
        k: usize,
        mode: KmerMode,
    },
    Hf(Box<tokenizers::Tokenizer>, HfIds),
    /// A published `EsmTokenizer` (its recorded description and the encoder made from it).
    EsmVocab(Box<(TokenizerInfo, EsmVocabEncoder)>),
}

impl Scheme {
    /// Whether ids come from table lookups over the bases (nucleotides, k-mers, a Nucleotide
    /// Transformer's 6-mers), as cheap per base as reading them; a HuggingFace tokenizer runs
    /// its model (BPE merges, a WordPiece search) instead.
    pub fn is_table_driven(&self) -> bool {
        !matches!(self, Scheme::Hf(..))
    }
}

/// Special-token ids of a HuggingFace tokenizer.
#[derive(Debug, Clone, Copy)]
pub struct HfIds {
    pub pad: u32,
    pub cls: Option<u32>,
    pub sep: Option<u32>,
    pub mask: Option<u32>,
    pub unk: Option<u32>,
}

impl Scheme {
    pub fn kmer(k: usize, mode: KmerMode) -> Result<Self> {
        if !(1..=8).contains(&k) {
            bail!("k must be between 1 and 8 (got {k})");
        }
        Ok(Scheme::Kmer { k, mode })
    }

    pub fn hf(path: &Path) -> Result<Self> {
        let tok = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| anyhow::anyhow!("{}: not a usable tokenizer.json: {e}", path.display()))?;
        Self::hf_tokenizer(tok).with_context(|| path.display().to_string())
    }

    /// A tokenizer.json held as text (as a dataset or checkpoint records it).
    pub fn hf_from_json(json: &str) -> Result<Self> {
        let tok: tokenizers::Tokenizer = json
            .parse()
            .map_err(|e| anyhow::anyhow!("not a usable tokenizer.json: {e}"))?;
        Self::hf_tokenizer(tok)
    }

    fn hf_tokenizer(tok: tokenizers::Tokenizer) -> Result<Self> {
        let id = |i: u32| tok.token_to_id(special::NAMES[i as usize]);
        let pad = id(PAD)
            .or_else(|| tok.get_padding().map(|p| p.pad_id))
            .context("the tokenizer has no [PAD] token")?;
        let ids = HfIds {
            pad,
            cls: id(CLS),
            sep: id(SEP),
            mask: id(special::MASK),
            unk: id(UNK),
        };
        Ok(Scheme::Hf(Box::new(tok), ids))
    }

    /// A published `EsmTokenizer` as recorded (scheme `esm-vocab`).
    pub fn esm_vocab(info: TokenizerInfo) -> Result<Self> {
        let encoder = EsmVocabEncoder::new(&info)?;
        Ok(Scheme::EsmVocab(Box::new((info, encoder))))
    }

    pub fn pad_id(&self) -> u32 {
        match self {
            Scheme::Hf(_, ids) => ids.pad,
            Scheme::EsmVocab(e) => e.0.pad_id,
            _ => PAD,
        }
    }

    pub fn cls_id(&self) -> Option<u32> {
        match self {
            Scheme::Hf(_, ids) => ids.cls,
            Scheme::EsmVocab(e) => e.0.cls_id,
            _ => Some(CLS),
        }
    }

    pub fn sep_id(&self) -> Option<u32> {
        match self {
            Scheme::Hf(_, ids) => ids.sep,
            Scheme::EsmVocab(e) => e.0.sep_id,
            _ => Some(SEP),
        }
    }

    /// Tokens produced for `bases` bases, for the fixed-width schemes (`None` for hf).
    pub fn tokens_for_bases(&self, bases: usize) -> Option<usize> {
        match *self {
            Scheme::Nucleotide => Some(bases),
            Scheme::Kmer {
                k,
                mode: KmerMode::Overlapping,
            } => Some((bases + 1).saturating_sub(k)),
            Scheme::Kmer {
                k,
                mode: KmerMode::NonOverlapping,
            } => Some(bases / k + bases % k),
            Scheme::Hf(..) | Scheme::EsmVocab(_) => None,
        }
    }

    /// The most bases whose tokens fit in `tokens` tokens (fixed-width schemes).
    pub fn bases_for_tokens(&self, tokens: usize) -> Option<usize> {
        match *self {
            Scheme::Nucleotide => Some(tokens),
            Scheme::Kmer {
                k,
                mode: KmerMode::Overlapping,
            } => Some(tokens + k - 1),
            Scheme::Kmer {
                k,
                mode: KmerMode::NonOverlapping,
            } => Some(tokens * k),
            Scheme::Hf(..) | Scheme::EsmVocab(_) => None,
        }
    }

    /// Tokenizes cleaned bases (uppercase ACGTN), appending ids to `ids` and, when `soft` is
    /// given, a soft-mask flag per token (1 when any covered base is lowercase) to `soft_out`.
    pub fn encode(
        &self,
        bases: &[u8],
        soft: Option<&[u8]>,
        ids: &mut Vec<u32>,
        soft_out: &mut Vec<u8>,
    ) -> Result<()> {
        match *self {
            Scheme::Nucleotide => {
                nucleotide_ids(bases, ids);
                if let Some(s) = soft {
                    soft_out.extend_from_slice(s);
                }
            }
            Scheme::Kmer {
                k,
                mode: KmerMode::Overlapping,
            } => overlapping_kmers(k, bases, soft, ids, soft_out),
            Scheme::Kmer {
                k,
                mode: KmerMode::NonOverlapping,
            } => {
                let n_kmers = bases.len() / k;
                let tail_base = 5 + (1u32 << (2 * k));
                for i in 0..n_kmers {
                    let start = i * k;
                    let mut v = 0u32;
                    let mut has_n = false;
                    for &b in &bases[start..start + k] {
                        let c = code(b);
                        has_n |= c == 4;
                        v = (v << 2) | (c & 3);
                    }
                    ids.push(if has_n { UNK } else { 5 + v });
                    if let Some(s) = soft {
                        soft_out.push(u8::from(s[start..start + k].iter().any(|&f| f != 0)));
                    }
                }
                let done = n_kmers * k;
                for (j, &b) in bases[done..].iter().enumerate() {
                    ids.push(tail_base + code(b));
                    if let Some(s) = soft {
                        soft_out.push(s[done + j]);
                    }
                }
            }
            Scheme::EsmVocab(ref e) => e.1.encode(bases, soft, ids, soft_out),
            Scheme::Hf(ref tok, _) => {
                let text = std::str::from_utf8(bases).expect("cleaned bases are ASCII");
                let enc = tok
                    .encode(text, false)
                    .map_err(|e| anyhow::anyhow!("tokenizer failed: {e}"))?;
                ids.extend_from_slice(enc.get_ids());
                if let Some(s) = soft {
                    for &(a, b) in enc.get_offsets() {
                        let b = b.min(s.len());
                        soft_out.push(u8::from(a < b && s[a..b].iter().any(|&f| f != 0)));
                    }
                }
            }
        }
        Ok(())
    }

    /// The dataset metadata describing this scheme (vocabulary included).
    pub fn info(&self, add_cls: bool, add_sep: bool, hf_json: Option<String>) -> TokenizerInfo {
        match *self {
            Scheme::Nucleotide => TokenizerInfo::nucleotide(add_cls, add_sep),
            Scheme::Kmer { k, mode } => TokenizerInfo::kmer(
                k,
                if mode == KmerMode::Overlapping { 1 } else { k },
                add_cls,
                add_sep,
            ),
            Scheme::Hf(ref tok, ids) => {
                let size = tok.get_vocab_size(true);
                let mut vocab = vec![String::new(); size];
                for (t, id) in tok.get_vocab(true) {
                    if let Some(slot) = vocab.get_mut(id as usize) {
                        *slot = t;
                    }
                }
                TokenizerInfo {
                    scheme: TokenizerScheme::Hf,
                    vocab,
                    pad_id: ids.pad,
                    unk_id: ids.unk,
                    cls_id: ids.cls,
                    sep_id: ids.sep,
                    mask_id: ids.mask,
                    add_cls,
                    add_sep,
                    k: None,
                    kmer_step: None,
                    hf_tokenizer_json: hf_json,
                }
            }
            Scheme::EsmVocab(ref e) => TokenizerInfo {
                add_cls,
                add_sep,
                ..e.0.clone()
            },
        }
    }
}

/// Overlapping k-mers (step 1) of cleaned bases, appended to `ids`: the 2-bit code rolls one base
/// per k-mer instead of re-reading k bases, and a k-mer is `[UNK]` when the last N seen lies
/// inside it. Soft-mask flags roll the same way (the last lowercase base seen). Same ids as
/// encoding each window on its own (`rolling_kmers_equal_window_by_window` checks it).
fn overlapping_kmers(
    k: usize,
    bases: &[u8],
    soft: Option<&[u8]>,
    ids: &mut Vec<u32>,
    soft_out: &mut Vec<u8>,
) {
    if bases.len() < k {
        return;
    }
    let n = bases.len() + 1 - k;
    let mask = (1u32 << (2 * k)) - 1;
    let mut v = 0u32;
    // The first start whose k-mer holds no N (one past the last N seen).
    let mut clean_from = 0usize;
    for (j, &b) in bases[..k - 1].iter().enumerate() {
        let c = code(b);
        if c == 4 {
            clean_from = j + 1;
        }
        v = (v << 2) | (c & 3);
    }
    let first = ids.len();
    ids.resize(first + n, 0);
    for (start, (slot, &b)) in ids[first..].iter_mut().zip(&bases[k - 1..]).enumerate() {
        let c = code(b);
        if c == 4 {
            clean_from = start + k;
        }
        v = ((v << 2) | (c & 3)) & mask;
        *slot = if start < clean_from { UNK } else { 5 + v };
    }
    if let Some(s) = soft {
        // One past the last soft-masked base seen; 0 = none yet.
        let mut soft_until = 0usize;
        for (j, &f) in s[..k - 1].iter().enumerate() {
            if f != 0 {
                soft_until = j + 1;
            }
        }
        soft_out.reserve(n);
        for (start, &f) in s[k - 1..].iter().enumerate() {
            if f != 0 {
                soft_until = start + k;
            }
            soft_out.push(u8::from(soft_until > start));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparing_codes_every_byte_as_the_table_does() {
        for b in 0..=255u8 {
            assert_eq!(code_by_comparing(b), code(b), "byte {b}");
        }
    }

    fn enc(s: &Scheme, bases: &[u8]) -> Vec<u32> {
        let mut ids = Vec::new();
        s.encode(bases, None, &mut ids, &mut Vec::new()).unwrap();
        ids
    }

    #[test]
    fn nucleotide_ids() {
        assert_eq!(enc(&Scheme::Nucleotide, b"ACGTN"), vec![5, 6, 7, 8, 9]);
    }

    #[test]
    fn overlapping_kmers_decode_to_the_input() {
        let s = Scheme::kmer(3, KmerMode::Overlapping).unwrap();
        let info = s.info(true, true, None);
        let ids = enc(&s, b"ACGTA");
        let tokens: Vec<&str> = ids
            .iter()
            .map(|&i| info.vocab[i as usize].as_str())
            .collect();
        assert_eq!(tokens, vec!["ACG", "CGT", "GTA"]);
        assert_eq!(s.tokens_for_bases(5), Some(3));
        assert_eq!(s.bases_for_tokens(3), Some(5));
    }

    #[test]
    fn non_overlapping_kmers_with_a_tail_and_n() {
        let s = Scheme::kmer(2, KmerMode::NonOverlapping).unwrap();
        let info = s.info(false, false, None);
        let ids = enc(&s, b"ACNTG");
        let tokens: Vec<&str> = ids
            .iter()
            .map(|&i| info.vocab[i as usize].as_str())
            .collect();
        assert_eq!(tokens, vec!["AC", "[UNK]", "G"]);
        assert_eq!(s.tokens_for_bases(5), Some(3));
    }

    /// Each overlapping k-mer encoded on its own window, as the ids are defined.
    fn kmers_window_by_window(k: usize, bases: &[u8], soft: &[u8]) -> (Vec<u32>, Vec<u8>) {
        let mut ids = Vec::new();
        let mut flags = Vec::new();
        for start in 0..(bases.len() + 1).saturating_sub(k) {
            let w = &bases[start..start + k];
            let id = if w.iter().any(|&b| code(b) == 4) {
                UNK
            } else {
                5 + w.iter().fold(0u32, |v, &b| (v << 2) | code(b))
            };
            ids.push(id);
            flags.push(u8::from(soft[start..start + k].iter().any(|&f| f != 0)));
        }
        (ids, flags)
    }

    #[test]
    fn rolling_kmers_equal_window_by_window() {
        // Pseudo-random bases with N runs and soft-masked stretches at every offset.
        let mut x = 12345u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let bases: Vec<u8> = (0..3000)
            .map(|_| match next() % 23 {
                0 => b'N',
                r => b"ACGT"[(r % 4) as usize],
            })
            .collect();
        let soft: Vec<u8> = (0..3000).map(|_| u8::from(next() % 9 == 0)).collect();
        for k in 1..=8 {
            let s = Scheme::kmer(k, KmerMode::Overlapping).unwrap();
            for len in [0, k - 1, k, k + 1, 37, 3000] {
                let (want_ids, want_soft) = kmers_window_by_window(k, &bases[..len], &soft[..len]);
                let mut ids = vec![99];
                let mut flags = vec![7];
                s.encode(&bases[..len], Some(&soft[..len]), &mut ids, &mut flags)
                    .unwrap();
                assert_eq!(ids[0], 99, "k {k}: earlier ids kept");
                assert_eq!(&ids[1..], &want_ids[..], "k {k} len {len}");
                assert_eq!(&flags[1..], &want_soft[..], "k {k} len {len}");
            }
        }
    }

    #[test]
    fn kmer_soft_mask_is_any_covered_base() {
        let s = Scheme::kmer(2, KmerMode::Overlapping).unwrap();
        let mut ids = Vec::new();
        let mut soft = Vec::new();
        s.encode(b"ACGT", Some(&[0, 0, 1, 0]), &mut ids, &mut soft)
            .unwrap();
        assert_eq!(soft, vec![0, 1, 1]);
    }

    #[test]
    fn eight_mer_vocabulary_size() {
        let s = Scheme::kmer(8, KmerMode::Overlapping).unwrap();
        assert_eq!(s.info(true, true, None).vocab.len(), 5 + 65536 + 5);
        assert!(Scheme::kmer(9, KmerMode::Overlapping).is_err());
    }
}
