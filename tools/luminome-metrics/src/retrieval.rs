//! Retrieval metrics: how well a ranking of a corpus puts each query's relevant documents first
//! (specs/genetic-attention-dual-encoder.md, "Evaluation Metrics"; binary relevance).
//!
//! For one query, documents are ranked by score, highest first. **Ties are broken against the
//! query**: a relevant document tied with non-relevant ones is ranked after them (so a model that
//! gives every document the same score gets the worst ranks, not lucky ones). With `k_1 < k_2 <
//! … < k_m` the ranks (1-based) of the query's `m` relevant documents:
//!
//! - **RR** = 1 / k_1; **RR@10** = RR when k_1 ≤ 10, else 0. MRR / MRR@10 are their means.
//! - **AP** = (1/m) Σ_i i / k_i (MAP: the mean). With one relevant document AP = RR.
//! - **NDCG@K** = DCG@K / IDCG@K, DCG@K = Σ_{relevant, k ≤ K} 1 / log2(k + 1), IDCG@K the same for
//!   the ideal ranking (the m relevant documents first).
//! - **P@K** = (relevant in the top K) / K — the spec's formula. **R@K** = (relevant in the top
//!   K) / m. **Hit@K** = 1 when any relevant document is in the top K. With one relevant document
//!   R@K = Hit@K and P@K = Hit@K / K (the spec's results table shows P@5 = R@5 = Hit@5, which its
//!   formula gives only for K = 1: compare its P@5 column with Hit@5).

/// Ranks (1-based, ascending) of the relevant documents `relevant` (indices into `scores`) when
/// the corpus is sorted by `scores` descending, ties broken against the query (relevant after
/// tied non-relevant; among tied relevant ones, by index). `None` when `relevant` is empty or
/// names a document past the corpus, or a relevant score is NaN.
pub fn relevant_ranks(scores: &[f32], relevant: &[usize]) -> Option<Vec<usize>> {
    if relevant.is_empty() || relevant.iter().any(|&r| r >= scores.len()) {
        return None;
    }
    let mut rel: Vec<usize> = relevant.to_vec();
    rel.sort_unstable();
    rel.dedup();
    if rel.iter().any(|&r| scores[r].is_nan()) {
        return None;
    }
    let is_rel = |j: usize| rel.binary_search(&j).is_ok();
    let mut ranks: Vec<usize> = rel
        .iter()
        .map(|&r| {
            let s = scores[r];
            // Documents ahead of r: higher scores (NaN counts as lowest), tied non-relevant ones,
            // and tied relevant ones with a smaller index.
            1 + scores
                .iter()
                .enumerate()
                .filter(|&(j, &t)| j != r && (t > s || (t == s && (!is_rel(j) || j < r))))
                .count()
        })
        .collect();
    ranks.sort_unstable();
    Some(ranks)
}

/// The per-query metrics of one ranking, from the relevant documents' ranks.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct QueryScores {
    pub rr: f64,
    pub rr_at_10: f64,
    pub ap: f64,
    pub ndcg_at_5: f64,
    pub ndcg_at_10: f64,
    pub p_at_1: f64,
    pub p_at_5: f64,
    pub r_at_1: f64,
    pub r_at_5: f64,
    pub hit_at_1: f64,
    pub hit_at_5: f64,
}

impl QueryScores {
    /// From the ascending 1-based ranks of a query's relevant documents (non-empty).
    pub fn from_ranks(ranks: &[usize]) -> Self {
        let m = ranks.len() as f64;
        let first = ranks[0] as f64;
        let within = |k: usize| ranks.iter().filter(|&&r| r <= k).count() as f64;
        let ndcg = |k: usize| {
            let dcg: f64 = ranks
                .iter()
                .filter(|&&r| r <= k)
                .map(|&r| 1.0 / ((r + 1) as f64).log2())
                .sum();
            let ideal: f64 = (1..=ranks.len().min(k))
                .map(|r| 1.0 / ((r + 1) as f64).log2())
                .sum();
            dcg / ideal
        };
        let ap = ranks
            .iter()
            .enumerate()
            .map(|(i, &k)| (i + 1) as f64 / k as f64)
            .sum::<f64>()
            / m;
        Self {
            rr: 1.0 / first,
            rr_at_10: if ranks[0] <= 10 { 1.0 / first } else { 0.0 },
            ap,
            ndcg_at_5: ndcg(5),
            ndcg_at_10: ndcg(10),
            p_at_1: within(1),
            p_at_5: within(5) / 5.0,
            r_at_1: within(1) / m,
            r_at_5: within(5) / m,
            hit_at_1: f64::from(within(1) > 0.0),
            hit_at_5: f64::from(within(5) > 0.0),
        }
    }
}

/// Retrieval metrics averaged over queries.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RetrievalMetrics {
    pub n_queries: usize,
    /// Mean of the per-query scores (each field a mean over queries).
    pub mean: QueryScores,
}

impl RetrievalMetrics {
    /// The mean over queries of `per_query` (empty: all zero).
    pub fn from_queries(per_query: &[QueryScores]) -> Self {
        let n = per_query.len();
        let mut sum = QueryScores::default();
        for q in per_query {
            sum.rr += q.rr;
            sum.rr_at_10 += q.rr_at_10;
            sum.ap += q.ap;
            sum.ndcg_at_5 += q.ndcg_at_5;
            sum.ndcg_at_10 += q.ndcg_at_10;
            sum.p_at_1 += q.p_at_1;
            sum.p_at_5 += q.p_at_5;
            sum.r_at_1 += q.r_at_1;
            sum.r_at_5 += q.r_at_5;
            sum.hit_at_1 += q.hit_at_1;
            sum.hit_at_5 += q.hit_at_5;
        }
        let d = n.max(1) as f64;
        let mean = QueryScores {
            rr: sum.rr / d,
            rr_at_10: sum.rr_at_10 / d,
            ap: sum.ap / d,
            ndcg_at_5: sum.ndcg_at_5 / d,
            ndcg_at_10: sum.ndcg_at_10 / d,
            p_at_1: sum.p_at_1 / d,
            p_at_5: sum.p_at_5 / d,
            r_at_1: sum.r_at_1 / d,
            r_at_5: sum.r_at_5 / d,
            hit_at_1: sum.hit_at_1 / d,
            hit_at_5: sum.hit_at_5 / d,
        };
        Self { n_queries: n, mean }
    }

    /// `(name, value)` in report order: mrr, mrr_at_10, map, ndcg_at_5, ndcg_at_10, p_at_1,
    /// p_at_5, r_at_1, r_at_5, hit_at_1, hit_at_5.
    pub fn named(&self) -> Vec<(&'static str, f64)> {
        let m = &self.mean;
        vec![
            ("mrr", m.rr),
            ("mrr_at_10", m.rr_at_10),
            ("map", m.ap),
            ("ndcg_at_5", m.ndcg_at_5),
            ("ndcg_at_10", m.ndcg_at_10),
            ("p_at_1", m.p_at_1),
            ("p_at_5", m.p_at_5),
            ("r_at_1", m.r_at_1),
            ("r_at_5", m.r_at_5),
            ("hit_at_1", m.hit_at_1),
            ("hit_at_5", m.hit_at_5),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn the_spec_examples() {
        // MRR: first relevant at ranks 1, 3, 2 → (1 + 1/3 + 1/2) / 3 = 0.6111.
        let q: Vec<QueryScores> = [1, 3, 2]
            .iter()
            .map(|&r| QueryScores::from_ranks(&[r]))
            .collect();
        assert!(close(
            RetrievalMetrics::from_queries(&q).mean.rr,
            (1.0 + 1.0 / 3.0 + 0.5) / 3.0
        ));
        // AP: relevant at ranks 2, 4, 6 → (1/2 + 2/4 + 3/6) / 3 = 0.5.
        let s = QueryScores::from_ranks(&[2, 4, 6]);
        assert!(close(s.ap, 0.5));
        // NDCG@5 of relevance [1, 0, 1, 1, 0]: DCG = 1 + 1/2 + 1/log2(5) = 1.9307; IDCG (three
        // relevant first) = 1 + 1/log2(3) + 1/2 = 2.1309; NDCG = 0.9060.
        let s = QueryScores::from_ranks(&[1, 3, 4]);
        let dcg = 1.0 + 0.5 + 1.0 / 5f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2() + 0.5;
        assert!(close(s.ndcg_at_5, dcg / idcg) && (s.ndcg_at_5 - 0.9060).abs() < 1e-4);
        // P@5 = 3/5, R@5 of 4 relevant = 3/4 (the spec's examples).
        let s = QueryScores::from_ranks(&[1, 3, 4, 9]);
        assert!(close(s.p_at_5, 0.6) && close(s.r_at_5, 0.75) && close(s.hit_at_5, 1.0));
    }

    #[test]
    fn one_relevant_document_makes_map_mrr_and_recall_hit() {
        for r in [1, 2, 5, 6, 11] {
            let s = QueryScores::from_ranks(&[r]);
            assert!(close(s.ap, s.rr));
            assert!(close(s.r_at_5, s.hit_at_5) && close(s.p_at_5, s.hit_at_5 / 5.0));
            assert!(close(s.r_at_1, s.hit_at_1) && close(s.p_at_1, s.hit_at_1));
            assert_eq!(s.rr_at_10 == 0.0, r > 10);
        }
    }

    #[test]
    fn ranks_break_ties_against_the_query() {
        // Scores: doc 2 (relevant) ties with docs 0 and 3; doc 1 is higher.
        let scores = [0.5f32, 0.9, 0.5, 0.5, 0.1];
        assert_eq!(relevant_ranks(&scores, &[2]), Some(vec![4]));
        // Two tied relevant documents: after the tied non-relevant one, by index.
        assert_eq!(relevant_ranks(&scores, &[3, 0]), Some(vec![3, 4]));
        // All equal: the relevant document is last.
        assert_eq!(relevant_ranks(&[0.0; 5], &[0]), Some(vec![5]));
        assert_eq!(relevant_ranks(&scores, &[]), None);
        assert_eq!(relevant_ranks(&scores, &[5]), None);
        assert_eq!(relevant_ranks(&[f32::NAN, 1.0], &[0]), None);
        // A NaN elsewhere never outranks a real score.
        assert_eq!(relevant_ranks(&[f32::NAN, 0.2], &[1]), Some(vec![1]));
    }
}
