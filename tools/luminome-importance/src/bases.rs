//! From token scores to bases: the bases each token covers, per-base scores (k-mers spread back
//! as the mean over covering tokens), the one-hot of each base, and genomic positions.

use luminome_io::token_dataset::{IndexRow, Interval, TokenizerInfo};

/// One scored token of a record.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenScore {
    /// Index of the token in the row ([CLS] = 0 when the dataset adds it).
    pub position: usize,
    pub id: u32,
    /// Bases covered in the record's window, 0-based half-open, row orientation; `None` for
    /// schemes without fixed-width tokens (hf).
    pub span: Option<(usize, usize)>,
    pub score: f32,
}

/// The sequence tokens of one row (specials and padding left out) with their scores.
pub fn scored_tokens(
    tok: &TokenizerInfo,
    ids: &[u32],
    mask: &[u8],
    scores: &[f32],
) -> Vec<TokenScore> {
    let spans = tok.row_spans(ids, mask);
    ids.iter()
        .zip(mask)
        .zip(scores)
        .enumerate()
        .filter(|(_, ((&id, &m), _))| m != 0 && !tok.is_boundary(id))
        .map(|(position, ((&id, _), &score))| TokenScore {
            position,
            id,
            span: spans[position],
            score,
        })
        .collect()
}

/// Bases a row covers: the end of its last token span.
pub fn row_bases(tokens: &[TokenScore]) -> usize {
    tokens
        .iter()
        .filter_map(|t| t.span.map(|s| s.1))
        .max()
        .unwrap_or(0)
}

/// Per-base scores of a row: each base gets the mean score of the tokens covering it (one token
/// for single nucleotides, up to k for overlapping k-mers); `None` where no token covers it.
pub fn base_scores(tokens: &[TokenScore], n_bases: usize) -> Vec<Option<f32>> {
    let mut sum = vec![0f64; n_bases];
    let mut count = vec![0u32; n_bases];
    for t in tokens {
        if let Some((s, e)) = t.span {
            for b in s..e.min(n_bases) {
                sum[b] += f64::from(t.score);
                count[b] += 1;
            }
        }
    }
    sum.iter()
        .zip(&count)
        .map(|(&s, &c)| (c > 0).then(|| (s / f64::from(c)) as f32))
        .collect()
}

/// The base at each position of a row, read from the token strings (`None` for N, [UNK] and
/// uncovered positions): row `b` of a one-hot is A, C, G, T = 0, 1, 2, 3.
pub fn row_bases_from_tokens(
    tok: &TokenizerInfo,
    tokens: &[TokenScore],
    n_bases: usize,
) -> Vec<Option<usize>> {
    let mut bases = vec![None; n_bases];
    for t in tokens {
        let (Some((s, e)), Some(text)) = (t.span, tok.vocab.get(t.id as usize)) else {
            continue;
        };
        if text.len() != e - s {
            continue; // [UNK] or [MASK]: no bases to read
        }
        for (i, c) in text.bytes().enumerate() {
            if s + i < n_bases {
                bases[s + i] = match c.to_ascii_uppercase() {
                    b'A' => Some(0),
                    b'C' => Some(1),
                    b'G' => Some(2),
                    b'T' => Some(3),
                    _ => None,
                };
            }
        }
    }
    bases
}

/// A record's window on the genome, from its index row (`chrom start end` and the strand).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenomicWindow {
    pub chrom: String,
    pub start: u64,
    pub end: u64,
    /// `-`: the row is the reverse complement of `chrom:start-end`.
    pub minus: bool,
}

impl GenomicWindow {
    /// The window of an index row; `None` for a row without coordinates (a table row) or an
    /// empty interval.
    pub fn of_index(row: &IndexRow) -> Option<Self> {
        Self::new(row.interval.as_ref()?, row.strand)
    }

    fn new(interval: &Interval, strand: char) -> Option<Self> {
        if interval.chrom.is_empty() || interval.start >= interval.end {
            return None;
        }
        let minus = match strand {
            '+' | '.' => false,
            '-' => true,
            _ => return None,
        };
        Some(Self {
            chrom: interval.chrom.clone(),
            start: interval.start,
            end: interval.end,
            minus,
        })
    }

    /// The genomic position of base `offset` of the row (row orientation), or `None` past the
    /// window: `start + offset` on `+`, `end − 1 − offset` on `-`.
    pub fn position(&self, offset: usize) -> Option<u64> {
        let offset = offset as u64;
        if offset >= self.end - self.start {
            return None;
        }
        Some(if self.minus {
            self.end - 1 - offset
        } else {
            self.start + offset
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window of a version 1 index's `chr:start-end(strand)`.
    fn window(coords: &str) -> Option<GenomicWindow> {
        let strand = if coords.ends_with("(-)") { '-' } else { '+' };
        GenomicWindow::new(&Interval::parse_v1(coords)?, strand)
    }

    fn kmer_tokenizer() -> TokenizerInfo {
        // 3-mers, overlapping; ids 5.. are k-mers of the test.
        let mut vocab: Vec<String> = ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"]
            .map(String::from)
            .to_vec();
        vocab.extend(["ACG", "CGT", "GTA"].map(String::from));
        TokenizerInfo {
            scheme: luminome_io::token_dataset::TokenizerScheme::Kmer,
            vocab,
            pad_id: 0,
            unk_id: Some(4),
            cls_id: Some(1),
            sep_id: Some(2),
            mask_id: Some(3),
            add_cls: true,
            add_sep: true,
            k: Some(3),
            kmer_step: Some(1),
            hf_tokenizer_json: None,
        }
    }

    #[test]
    fn overlapping_kmer_scores_spread_back_as_the_mean_of_covering_tokens() {
        let tok = kmer_tokenizer();
        // Row "ACGTA": [CLS] ACG CGT GTA [SEP] [PAD], scores 9 1 2 4 9 9.
        let ids = [1, 5, 6, 7, 2, 0];
        let mask = [1, 1, 1, 1, 1, 0];
        let tokens = scored_tokens(&tok, &ids, &mask, &[9.0, 1.0, 2.0, 4.0, 9.0, 9.0]);
        assert_eq!(tokens.len(), 3, "specials and padding are left out");
        assert_eq!(tokens[0].span, Some((0, 3)));
        assert_eq!(tokens[2].span, Some((2, 5)));
        let n = row_bases(&tokens);
        assert_eq!(n, 5);
        // base 0: ACG → 1; base 1: ACG, CGT → 1.5; base 2: all three → 7/3; base 3: 3; base 4: 4.
        let b = base_scores(&tokens, n);
        let want = [1.0, 1.5, 7.0 / 3.0, 3.0, 4.0];
        for (got, want) in b.iter().zip(want) {
            assert!((got.unwrap() - want).abs() < 1e-6, "{b:?}");
        }
        let bases = row_bases_from_tokens(&tok, &tokens, n);
        assert_eq!(bases, [Some(0), Some(1), Some(2), Some(3), Some(0)]); // A C G T A
    }

    #[test]
    fn coordinates_parse_and_minus_rows_map_back_from_the_window_end() {
        let w = window("chr1:100-110(-)").unwrap();
        assert_eq!(
            (w.chrom.as_str(), w.start, w.end, w.minus),
            ("chr1", 100, 110, true)
        );
        // Row base 0 is the complement of genomic base 109, row base 9 of genomic base 100.
        assert_eq!(w.position(0), Some(109));
        assert_eq!(w.position(9), Some(100));
        assert_eq!(w.position(10), None);
        let p = window("HLA-A*01:01:5-8(+)").unwrap();
        assert_eq!(
            (p.chrom.as_str(), p.position(0), p.position(2)),
            ("HLA-A*01:01", Some(5), Some(7))
        );
        assert_eq!(window("."), None);
        assert_eq!(window("chr1:5-5(+)"), None);
    }
}
