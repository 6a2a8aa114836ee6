#!/usr/bin/env python3
"""Non-learned baselines for the genomic retrieval task (bench/dual/make_task.py), scored with the
same full-corpus metrics as luminome-predict (luminome_metrics::retrieval: ties broken against the
query; P@K = relevant in the top K / K).

- kmer-cosine-K: cosine of overlapping K-mer count vectors, strand-aware: the score of a query is
  the larger of its own and its reverse complement's cosine with a passage. K is chosen on dev
  (best MRR) from --ks and that K is reported on test (every K is printed).
- minimizer-overlap: the fraction of the query's canonical (k=15, w=10) minimizers found among the
  passage's, as read mappers seed; strand-free by construction.

    python3 bench/dual/baselines.py --pairs T/test.pairs.tsv --corpus T/test.corpus.fa \
        --dev-pairs T/dev.pairs.tsv --dev-corpus T/dev.corpus.fa --out T/baselines.tsv
"""
import argparse
import csv
import zlib

import numpy as np

COMP = str.maketrans("ACGT", "TGCA")
CODE = {c: i for i, c in enumerate("ACGT")}


def read_pairs(path):
    with open(path) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [r["query"] for r in rows], [r["passage_id"] for r in rows]


def read_fasta(path):
    names, seqs = [], []
    with open(path) as f:
        for line in f:
            if line.startswith(">"):
                names.append(line[1:].strip())
                seqs.append([])
            else:
                seqs[-1].append(line.strip())
    return names, ["".join(s) for s in seqs]


def metrics(scores, relevant):
    """Per-query metrics from a [Q, N] score matrix and the relevant corpus index of each query."""
    rows = []
    for s, r in zip(scores, relevant):
        # Rank: higher scores, plus tied others (ties against the query).
        rank = 1 + int((s > s[r]).sum()) + int((s == s[r]).sum()) - 1
        rows.append(rank)
    ranks = np.array(rows, dtype=float)
    rr = 1.0 / ranks
    ndcg = lambda k: np.where(ranks <= k, 1.0 / np.log2(ranks + 1), 0.0)  # IDCG = 1 for one relevant
    hit = lambda k: (ranks <= k).astype(float)
    return {
        "mrr": rr.mean(), "mrr_at_10": np.where(ranks <= 10, rr, 0).mean(), "map": rr.mean(),
        "ndcg_at_5": ndcg(5).mean(), "ndcg_at_10": ndcg(10).mean(),
        "p_at_1": hit(1).mean(), "p_at_5": hit(5).mean() / 5, "r_at_1": hit(1).mean(),
        "r_at_5": hit(5).mean(), "hit_at_1": hit(1).mean(), "hit_at_5": hit(5).mean(),
    }


def kmer_counts(seqs, k):
    n = 4 ** k
    out = np.zeros((len(seqs), n), dtype=np.float32)
    for i, s in enumerate(seqs):
        codes = np.array([CODE.get(c, -1) for c in s])
        if len(codes) < k:
            continue
        win = np.lib.stride_tricks.sliding_window_view(codes, k)
        ok = (win >= 0).all(1)
        v = (win[ok] * (4 ** np.arange(k - 1, -1, -1))).sum(1)
        np.add.at(out[i], v, 1)
    norm = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norm, 1e-12)


def kmer_scores(queries, corpus, k):
    c = kmer_counts(corpus, k)
    fwd = kmer_counts(queries, k) @ c.T
    rev = kmer_counts([q.translate(COMP)[::-1] for q in queries], k) @ c.T
    return np.maximum(fwd, rev)


def minimizers(s, k=15, w=10):
    rc = s.translate(COMP)[::-1]
    n = len(s) - k + 1
    if n <= 0:
        return set()
    # Canonical k-mer hash: the smaller of the k-mer's and its reverse complement's crc32.
    h = [min(zlib.crc32(s[i:i + k].encode()), zlib.crc32(rc[len(s) - i - k:len(s) - i].encode()))
         for i in range(n)]
    return {min(h[i:i + w]) for i in range(max(1, n - w + 1))}


def minimizer_scores(queries, corpus):
    cm = [minimizers(c) for c in corpus]
    out = np.zeros((len(queries), len(corpus)), dtype=np.float32)
    for i, q in enumerate(queries):
        qm = minimizers(q)
        if qm:
            out[i] = [len(qm & m) / len(qm) for m in cm]
    return out


def relevant_index(passage_ids, names):
    where = {n: i for i, n in enumerate(names)}
    return [where[p] for p in passage_ids]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", required=True, nargs="+", help="one or more test pairs files")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--dev-pairs", required=True)
    ap.add_argument("--dev-corpus", required=True)
    ap.add_argument("--ks", type=int, nargs="+", default=[4, 5, 6, 8])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    dq, dp = read_pairs(a.dev_pairs)
    dn, ds = read_fasta(a.dev_corpus)
    drel = relevant_index(dp, dn)
    dev = {k: metrics(kmer_scores(dq, ds, k), drel)["mrr"] for k in a.ks}
    for k, v in dev.items():
        print(f"dev kmer-cosine-{k}: MRR {v:.4f}")
    best_k = max(dev, key=dev.get)
    names, seqs = read_fasta(a.corpus)
    cols = list(metrics(np.zeros((1, 1)), [0]).keys())
    with open(a.out, "w") as f:
        f.write("pairs\tmethod\tqueries\tcorpus\t" + "\t".join(cols) + "\tpositive_score\n")
        for path in a.pairs:
            q, p = read_pairs(path)
            rel = relevant_index(p, names)
            methods = {f"kmer-cosine-{k}": kmer_scores(q, seqs, k) for k in a.ks}
            methods["minimizer-overlap"] = minimizer_scores(q, seqs)
            for name, s in methods.items():
                m = metrics(s, rel)
                pos = float(np.mean([s[i, r] for i, r in enumerate(rel)]))
                chosen = " (k chosen on dev)" if name == f"kmer-cosine-{best_k}" else ""
                print(f"{path} {name}{chosen}: MRR {m['mrr']:.4f} Hit@1 {m['hit_at_1']:.4f}")
                f.write(f"{path}\t{name}{'*' if chosen else ''}\t{len(q)}\t{len(seqs)}\t"
                        + "\t".join(f"{m[c]:.6f}" for c in cols) + f"\t{pos:.6f}\n")


if __name__ == "__main__":
    main()
