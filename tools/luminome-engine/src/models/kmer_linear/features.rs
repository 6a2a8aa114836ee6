//! k-mer features of token rows: the bases a row stands for (read back from its tokens), and
//! per-k k-mer frequencies as sparse rows (CSR for scoring, CSC for the gradient).
//!
//! Feature layout: for k = k_min..=k_max in turn, the 4^k k-mers over ACGT in lexicographic
//! order (A < C < G < T), so feature `offset(k) + code(kmer)`. A k-mer containing anything
//! but A, C, G, T (N, [UNK], a masked token) is not counted.
//!
//! Value of a k-mer: its count in the row divided by the row's number of counted k-mers of that
//! k, times the mean of that number over the training set (`scale[k]`): for sequences of one
//! length this is the raw count (what character n-gram baselines use), and rows of other
//! lengths are put on the same footing instead of weighting long rows up.

use luminome_io::token_dataset::TokenizerInfo;

/// Code of a base that is not A, C, G or T.
pub const NOT_ACGT: u8 = 4;

/// The bases of one row, A, C, G, T = 0..3 and [`NOT_ACGT`] elsewhere, read off the tokens'
/// strings and spans (nucleotide and k-mer vocabularies). `None` when the tokenizer has no base
/// spans (a learned BPE).
pub fn row_bases(tok: &TokenizerInfo, ids: &[u32], mask: &[u8]) -> Option<Vec<u8>> {
    if !tok.scheme.has_base_spans() {
        return None;
    }
    let mut bases: Vec<u8> = Vec::with_capacity(ids.len());
    for (position, (&id, &m)) in ids.iter().zip(mask).enumerate() {
        if m == 0 {
            continue;
        }
        let Some((s, e)) = tok.token_span(position, id) else {
            continue;
        };
        if bases.len() < e {
            bases.resize(e, NOT_ACGT);
        }
        let text = tok.vocab.get(id as usize).map(String::as_bytes);
        match text {
            // [UNK] / [MASK] stand for bases we cannot read: leave NOT_ACGT.
            Some(t) if t.len() == e - s => {
                for (i, &c) in t.iter().enumerate() {
                    bases[s + i] = base_code(c);
                }
            }
            _ => {}
        }
    }
    Some(bases)
}

pub fn base_code(c: u8) -> u8 {
    match c.to_ascii_uppercase() {
        b'A' => 0,
        b'C' => 1,
        b'G' => 2,
        b'T' => 3,
        _ => NOT_ACGT,
    }
}

/// The feature layout of a k range.
#[derive(Debug, Clone, PartialEq)]
pub struct KmerLayout {
    pub k_min: usize,
    pub k_max: usize,
}

impl KmerLayout {
    /// First feature of k-mers of length `k`.
    pub fn offset(&self, k: usize) -> usize {
        (self.k_min..k).map(|j| 1usize << (2 * j)).sum()
    }

    /// Number of features.
    pub fn len(&self) -> usize {
        self.offset(self.k_max + 1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The k of feature `f`.
    pub fn k_of(&self, f: usize) -> usize {
        (self.k_min..=self.k_max)
            .find(|&k| f < self.offset(k + 1))
            .unwrap_or(self.k_max)
    }

    /// The k-mer string of feature `f`.
    pub fn name(&self, f: usize) -> String {
        let k = self.k_of(f);
        let code = f - self.offset(k);
        (0..k)
            .map(|j| b"ACGT"[(code >> (2 * (k - 1 - j))) & 3] as char)
            .collect()
    }

    /// Every counted k-mer of `bases` for each k: `(k, start, code)`, in k then start order.
    pub fn occurrences(&self, bases: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        for k in self.k_min..=self.k_max {
            let mask = (1usize << (2 * k)) - 1;
            let (mut code, mut run) = (0usize, 0usize);
            for (i, &b) in bases.iter().enumerate() {
                if b >= NOT_ACGT {
                    run = 0;
                    code = 0;
                    continue;
                }
                code = ((code << 2) | b as usize) & mask;
                run += 1;
                if run >= k {
                    out.push((k, i + 1 - k, code));
                }
            }
        }
        out
    }

    /// Counted k-mers of each k in `bases`.
    pub fn positions(&self, bases: &[u8]) -> Vec<usize> {
        self.count_per_k(&self.occurrences(bases))
    }

    fn count_per_k(&self, occ: &[(usize, usize, usize)]) -> Vec<usize> {
        let mut n = vec![0usize; self.k_max - self.k_min + 1];
        for &(k, _, _) in occ {
            n[k - self.k_min] += 1;
        }
        n
    }

    /// The sparse feature row of `bases`: (feature, value) sorted by feature. `scale[k - k_min]`
    /// is the training set's mean number of counted k-mers of length k.
    pub fn features(&self, bases: &[u8], scale: &[f64]) -> Vec<(u32, f32)> {
        let occ = self.occurrences(bases);
        let positions = self.count_per_k(&occ);
        // (feature, k index) of every occurrence; the k is known here, not looked up per feature.
        let mut idx: Vec<(u32, usize)> = occ
            .iter()
            .map(|&(k, _, code)| ((self.offset(k) + code) as u32, k - self.k_min))
            .collect();
        idx.sort_unstable();
        let mut row: Vec<(u32, f32)> = Vec::new();
        let mut ks: Vec<usize> = Vec::new();
        for (f, k) in idx {
            match row.last_mut() {
                Some((g, c)) if *g == f => *c += 1.0,
                _ => {
                    row.push((f, 1.0));
                    ks.push(k);
                }
            }
        }
        for ((_, v), k) in row.iter_mut().zip(ks) {
            *v = (f64::from(*v) * scale[k] / positions[k] as f64) as f32;
        }
        row
    }
}

/// Sparse rows, compressed by row.
#[derive(Debug, Clone, Default)]
pub struct SparseRows {
    pub row_start: Vec<usize>,
    pub index: Vec<u32>,
    pub value: Vec<f32>,
}

impl SparseRows {
    pub fn from_rows(rows: Vec<Vec<(u32, f32)>>) -> Self {
        let mut s = Self {
            row_start: Vec::with_capacity(rows.len() + 1),
            ..Self::default()
        };
        s.row_start.push(0);
        for r in rows {
            for (i, v) in r {
                s.index.push(i);
                s.value.push(v);
            }
            s.row_start.push(s.index.len());
        }
        s
    }

    pub fn rows(&self) -> usize {
        self.row_start.len() - 1
    }

    /// Row `r`'s entries with feature below `limit` (rows are sorted by feature).
    pub fn row(&self, r: usize, limit: usize) -> (&[u32], &[f32]) {
        let (s, e) = (self.row_start[r], self.row_start[r + 1]);
        let idx = &self.index[s..e];
        let n = idx.partition_point(|&f| (f as usize) < limit);
        (&idx[..n], &self.value[s..s + n])
    }

    /// Root mean square of every column over the rows (1 for a column that is all zero).
    pub fn column_rms(&self, features: usize) -> Vec<f64> {
        let mut ss = vec![0f64; features];
        for (&f, &v) in self.index.iter().zip(&self.value) {
            ss[f as usize] += f64::from(v) * f64::from(v);
        }
        let n = self.rows().max(1) as f64;
        ss.iter()
            .map(|&s| if s > 0.0 { (s / n).sqrt() } else { 1.0 })
            .collect()
    }

    /// Divides every entry by its column's `scale`.
    pub fn divide_columns(&mut self, scale: &[f64]) {
        for (&f, v) in self.index.iter().zip(self.value.iter_mut()) {
            *v = (f64::from(*v) / scale[f as usize]) as f32;
        }
    }

    /// The same matrix compressed by column (`features` columns): for Xᵀ·R.
    pub fn transpose(&self, features: usize) -> SparseRows {
        let mut count = vec![0usize; features + 1];
        for &f in &self.index {
            count[f as usize + 1] += 1;
        }
        for j in 0..features {
            count[j + 1] += count[j];
        }
        let mut next = count.clone();
        let mut index = vec![0u32; self.index.len()];
        let mut value = vec![0f32; self.index.len()];
        for r in 0..self.rows() {
            for p in self.row_start[r]..self.row_start[r + 1] {
                let f = self.index[p] as usize;
                index[next[f]] = r as u32;
                value[next[f]] = self.value[p];
                next[f] += 1;
            }
        }
        SparseRows {
            row_start: count,
            index,
            value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_kmers_and_skips_those_with_n() {
        let layout = KmerLayout { k_min: 1, k_max: 2 };
        assert_eq!(layout.len(), 4 + 16);
        let bases: Vec<u8> = b"ACGNAC".iter().map(|&c| base_code(c)).collect();
        // 1-mers: A C G A C (5), 2-mers: AC CG AC (3; GN, NA skipped).
        assert_eq!(layout.positions(&bases), vec![5, 3]);
        let row = layout.features(&bases, &[5.0, 3.0]);
        let named: Vec<(String, f32)> = row
            .iter()
            .map(|&(f, v)| (layout.name(f as usize), v))
            .collect();
        assert_eq!(
            named,
            vec![
                ("A".into(), 2.0),
                ("C".into(), 2.0),
                ("G".into(), 1.0),
                ("AC".into(), 2.0),
                ("CG".into(), 1.0)
            ]
        );
        // Scaled to the training mean: half the positions → frequencies times the mean.
        let row = layout.features(&bases, &[10.0, 3.0]);
        assert_eq!(row[0].1, 4.0);
    }

    #[test]
    fn reads_bases_back_from_overlapping_kmers() {
        let tok = TokenizerInfo::kmer(3, 1, true, true);
        let id = |s: &str| tok.vocab.iter().position(|v| v == s).unwrap() as u32;
        // [CLS] ACG CGT GTT [SEP] [PAD] = ACGTT
        let ids = [1, id("ACG"), id("CGT"), id("GTT"), 2, 0];
        let mask = [1, 1, 1, 1, 1, 0];
        assert_eq!(row_bases(&tok, &ids, &mask).unwrap(), vec![0, 1, 2, 3, 3]);
        let nuc = TokenizerInfo::nucleotide(false, false);
        let ids = [5, 9, 4, 8];
        assert_eq!(
            row_bases(&nuc, &ids, &[1, 1, 1, 1]).unwrap(),
            vec![0, NOT_ACGT, NOT_ACGT, 3]
        );
    }

    #[test]
    fn transpose_keeps_every_entry() {
        let x = SparseRows::from_rows(vec![vec![(0, 1.0), (2, 2.0)], vec![(1, 3.0), (2, 4.0)]]);
        let t = x.transpose(3);
        assert_eq!(t.row(2, usize::MAX), (&[0u32, 1][..], &[2.0f32, 4.0][..]));
        assert_eq!(x.row(1, 2), (&[1u32][..], &[3.0f32][..]));
    }
}
