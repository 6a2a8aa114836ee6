#!/usr/bin/env python3
"""LLR distributions of scored SNVs by consequence, and how well the LLR separates classes.

  analyze_variants.py SCORES.tsv ANNOTATION.tsv [SCORES2.tsv ...] --train TRAIN.fa --genome GENOME.fa

SCORES: luminome-predict's variant TSV (one per model: seeds are averaged per class, AUROCs
reported mean ± sd); ANNOTATION: chrom, pos, ref, alt, consequence columns (with a header). The
5-mer-context baseline (kmer_context.py) is trained on TRAIN.fa and scores each SNV from the 2+2
reference bases around it: LLR = ln P(ALT | context) - ln P(REF | context). AUROC of "the lower
the LLR, the more damaging" for nonsense vs synonymous and missense vs synonymous (ties averaged).
Prints markdown tables.
"""
import argparse
from collections import defaultdict

import numpy as np

from coding_snvs import read_fasta
from kmer_context import ContextModel

CLASS = {b: i for i, b in enumerate("ACGT")}


def auroc(pos, neg):
    """P(score of a positive > score of a negative), ties counting 1/2 (Mann-Whitney)."""
    s = np.concatenate([pos, neg])
    order = s.argsort(kind="mergesort")
    ranks = np.empty(len(s))
    ranks[order] = np.arange(1, len(s) + 1)
    # average ranks over ties
    vals = s[order]
    i = 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j + 2) / 2
        i = j + 1
    r = ranks[: len(pos)].sum()
    return (r - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def read_scores(path):
    out = {}
    with open(path) as f:
        h = f.readline().rstrip("\n").split("\t")
        ix = {k: i for i, k in enumerate(h)}
        for line in f:
            c = line.rstrip("\n").split("\t")
            out[(c[ix["chrom"]], int(c[ix["pos"]]), c[ix["ref"]], c[ix["alt"]])] = float(c[ix["llr"]])
    return out


def read_annotation(path):
    out = {}
    with open(path) as f:
        h = f.readline().rstrip("\n").split("\t")
        ix = {k: i for i, k in enumerate(h)}
        for line in f:
            c = line.rstrip("\n").split("\t")
            out[(c[ix["chrom"]], int(c[ix["pos"]]), c[ix["ref"]], c[ix["alt"]])] = c[ix["consequence"]]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scores", nargs="+")
    ap.add_argument("--annotation", required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--genome", required=True)
    a = ap.parse_args()
    ann = read_annotation(a.annotation)
    runs = [read_scores(p) for p in a.scores]
    keys = sorted(set.intersection(*(set(r) for r in runs)) & set(ann))
    # The context baseline.
    train = read_fasta(a.train)
    model = ContextModel([np.array([CLASS.get(b, -1) for b in s]) for s in train.values()])
    genome = read_fasta(a.genome)
    base = {}
    for k in keys:
        chrom, pos, ref, alt = k
        seq = genome[chrom]
        row = np.array([CLASS.get(b, -1) for b in seq[max(0, pos - 3) : pos + 2]])
        i = min(2, pos - 1)
        row[i] = -1
        p = model.probs(row, i, 2)
        base[k] = float(np.log(p[CLASS[alt]]) - np.log(p[CLASS[ref]]))
    classes = defaultdict(list)
    for k in keys:
        classes[ann[k]].append(k)
    order = [c for c in ["nonsense", "missense", "synonymous", "stop_lost", "five_prime_UTR", "three_prime_UTR",
                         "intron", "ncRNA_exon", "intergenic"] if c in classes]
    print(f"{len(keys)} SNVs scored by {len(runs)} model(s)\n")
    print("| consequence | SNVs | model LLR mean ± sd (over seeds) | model LLR median | 5-mer context LLR mean | context median |")
    print("|---|---|---|---|---|---|")
    for c in order:
        ks = classes[c]
        means = [np.mean([r[k] for k in ks]) for r in runs]
        meds = [np.median([r[k] for k in ks]) for r in runs]
        bl = [base[k] for k in ks]
        sd = np.std(means, ddof=1) if len(means) > 1 else 0.0
        print(f"| {c} | {len(ks)} | {np.mean(means):.3f} ± {sd:.3f} | {np.mean(meds):.3f} | {np.mean(bl):.3f} | {np.median(bl):.3f} |")
    print()
    print("| comparison | model AUROC (mean ± sd over seeds) | 5-mer context AUROC |")
    print("|---|---|---|")
    for pos_c, neg_c in [("nonsense", "synonymous"), ("missense", "synonymous"), ("nonsense", "missense")]:
        if pos_c not in classes or neg_c not in classes:
            continue
        # Damaging = lower LLR: score = -LLR.
        aucs = [auroc(-np.array([r[k] for k in classes[pos_c]]), -np.array([r[k] for k in classes[neg_c]])) for r in runs]
        b = auroc(-np.array([base[k] for k in classes[pos_c]]), -np.array([base[k] for k in classes[neg_c]]))
        sd = np.std(aucs, ddof=1) if len(aucs) > 1 else 0.0
        print(f"| {pos_c} vs {neg_c} | {np.mean(aucs):.3f} ± {sd:.3f} | {b:.3f} |")


if __name__ == "__main__":
    main()
