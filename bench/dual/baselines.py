#!/usr/bin/env python3
"""Non-learned baselines for the genomic retrieval task (bench/dual/make_task.py): every query
ranks every window of its split's corpus; metrics from retrieval_metrics.py.

- kmer-cosine-K: cosine of the count vectors of all overlapping K-mers (exact integer counts,
  no hashing: dense 4^K columns up to K = 6, a sparse join on the k-mer above), strand-aware:
  score = max(cos(q, p), cos(revcomp(q), p)). K is chosen on the dev split (best MRR; a tie
  goes to the first K of --ks), marked '*' in the test rows; every K is reported.
- minimizer-overlap (named minimizer-overlap-K-W when not K=15, W=10): the number of the
  query's distinct (K, W) minimizers found among the passage's minimizers, divided by the
  query's number of distinct minimizers. A k-mer's value is min(h(k-mer), h(revcomp(k-mer))),
  h minimap2's invertible 2K-bit integer hash (so no two k-mers collide); a minimizer is the
  smallest value in each run of W consecutive k-mers: how read mappers seed. Strand-free by
  construction.

Metric columns: ties broken against the query (--ties pessimistic, the default: the rule
luminome-predict ranks by, so baselines and models are scored alike; it also decides the choice
of k); --ties corpus breaks them by corpus order instead. Also written:
positive_score (mean score of the true passage), best_negative_score (mean best score of any
other passage), top1_strict (fraction of queries whose true passage scores strictly above every
other one), mrr_pessimistic (ties against the query, as luminome-predict ranks), positive_ties
(queries whose true passage shares its score with another passage; 0 means the tie rules agree),
seconds (scoring time). Rows: dev (every method) then each --pairs file.

    python3 bench/dual/baselines.py --pairs T/test.pairs.tsv [T/test.fwd.pairs.tsv ...] \\
        --corpus T/test.corpus.fa --dev-pairs T/dev.pairs.tsv --dev-corpus T/dev.corpus.fa \\
        --out T/baselines.test.tsv [--failures T/baselines.failures.tsv]
"""
import argparse
import csv
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from retrieval_metrics import METRICS, evaluate_single  # noqa: E402

LUT = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate("ACGT"):
    LUT[ord(_c)] = _i
    LUT[ord(_c.lower())] = _i


def read_pairs(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def read_fasta(path):
    names, seqs = [], []
    with open(path) as f:
        for line in f:
            if line.startswith(">"):
                names.append(line[1:].split()[0])
                seqs.append([])
            elif line.strip():
                seqs[-1].append(line.strip())
    return names, ["".join(s).upper() for s in seqs]


def codes(seq):
    """2-bit codes (A0 C1 G2 T3; 255 for any other byte)."""
    return LUT[np.frombuffer(seq.encode(), dtype=np.uint8)]


def kmer_ids(c, k):
    """Integer ids of the k-mers of the code array c that hold only A/C/G/T."""
    if len(c) < k:
        return np.zeros(0, dtype=np.int64)
    win = np.lib.stride_tricks.sliding_window_view(c, k)
    ok = (win != 255).all(1)
    return win[ok].astype(np.int64) @ (4 ** np.arange(k - 1, -1, -1, dtype=np.int64))


def revcomp_codes(c):
    return np.where(c == 255, 255, 3 - c)[::-1].astype(np.uint8)


# ---------------------------------------------------------------- k-mer cosine

DENSE_MAX_K = 6  # 4^k columns up to this k: dense count matrices and a matrix product


def distinct_counts(id_lists):
    """(row, kmer id, count) of each row's distinct k-mers, sorted by row then id."""
    n = np.array([len(x) for x in id_lists], dtype=np.int64)
    rows = np.repeat(np.arange(len(id_lists), dtype=np.int64), n)
    ids = np.concatenate(id_lists) if len(id_lists) else np.zeros(0, np.int64)
    big = np.int64(ids.max() + 1) if ids.size else np.int64(1)
    key, cnt = np.unique(rows * big + ids, return_counts=True)
    return key // big, key % big, cnt.astype(np.int64)


def kmer_dots(q_ids, c_ids, k):
    """Exact integer dot products [len(q_ids), len(c_ids)] of the k-mer count vectors, and the
    two sides' L2 norms."""
    nq, nc = len(q_ids), len(c_ids)
    qr, qk, qc = distinct_counts(q_ids)
    cr, ck, cc = distinct_counts(c_ids)
    qnorm = np.sqrt(np.bincount(qr, weights=qc.astype(np.float64) ** 2, minlength=nq))
    cnorm = np.sqrt(np.bincount(cr, weights=cc.astype(np.float64) ** 2, minlength=nc))
    if k <= DENSE_MAX_K:
        v = 4 ** k
        # float32 holds the counts, products and sums exactly (all far below 2^24).
        qm = np.zeros((nq, v), dtype=np.float32)
        qm[qr, qk] = qc
        cm = np.zeros((nc, v), dtype=np.float32)
        cm[cr, ck] = cc
        dots = (qm @ cm.T).astype(np.float64)
    else:
        # Sparse join on the k-mer: the corpus postings sorted by k-mer, each query k-mer matched
        # to its postings (few: a k-mer with 4^k >> corpus size is in few passages).
        order = np.argsort(ck, kind="stable")
        ck, cr, cc = ck[order], cr[order], cc[order]
        lo, hi = np.searchsorted(ck, qk, "left"), np.searchsorted(ck, qk, "right")
        n = hi - lo
        total = int(n.sum())
        src = np.repeat(np.arange(len(qk)), n)
        at = np.arange(total) - np.repeat(np.cumsum(n) - n, n) + np.repeat(lo, n)
        dots = np.bincount(qr[src] * nc + cr[at], weights=(qc[src] * cc[at]).astype(np.float64),
                           minlength=nq * nc).reshape(nq, nc)
    return dots, qnorm, cnorm


def cosine(dots, qnorm, cnorm):
    den = qnorm[:, None] * cnorm[None, :]
    return np.divide(dots, den, out=np.zeros_like(dots), where=den > 0)


def kmer_scores(queries, corpus, k):
    """[Q, N] strand-aware k-mer count cosine: max over the query and its reverse complement."""
    c_ids = [kmer_ids(codes(s), k) for s in corpus]
    qc = [codes(q) for q in queries]
    fwd = cosine(*kmer_dots([kmer_ids(c, k) for c in qc], c_ids, k))
    rev = cosine(*kmer_dots([kmer_ids(revcomp_codes(c), k) for c in qc], c_ids, k))
    return np.maximum(fwd, rev)


# ---------------------------------------------------------------- minimizers

def hash64(key, mask):
    """minimap2's hash64: invertible on [0, mask] (mask = 2^(2k) - 1), so k-mers never collide."""
    key = key.astype(np.uint64)
    m = np.uint64(mask)
    key = (~key + (key << np.uint64(21))) & m
    key = key ^ (key >> np.uint64(24))
    key = (key + (key << np.uint64(3)) + (key << np.uint64(8))) & m
    key = key ^ (key >> np.uint64(14))
    key = (key + (key << np.uint64(2)) + (key << np.uint64(4))) & m
    key = key ^ (key >> np.uint64(28))
    key = (key + (key << np.uint64(31))) & m
    return key


def minimizers(seq, k=15, w=10):
    """Sorted distinct canonical (k, w) minimizer values of seq (runs of A/C/G/T only)."""
    c = codes(seq)
    if len(c) < k:
        return np.zeros(0, dtype=np.uint64)
    win = np.lib.stride_tricks.sliding_window_view(c, k)
    ok = (win != 255).all(1)
    pw = 4 ** np.arange(k - 1, -1, -1, dtype=np.int64)
    fwd = win.astype(np.int64) @ pw
    rev = (3 - win[:, ::-1].astype(np.int64)) @ pw
    mask = (1 << (2 * k)) - 1
    h = np.minimum(hash64(fwd, mask), hash64(rev, mask))
    h = np.where(ok, h, np.uint64(np.iinfo(np.uint64).max))  # a k-mer with another base never wins
    if len(h) < w:
        vals = h.min(keepdims=True)
    else:
        vals = np.lib.stride_tricks.sliding_window_view(h, w).min(1)
    vals = vals[vals != np.iinfo(np.uint64).max]
    return np.unique(vals)


def minimizer_scores(queries, corpus, k=15, w=10):
    cm = [minimizers(s, k, w) for s in corpus]
    ch = np.concatenate(cm)
    cdoc = np.repeat(np.arange(len(corpus), dtype=np.int64), [len(x) for x in cm])
    order = np.argsort(ch, kind="stable")
    ch, cdoc = ch[order], cdoc[order]
    qm = [minimizers(q, k, w) for q in queries]
    qh = np.concatenate(qm) if qm else np.zeros(0, dtype=np.uint64)
    qrow = np.repeat(np.arange(len(queries), dtype=np.int64), [len(x) for x in qm])
    lo, hi = np.searchsorted(ch, qh, "left"), np.searchsorted(ch, qh, "right")
    n = hi - lo
    rows = np.repeat(qrow, n)
    starts = np.repeat(lo - np.concatenate([[0], np.cumsum(n)[:-1]]), n) if n.sum() else np.zeros(0, np.int64)
    docs = cdoc[np.arange(n.sum()) + starts]
    hits = np.bincount(rows * len(corpus) + docs, minlength=len(queries) * len(corpus))
    hits = hits.reshape(len(queries), len(corpus)).astype(np.float64)
    nq = np.array([len(x) for x in qm], dtype=np.float64)
    return np.where(nq[:, None] > 0, hits / np.maximum(nq, 1)[:, None], 0.0)


# ---------------------------------------------------------------- evaluation

def positives(rows, names, path):
    where = {n: i for i, n in enumerate(names)}
    missing = [r["passage_id"] for r in rows if r["passage_id"] not in where]
    if missing:
        raise SystemExit(f"{path}: {len(missing)} positive passages not in the corpus, e.g. {missing[0]}")
    return np.array([where[r["passage_id"]] for r in rows], dtype=np.int64)


def summarize(scores, pos, ties):
    m, ranks = evaluate_single(scores, pos, ties)
    mp, _ = evaluate_single(scores, pos, "pessimistic")
    q = np.arange(len(pos))
    ps = scores[q, pos]
    other = scores.copy()
    other[q, pos] = -np.inf
    best_neg = other.max(1)
    m.update(positive_score=float(ps.mean()), best_negative_score=float(best_neg.mean()),
             top1_strict=float((ps > best_neg).mean()), mrr_pessimistic=mp["mrr"],
             positive_ties=int(((scores == ps[:, None]).sum(1) > 1).sum()))
    return m, ranks, best_neg, other.argmax(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", required=True, nargs="+", help="one or more test pairs files")
    ap.add_argument("--corpus", required=True, help="the test corpus FASTA")
    ap.add_argument("--dev-pairs", required=True)
    ap.add_argument("--dev-corpus", required=True)
    ap.add_argument("--ks", type=int, nargs="+", default=[4, 5, 6, 8])
    ap.add_argument("--minimizer-k", type=int, default=15)
    ap.add_argument("--minimizer-w", type=int, default=10)
    ap.add_argument("--ties", choices=["corpus", "pessimistic"], default="pessimistic",
                    help="tie rule of the metric columns and of the choice of k (default: "
                    "pessimistic, luminome-predict's; corpus: by corpus order)")
    ap.add_argument("--out", required=True, help="TSV, one row per (pairs file, method)")
    ap.add_argument("--failures", help="TSV of the test queries whose true passage does not score "
                    "strictly above every other passage (the chosen k and the minimizers), with "
                    "its rank under --ties and the best other passage")
    a = ap.parse_args()
    if any(k < 1 or k > 12 for k in a.ks) or not 1 <= a.minimizer_k <= 31:
        ap.error("--ks must be in 1..12 and --minimizer-k in 1..31")
    mz = "minimizer-overlap" + ("" if (a.minimizer_k, a.minimizer_w) == (15, 10)
                                else f"-{a.minimizer_k}-{a.minimizer_w}")
    extra = ["positive_score", "best_negative_score", "top1_strict", "mrr_pessimistic", "positive_ties"]
    out_rows, fail_rows = [], []

    def run(path, rows, names, seqs, split, best_k=None):
        pos = positives(rows, names, path)
        queries = [r["query"] for r in rows]
        res = {}
        for k in a.ks:
            t = time.perf_counter()
            res[f"kmer-cosine-{k}"] = (kmer_scores(queries, seqs, k), time.perf_counter() - t)
        t = time.perf_counter()
        res[mz] = (minimizer_scores(queries, seqs, a.minimizer_k, a.minimizer_w), time.perf_counter() - t)
        mrr = {}
        print(f"{path} ({split}: {len(rows)} queries x {len(seqs)} passages)")
        for method, (scores, secs) in res.items():
            m, ranks, best_neg, best_other = summarize(scores, pos, a.ties)
            mrr[method] = m["mrr"]
            chosen = best_k is not None and method == f"kmer-cosine-{best_k}"
            label = method + ("*" if chosen else "")
            out_rows.append([path, split, label, len(rows), len(seqs)] + [m[c] for c in METRICS]
                            + [m[c] for c in extra] + [secs])
            print(f"  {label:26s} MRR {m['mrr']:.4f}  Hit@1 {m['hit_at_1']:.4f}  Hit@5 "
                  f"{m['hit_at_5']:.4f}  NDCG@10 {m['ndcg_at_10']:.4f}  pos {m['positive_score']:.3f}  "
                  f"best neg {m['best_negative_score']:.3f}  ties {m['positive_ties']}  {secs:.2f} s")
            if split == "test" and (chosen or method == mz):
                for i in np.nonzero(scores[np.arange(len(pos)), pos] <= best_neg)[0]:
                    r = rows[i]
                    fail_rows.append([path, method, r["query_id"], r["passage_id"], r["strand"],
                                      r["fragment_start"], r["fragment_end"], r["substitutions"],
                                      r["indels"], int(ranks[i]), f"{scores[i, pos[i]]:.6f}",
                                      names[best_other[i]], f"{best_neg[i]:.6f}"])
        return mrr

    dn, ds = read_fasta(a.dev_corpus)
    t0 = time.perf_counter()
    dev = run(a.dev_pairs, read_pairs(a.dev_pairs), dn, ds, "dev")
    kmr = {k: dev[f"kmer-cosine-{k}"] for k in a.ks}
    best_k = max(a.ks, key=lambda k: (kmr[k], -a.ks.index(k)))
    print("dev MRR by k: " + ", ".join(f"k={k} {v:.4f}" for k, v in kmr.items()) + f" -> k = {best_k}")
    names, seqs = read_fasta(a.corpus)
    for path in a.pairs:
        run(path, read_pairs(path), names, seqs, "test", best_k)
    with open(a.out, "w") as f:
        f.write("\t".join(["pairs", "split", "method", "queries", "corpus"] + METRICS + extra
                          + ["seconds"]) + "\n")
        for r in out_rows:
            f.write("\t".join(x if isinstance(x, str) else (str(x) if isinstance(x, (int, np.integer))
                                                            else f"{x:.6f}") for x in r) + "\n")
    if a.failures:
        with open(a.failures, "w") as f:
            f.write("pairs\tmethod\tquery_id\tpassage_id\tstrand\tfragment_start\tfragment_end"
                    "\tsubstitutions\tindels\trank\tpositive_score\tbest_other\tbest_other_score\n")
            for r in fail_rows:
                f.write("\t".join(map(str, r)) + "\n")
    print(f"wrote {a.out}; {time.perf_counter() - t0:.1f} s in all")


if __name__ == "__main__":
    main()
