#!/usr/bin/env python3
"""Retrieval metrics in numpy (binary relevance), for full-corpus rankings.

Input per query: a vector of scores over the corpus (higher = better) and the set of relevant
corpus indices (usually one). Documents are ranked by score, highest first.

Ties (ties="corpus", the default): among equal scores, corpus order, lower index first. This is
deterministic (a stable descending sort), but it is not a worst case: a relevant document tied
with later-indexed documents is ranked before them. ties="pessimistic" ranks a relevant document
after every tied non-relevant one (tied relevant ones by index), the rule of luminome-metrics'
`retrieval` module ("ties broken against the query", what luminome-predict reports); use it to
compare with the Rust evaluation. The two differ only when a relevant document's score equals
another document's. NaN scores count as -inf (below every number; tied with each other).

With k_1 < ... < k_m the 1-based ranks of a query's m relevant documents:
  RR      = 1 / k_1                      MRR = mean RR
  RR@10   = RR if k_1 <= 10 else 0        MRR@10
  AP      = (1/m) sum_i i / k_i           MAP = mean AP (= MRR with one relevant)
  NDCG@K  = DCG@K / IDCG@K, DCG@K = sum over relevant with k <= K of 1 / log2(k + 1),
            IDCG@K the same for the m relevant ranked first
  P@K     = (relevant in the top K) / K
  R@K     = (relevant in the top K) / m
  Hit@K   = 1 if any relevant in the top K
All are averaged over queries with equal weight.

    python3 bench/dual/retrieval_metrics.py      # runs the self-test
"""
import numpy as np

METRICS = ["mrr", "mrr_at_10", "map", "ndcg_at_5", "ndcg_at_10", "p_at_1", "p_at_5",
           "r_at_1", "r_at_5", "hit_at_1", "hit_at_5"]
TIES = ("corpus", "pessimistic")


def _clean(scores):
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError("scores must be one vector per query")
    return np.where(np.isnan(s), -np.inf, s)


def relevant_ranks(scores, relevant, ties="corpus"):
    """Sorted 1-based ranks of the relevant documents (indices into `scores`; duplicates merged)."""
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}")
    s = _clean(scores)
    rel = np.unique(np.asarray(list(relevant), dtype=np.int64))
    if rel.size == 0:
        raise ValueError("a query needs at least one relevant document")
    if rel[0] < 0 or rel[-1] >= s.size:
        raise ValueError("relevant index outside the corpus")
    idx = np.arange(s.size)
    is_rel = np.zeros(s.size, dtype=bool)
    is_rel[rel] = True
    ranks = []
    for r in rel:
        tied = s == s[r]
        if ties == "corpus":
            before = tied & (idx < r)
        else:
            before = tied & ((~is_rel) | (idx < r))
            before[r] = False
        ranks.append(1 + int((s > s[r]).sum()) + int(before.sum()))
    return np.sort(np.array(ranks, dtype=np.int64))


def first_relevant_ranks(score_matrix, positives, ties="corpus"):
    """Vectorised rank of one relevant document per query: score_matrix [Q, N], positives [Q]."""
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}")
    s = np.asarray(score_matrix, dtype=np.float64)
    s = np.where(np.isnan(s), -np.inf, s)
    p = np.asarray(positives, dtype=np.int64)
    pos = s[np.arange(len(p)), p][:, None]
    higher = (s > pos).sum(1)
    tied = (s == pos)
    if ties == "corpus":
        before = (tied & (np.arange(s.shape[1])[None, :] < p[:, None])).sum(1)
    else:
        before = tied.sum(1) - 1
    return 1 + higher + before


def query_metrics(ranks):
    """The metrics of one query from the sorted 1-based ranks of its relevant documents."""
    k = np.asarray(ranks, dtype=np.float64)
    m = k.size
    within = lambda K: float((k <= K).sum())
    disc = lambda r: 1.0 / np.log2(r + 1.0)

    def ndcg(K):
        ideal = disc(np.arange(1, min(m, K) + 1)).sum()
        return float(disc(k[k <= K]).sum() / ideal)

    rr = 1.0 / k[0]
    return {
        "mrr": rr, "mrr_at_10": rr if k[0] <= 10 else 0.0,
        "map": float((np.arange(1, m + 1) / k).mean()),
        "ndcg_at_5": ndcg(5), "ndcg_at_10": ndcg(10),
        "p_at_1": within(1) / 1, "p_at_5": within(5) / 5,
        "r_at_1": within(1) / m, "r_at_5": within(5) / m,
        "hit_at_1": float(within(1) > 0), "hit_at_5": float(within(5) > 0),
    }


def mean_metrics(per_query):
    """Mean over queries of query_metrics dicts."""
    if not per_query:
        return {m: 0.0 for m in METRICS}
    return {m: float(np.mean([q[m] for q in per_query])) for m in METRICS}


def evaluate(score_matrix, relevant, ties="corpus"):
    """(mean metrics, list of per-query rank arrays) for score_matrix [Q, N] and `relevant`, a list
    of Q collections of relevant corpus indices (or ints, one relevant each)."""
    s = np.asarray(score_matrix)
    if len(s) != len(relevant):
        raise ValueError("one relevant set per query")
    ranks = [relevant_ranks(row, [r] if np.isscalar(r) else r, ties) for row, r in zip(s, relevant)]
    return mean_metrics([query_metrics(r) for r in ranks]), ranks


def evaluate_single(score_matrix, positives, ties="corpus"):
    """Fast path for one relevant document per query: (mean metrics, ranks [Q])."""
    ranks = first_relevant_ranks(score_matrix, positives, ties).astype(np.float64)
    rr = 1.0 / ranks
    hit = lambda K: (ranks <= K).astype(np.float64)
    ndcg = lambda K: np.where(ranks <= K, 1.0 / np.log2(ranks + 1.0), 0.0)
    m = {"mrr": rr, "mrr_at_10": np.where(ranks <= 10, rr, 0.0), "map": rr,
         "ndcg_at_5": ndcg(5), "ndcg_at_10": ndcg(10), "p_at_1": hit(1), "p_at_5": hit(5) / 5,
         "r_at_1": hit(1), "r_at_5": hit(5), "hit_at_1": hit(1), "hit_at_5": hit(5)}
    return {k: float(v.mean()) if len(ranks) else 0.0 for k, v in m.items()}, ranks.astype(np.int64)


def _scores_with_ranks(n, ranks):
    """Scores over n documents that put documents 0..len(ranks)-1 at the given 1-based ranks."""
    s = np.zeros(n)
    order = [None] * n
    for d, r in enumerate(ranks):
        order[r - 1] = d
    rest = iter(range(len(ranks), n))
    order = [o if o is not None else next(rest) for o in order]
    for pos, d in enumerate(order):
        s[d] = n - pos
    return s


def _self_test():
    close = lambda a, b: abs(a - b) < 1e-4
    # Three queries whose (only) relevant document is at ranks 1, 3, 2: MRR = (1 + 1/3 + 1/2) / 3.
    mats = [_scores_with_ranks(6, [r]) for r in (1, 3, 2)]
    m, ranks = evaluate(np.array(mats), [0, 0, 0])
    assert [int(r[0]) for r in ranks] == [1, 3, 2]
    assert close(m["mrr"], 0.6111) and close(m["map"], 0.6111), m
    assert close(m["hit_at_1"], 1 / 3) and close(m["p_at_1"], 1 / 3) and close(m["r_at_5"], 1.0)
    assert close(m["p_at_5"], 1 / 5)
    fast, fr = evaluate_single(np.array(mats), [0, 0, 0])
    assert list(fr) == [1, 3, 2] and all(close(fast[k], m[k]) for k in METRICS)
    # Relevant at ranks 2, 4, 6: AP = (1/2 + 2/4 + 3/6) / 3 = 0.5; P@5 = 2/5; R@5 = 2/3.
    q = query_metrics(relevant_ranks(_scores_with_ranks(8, [2, 4, 6]), [0, 1, 2]))
    assert close(q["map"], 0.5) and close(q["mrr"], 0.5) and close(q["p_at_5"], 0.4)
    assert close(q["r_at_5"], 2 / 3) and q["hit_at_1"] == 0.0 and q["hit_at_5"] == 1.0
    # Relevance [1, 0, 1, 1, 0] down the ranking: DCG = 1 + 1/log2(4) + 1/log2(5) = 1.9307,
    # IDCG = 1 + 1/log2(3) + 1/2 = 2.1309, NDCG@5 = 0.9060; AP = (1 + 2/3 + 3/4) / 3 = 0.8056.
    q = query_metrics(relevant_ranks(_scores_with_ranks(5, [1, 3, 4]), [0, 1, 2]))
    assert close(q["ndcg_at_5"], 0.9060) and close(q["ndcg_at_10"], 0.9060), q
    assert close(q["map"], 0.8056) and q["p_at_1"] == 1.0 and close(q["r_at_1"], 1 / 3)
    # MRR@10 is 0 past rank 10; NDCG@5 is 0 when the relevant is at rank 6, NDCG@10 = 1/log2(7).
    q = query_metrics([11])
    assert q["mrr_at_10"] == 0.0 and close(q["mrr"], 1 / 11)
    q = query_metrics([6])
    assert q["ndcg_at_5"] == 0.0 and close(q["ndcg_at_10"], 1 / np.log2(7))
    # Ties. Scores [0.5, 0.9, 0.5, 0.5]: doc 1 first, then docs 0, 2, 3 tied.
    s = [0.5, 0.9, 0.5, 0.5]
    assert list(relevant_ranks(s, [2])) == [3]                       # after doc 0 (lower index)
    assert list(relevant_ranks(s, [0])) == [2]                       # before docs 2 and 3
    assert list(relevant_ranks(s, [2], "pessimistic")) == [4]        # after docs 0 and 3
    assert list(relevant_ranks(s, [0], "pessimistic")) == [4]
    assert list(relevant_ranks(s, [0, 3], "pessimistic")) == [3, 4]  # tied relevant: by index
    assert list(relevant_ranks(s, [0, 3])) == [2, 4]
    assert list(first_relevant_ranks([s, s], [2, 0])) == [3, 2]
    assert list(first_relevant_ranks([s, s], [2, 0], "pessimistic")) == [4, 4]
    # Every document scored alike: rank = index + 1 (corpus order) or N (pessimistic).
    flat = np.zeros((3, 10))
    assert list(first_relevant_ranks(flat, [0, 4, 9])) == [1, 5, 10]
    assert list(first_relevant_ranks(flat, [0, 4, 9], "pessimistic")) == [10, 10, 10]
    # NaN counts as the lowest score.
    assert list(relevant_ranks([np.nan, 0.1, -5.0], [2])) == [2]
    assert list(first_relevant_ranks([[np.nan, 0.1, -5.0]], [0])) == [3]
    # The vectorised and the per-query paths agree on random scores with ties.
    rng = np.random.default_rng(0)
    sc = rng.integers(0, 4, size=(50, 30)).astype(float)
    pos = rng.integers(0, 30, size=50)
    for ties in TIES:
        a, ra = evaluate(sc, list(pos), ties)
        b, rb = evaluate_single(sc, pos, ties)
        assert [int(r[0]) for r in ra] == list(rb) and all(close(a[k], b[k]) for k in METRICS)
    print("retrieval_metrics self-test: OK")


if __name__ == "__main__":
    _self_test()
