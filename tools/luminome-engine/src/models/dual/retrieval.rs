//! Retrieval evaluation of a dual encoder: embed each distinct query and each passage of a
//! corpus, rank the corpus by cosine similarity for every query, and score the ranking
//! (`luminome_metrics::retrieval`). Used by training's dev evaluation and by `luminome-predict`.
//!
//! Two settings, reported side by side:
//! - **full corpus**: each distinct query against every distinct passage of the corpus — the
//!   passages of the pairs themselves, or a separate corpus (e.g. every window of a genome
//!   region) that must contain each query's positives;
//! - **in-batch** (the spec's training view): the pairs cut into batches of `in_batch_size` with
//!   no repeated query or passage in a batch ([`super::batches::arrange`] on the file order);
//!   each query ranks only its batch's passages. With one positive per query, MAP = MRR,
//!   R@K = Hit@K and P@K = Hit@K / K there.

use std::collections::HashMap;

use anyhow::{bail, Result};
use candle_core::{Device, Tensor};
use luminome_io::retrieval_pairs::{RetrievalIndexRow, RetrievalPairs, Side};
use luminome_io::token_dataset::{TokenBatch, TokenDataset};
use luminome_metrics::retrieval::{relevant_ranks, QueryScores, RetrievalMetrics};

use super::batches::{arrange, exclusions};
use super::model::DualEncoder;
use crate::input::batch_tensors;
use crate::input::tokens::{real_length, trim_batch};

/// How many best passages each query's output line lists.
pub const TOP: usize = 10;

/// Embeddings `[n, dim]` (row-major) of rows `0..n` of a source, `batch` at a time, each batch
/// trimmed to its longest row. Eval mode.
pub fn embed_rows(
    model: &DualEncoder,
    side: Side,
    n: usize,
    batch: usize,
    device: &Device,
    fetch: &dyn Fn(&[usize]) -> Result<TokenBatch>,
) -> Result<Vec<f32>> {
    let dim = model.config.encoder.d_model;
    let mut out = Vec::with_capacity(n * dim);
    for records in crate::train::task::chunks(n, batch) {
        let b = fetch(&records)?;
        let len = b
            .attention_mask
            .chunks(b.max_length.max(1))
            .map(real_length)
            .max()
            .unwrap_or(0)
            .max(1);
        let t = batch_tensors(&trim_batch(b, len), device)?;
        let e = model.embed(side, &t.ids, &t.mask, None)?;
        out.extend(e.flatten_all()?.to_vec1::<f32>()?);
    }
    Ok(out)
}

/// The unpadded ids of each row of a token batch.
fn unpadded(b: &TokenBatch) -> Vec<Vec<u32>> {
    b.input_ids
        .chunks(b.max_length.max(1))
        .zip(b.attention_mask.chunks(b.max_length.max(1)))
        .map(|(ids, m)| ids[..real_length(m)].to_vec())
        .collect()
}

/// The passages ranked: one row per distinct passage, from the pairs or from a token dataset.
pub enum Corpus<'a> {
    /// The distinct passages of the pairs (the first row of each passage group).
    Pairs(Vec<usize>),
    /// A token dataset: its rows (identical rows merged: the first kept).
    Tokens(&'a TokenDataset, Vec<usize>),
}

impl Corpus<'_> {
    pub fn len(&self) -> usize {
        match self {
            Self::Pairs(r) | Self::Tokens(_, r) => r.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What is evaluated: each distinct query (a representative pair row) and its relevant corpus
/// passages.
pub struct RetrievalSet<'a> {
    pub corpus: Corpus<'a>,
    /// The first pair row of each distinct query, in order of first appearance.
    pub query_rows: Vec<usize>,
    /// Corpus indices of each query's relevant passages.
    pub relevant: Vec<Vec<usize>>,
    /// The corpus index of each passage group of the pairs.
    pub passage_of_group: Vec<usize>,
    /// Token-dataset corpora: identical rows merged into one passage.
    pub merged_duplicates: usize,
}

/// The first row of each group, in order of first appearance (groups are numbered that way).
fn first_rows(groups: &[u32]) -> Vec<usize> {
    let mut seen = vec![false; groups.iter().max().map_or(0, |&g| g as usize + 1)];
    let mut rows = Vec::new();
    for (r, &g) in groups.iter().enumerate() {
        if !std::mem::replace(&mut seen[g as usize], true) {
            rows.push(r);
        }
    }
    rows
}

impl<'a> RetrievalSet<'a> {
    /// Queries of `pairs` against its own distinct passages.
    pub fn from_pairs(pairs: &RetrievalPairs) -> Self {
        let (qg, pg) = (pairs.groups(Side::Query), pairs.groups(Side::Passage));
        let query_rows = first_rows(qg);
        let passage_rows = first_rows(pg);
        // Passage group g is corpus index g (groups count from 0 in order of appearance).
        let mut relevant = vec![Vec::new(); query_rows.len()];
        for (r, &q) in qg.iter().enumerate() {
            let rel = &mut relevant[q as usize];
            if !rel.contains(&(pg[r] as usize)) {
                rel.push(pg[r] as usize);
            }
        }
        Self {
            passage_of_group: (0..passage_rows.len()).collect(),
            corpus: Corpus::Pairs(passage_rows),
            query_rows,
            relevant,
            merged_duplicates: 0,
        }
    }

    /// Queries of `pairs` against the rows of `corpus`, which must hold every positive passage
    /// (matched by token ids). `index` names the pairs in the refusal.
    pub fn with_corpus(
        pairs: &RetrievalPairs,
        corpus: &'a TokenDataset,
        index: &[RetrievalIndexRow],
    ) -> Result<Self> {
        if !pairs.tokenizer().same_tokenization(corpus.tokenizer()) {
            bail!(
                "{}: tokenized differently from the pairs {} ({} vs {}); tokenize it with `luminome-tokenize --like {}`",
                corpus.path().display(),
                pairs.path().display(),
                corpus.tokenizer().describe(),
                pairs.tokenizer().describe(),
                pairs.path().display()
            );
        }
        let mut by_ids: HashMap<Vec<u32>, usize> = HashMap::new();
        let mut rows = Vec::new();
        let mut merged = 0;
        for records in crate::train::task::chunks(corpus.len(), 1024) {
            let b = corpus.batch(&records)?;
            for (k, ids) in unpadded(&b).into_iter().enumerate() {
                match by_ids.entry(ids) {
                    std::collections::hash_map::Entry::Occupied(_) => merged += 1,
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(rows.len());
                        rows.push(records[k]);
                    }
                }
            }
        }
        let (qg, pg) = (pairs.groups(Side::Query), pairs.groups(Side::Passage));
        let query_rows = first_rows(qg);
        let mut corpus_of_group: HashMap<u32, usize> = HashMap::new();
        let mut relevant = vec![Vec::new(); query_rows.len()];
        for records in crate::train::task::chunks(pairs.len(), 1024) {
            let b = pairs.batch(Side::Passage, &records)?;
            for (k, ids) in unpadded(&b).into_iter().enumerate() {
                let r = records[k];
                let c = match corpus_of_group.get(&pg[r]) {
                    Some(&c) => c,
                    None => {
                        let Some(&c) = by_ids.get(&ids) else {
                            let at = index.get(r).map_or(format!("pair {r}"), |i| {
                                format!(
                                    "query {} (line {}): its passage {}",
                                    i.query_id, i.line, i.passage_id
                                )
                            });
                            bail!(
                                "{}: {at} is not in the corpus {}; every query's positive passage must be one of the corpus's records (the same sequence, tokenized the same way)",
                                pairs.path().display(),
                                corpus.path().display()
                            );
                        };
                        corpus_of_group.insert(pg[r], c);
                        c
                    }
                };
                let rel = &mut relevant[qg[r] as usize];
                if !rel.contains(&c) {
                    rel.push(c);
                }
            }
        }
        let n_groups = pg.iter().max().map_or(0, |&g| g as usize + 1);
        let passage_of_group = (0..n_groups as u32).map(|g| corpus_of_group[&g]).collect();
        Ok(Self {
            corpus: Corpus::Tokens(corpus, rows),
            query_rows,
            relevant,
            passage_of_group,
            merged_duplicates: merged,
        })
    }
}

/// One query's result.
#[derive(Debug, Clone)]
pub struct QueryResult {
    /// The pair row that stands for the query.
    pub row: usize,
    /// Ranks (1-based, ascending) of its relevant passages.
    pub ranks: Vec<usize>,
    pub scores: QueryScores,
    /// The best passages: (corpus index, cosine similarity), best first.
    pub top: Vec<(usize, f32)>,
    /// Mean cosine similarity to its relevant passages.
    pub positive_similarity: f64,
}

/// Everything an evaluation measured.
pub struct RetrievalReport {
    pub full: RetrievalMetrics,
    pub in_batch: RetrievalMetrics,
    pub in_batch_size: usize,
    /// Mean InfoNCE loss over the in-batch batches (eval mode).
    pub in_batch_loss: f64,
    pub per_query: Vec<QueryResult>,
    pub corpus_size: usize,
    /// Mean over queries of [`QueryResult::positive_similarity`].
    pub positive_similarity: f64,
    /// Mean over dimensions of the variance across embeddings (queries; corpus passages).
    pub query_variance: f64,
    pub passage_variance: f64,
    /// Mean L2 norm of the embeddings (1 by construction; reported as a check).
    pub query_norm: f64,
    pub passage_norm: f64,
    pub dim: usize,
    /// `[queries, dim]` and `[corpus, dim]`, row-major.
    pub query_embeddings: Vec<f32>,
    pub passage_embeddings: Vec<f32>,
}

impl RetrievalReport {
    /// `(name, value)` rows: sizes, `full.*` and `in_batch.*` metrics, embedding statistics.
    pub fn metric_rows(&self) -> Vec<(String, f64)> {
        let mut v = vec![
            ("queries".to_string(), self.per_query.len() as f64),
            ("corpus_size".to_string(), self.corpus_size as f64),
        ];
        v.extend(
            self.full
                .named()
                .into_iter()
                .map(|(k, x)| (format!("full.{k}"), x)),
        );
        v.push(("in_batch.size".into(), self.in_batch_size as f64));
        v.push(("in_batch.queries".into(), self.in_batch.n_queries as f64));
        v.push(("in_batch.loss".into(), self.in_batch_loss));
        v.extend(
            self.in_batch
                .named()
                .into_iter()
                .map(|(k, x)| (format!("in_batch.{k}"), x)),
        );
        v.extend([
            ("positive_similarity".into(), self.positive_similarity),
            ("query_variance".into(), self.query_variance),
            ("passage_variance".into(), self.passage_variance),
            ("query_norm".into(), self.query_norm),
            ("passage_norm".into(), self.passage_norm),
        ]);
        v
    }
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

/// Mean over dimensions of the variance across rows, and the mean row norm.
fn spread(e: &[f32], dim: usize) -> (f64, f64) {
    let n = e.len() / dim.max(1);
    if n == 0 {
        return (0.0, 0.0);
    }
    let mut mean = vec![0f64; dim];
    let mut norm = 0f64;
    for row in e.chunks(dim) {
        for (m, &x) in mean.iter_mut().zip(row) {
            *m += f64::from(x) / n as f64;
        }
        norm += dot(row, row).sqrt();
    }
    let mut var = 0f64;
    for row in e.chunks(dim) {
        for (m, &x) in mean.iter().zip(row) {
            var += (f64::from(x) - m).powi(2);
        }
    }
    (var / (n * dim) as f64, norm / n as f64)
}

/// Evaluates `model` on `pairs` with the queries and corpus of `set`.
pub fn evaluate(
    model: &DualEncoder,
    pairs: &RetrievalPairs,
    set: &RetrievalSet,
    in_batch_size: usize,
    batch: usize,
    device: &Device,
) -> Result<RetrievalReport> {
    let dim = model.config.encoder.d_model;
    let q_rows = &set.query_rows;
    let query_emb = embed_rows(model, Side::Query, q_rows.len(), batch, device, &|r| {
        let rows: Vec<usize> = r.iter().map(|&i| q_rows[i]).collect();
        pairs.batch(Side::Query, &rows)
    })?;
    let passage_emb = match &set.corpus {
        Corpus::Pairs(rows) => embed_rows(model, Side::Passage, rows.len(), batch, device, &|r| {
            let rows: Vec<usize> = r.iter().map(|&i| rows[i]).collect();
            pairs.batch(Side::Passage, &rows)
        })?,
        Corpus::Tokens(ds, rows) => {
            embed_rows(model, Side::Passage, rows.len(), batch, device, &|r| {
                let rows: Vec<usize> = r.iter().map(|&i| rows[i]).collect();
                ds.batch(&rows)
            })?
        }
    };
    let n_corpus = set.corpus.len();
    // Full corpus: scores of a block of queries against every passage at once.
    let p = Tensor::from_slice(&passage_emb, (n_corpus, dim), device)?;
    let block = (1usize << 24).div_ceil(n_corpus.max(1)).clamp(1, 4096);
    let mut per_query = Vec::with_capacity(q_rows.len());
    for start in (0..q_rows.len()).step_by(block) {
        let end = (start + block).min(q_rows.len());
        let q = Tensor::from_slice(
            &query_emb[start * dim..end * dim],
            (end - start, dim),
            device,
        )?;
        let scores: Vec<Vec<f32>> = crate::nn::matmul::device_matmul(&q, &p.t()?)?.to_vec2()?;
        for (k, s) in scores.iter().enumerate() {
            let qi = start + k;
            let rel = &set.relevant[qi];
            let Some(ranks) = relevant_ranks(s, rel) else {
                bail!(
                    "query row {}: no usable relevant passage (a NaN similarity, or none)",
                    q_rows[qi]
                );
            };
            let mut order: Vec<usize> = (0..s.len()).collect();
            let top_n = TOP.min(s.len());
            let cmp = |a: &usize, b: &usize| s[*b].total_cmp(&s[*a]).then(a.cmp(b));
            if top_n < s.len() {
                order.select_nth_unstable_by(top_n, cmp);
            }
            order.truncate(top_n);
            order.sort_by(cmp);
            per_query.push(QueryResult {
                row: q_rows[qi],
                scores: QueryScores::from_ranks(&ranks),
                ranks,
                top: order.into_iter().map(|j| (j, s[j])).collect(),
                positive_similarity: rel.iter().map(|&j| f64::from(s[j])).sum::<f64>()
                    / rel.len() as f64,
            });
        }
    }
    let full =
        RetrievalMetrics::from_queries(&per_query.iter().map(|q| q.scores).collect::<Vec<_>>());
    let positive_similarity = per_query.iter().map(|q| q.positive_similarity).sum::<f64>()
        / per_query.len().max(1) as f64;

    // In-batch: every pair row, batches without repeats, embeddings looked up by group.
    let (qg, pg) = (pairs.groups(Side::Query), pairs.groups(Side::Passage));
    let query_slot: HashMap<u32, usize> = q_rows
        .iter()
        .enumerate()
        .map(|(i, &r)| (qg[r], i))
        .collect();
    let passage_of_row = |r: usize| {
        let j = set.passage_of_group[pg[r] as usize];
        &passage_emb[j * dim..(j + 1) * dim]
    };
    let size = in_batch_size.max(1);
    let order = arrange((0..pairs.len()).collect(), size, qg, pg);
    let mut in_batch = Vec::with_capacity(pairs.len());
    let (mut loss_sum, mut loss_n) = (0f64, 0usize);
    let tau = model.config.temperature;
    for chunk in order.chunks(size) {
        let ps: Vec<&[f32]> = chunk.iter().map(|&r| passage_of_row(r)).collect();
        let ex = exclusions(chunk, qg, pg, &Device::Cpu)?
            .map(|t| t.to_vec2::<f32>())
            .transpose()?;
        for (i, &r) in chunk.iter().enumerate() {
            let qi = query_slot[&qg[r]];
            let q = &query_emb[qi * dim..(qi + 1) * dim];
            let s: Vec<f32> = ps.iter().map(|p| dot(q, p) as f32).collect();
            // In-batch positives: its own passage and any row sharing its query or passage.
            let rel: Vec<usize> = chunk
                .iter()
                .enumerate()
                .filter(|&(j, &rj)| j == i || qg[rj] == qg[r] || pg[rj] == pg[r])
                .map(|(j, _)| j)
                .collect();
            if let Some(ranks) = relevant_ranks(&s, &rel) {
                in_batch.push(QueryScores::from_ranks(&ranks));
            }
            // The loss as training computes it: excluded logits left out.
            let logits: Vec<f64> = s
                .iter()
                .enumerate()
                .filter(|&(j, _)| ex.as_ref().is_none_or(|e| e[i][j] == 0.0))
                .map(|(_, &x)| f64::from(x) / tau)
                .collect();
            let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let lse = max + logits.iter().map(|x| (x - max).exp()).sum::<f64>().ln();
            loss_sum += lse - f64::from(s[i]) / tau;
            loss_n += 1;
        }
    }
    let (query_variance, query_norm) = spread(&query_emb, dim);
    let (passage_variance, passage_norm) = spread(&passage_emb, dim);
    Ok(RetrievalReport {
        full,
        in_batch: RetrievalMetrics::from_queries(&in_batch),
        in_batch_size: size,
        in_batch_loss: loss_sum / loss_n.max(1) as f64,
        per_query,
        corpus_size: n_corpus,
        positive_similarity,
        query_variance,
        passage_variance,
        query_norm,
        passage_norm,
        dim,
        query_embeddings: query_emb,
        passage_embeddings: passage_emb,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_rows_follow_first_appearance() {
        assert_eq!(first_rows(&[0, 1, 0, 2, 1]), vec![0, 1, 3]);
        assert!(first_rows(&[]).is_empty());
    }

    #[test]
    fn spread_of_identical_rows_is_zero_and_norm_is_measured() {
        let (v, n) = spread(&[0.6, 0.8, 0.6, 0.8], 2);
        assert!(v.abs() < 1e-12 && (n - 1.0).abs() < 1e-6);
        // Two rows (1, 0), (0, 1): per-dimension variance 1/4 each.
        let (v, _) = spread(&[1.0, 0.0, 0.0, 1.0], 2);
        assert!((v - 0.25).abs() < 1e-12);
    }
}
