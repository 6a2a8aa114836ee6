#!/usr/bin/env python3
"""Which k-mers carry a classifier's attributions (docs/predict-importance.md, "Worked example").

Reads a luminome-importance npz (`contrib` and `onehot`, (N, 4, L): DeepLIFT/SHAP, ISM, IG...)
and ranks every k-mer that occurs at least --min-count times by the mean of its summed
contribution (the contributions of its k bases, added) over its occurrences, beside how often it
occurs and its mean over the opposite strand's reading. A motif the model uses rises to the top
with a large mean; a k-mer it ignores sits near zero whatever its count. No TF-MoDISco needed
(its seqlets would be the next step: `modisco motifs -s onehot.npy -a contrib.npy`).

    python3 bench/importance/motif_example.py dls.npz [-k 6] [--top 15] [--min-count 20]
        [--jaspar ../shared/data/motifs/jaspar2024/JASPAR2024_CORE_vertebrates_non-redundant_pfms.jaspar]
        [--training train.csv]

With --training (the task's sequence,label CSV), each listed k-mer also gets its occurrences per
sequence in label-1 over label-0 training rows: whether what the model credits is what tells the
classes apart in the data.

With --jaspar, the same for known motifs: every window whose log-odds score (counts + 0.8
pseudocount, uniform background) reaches 80 % of the motif's best, on either strand, is a match;
motifs ranked by the mean summed contribution of their matches.
"""
import argparse
from collections import defaultdict

import numpy as np

ACGT = "ACGT"
COMPLEMENT = str.maketrans("ACGT", "TGCA")


def enrichment(path, k):
    """k-mer → occurrences per label-1 sequence over occurrences per label-0 sequence."""
    import csv
    counts = {"0": defaultdict(int), "1": defaultdict(int)}
    rows = {"0": 0, "1": 0}
    for r in csv.DictReader(open(path)):
        label, seq = r["label"], r["sequence"].upper()
        if label not in counts:
            continue
        rows[label] += 1
        for i in range(len(seq) - k + 1):
            counts[label][seq[i:i + k]] += 1
    return {kmer: (counts["1"][kmer] / rows["1"]) / max(counts["0"][kmer] / rows["0"], 1e-9)
            for kmer in set(counts["1"]) | set(counts["0"])}


def read_jaspar(path):
    """(id, name, log-odds (4, w)) of every matrix of a JASPAR-format file."""
    motifs, rows, head = [], [], None
    for line in open(path):
        line = line.strip()
        if line.startswith(">"):
            head, rows = line[1:].split(None, 1), []
        elif line and head:
            rows.append([float(v) for v in line.split("[")[1].split("]")[0].split()])
            if len(rows) == 4:
                counts = np.array(rows) + 0.8
                probs = counts / counts.sum(axis=0, keepdims=True)
                motifs.append((head[0], head[1] if len(head) > 1 else "", np.log2(probs / 0.25)))
    return motifs


def known_motifs(path, contrib, onehot, length, top, min_count):
    per_base = contrib.sum(axis=1)                                   # (N, L)
    rows = []
    for mid, name, pwm in read_jaspar(path):
        w = pwm.shape[1]
        if w > onehot.shape[2]:
            continue
        windows = np.lib.stride_tricks.sliding_window_view(onehot, w, axis=2)  # (N, 4, P, w)
        best = pwm.max(axis=0).sum()
        hit = np.zeros(windows.shape[:1] + windows.shape[2:3], dtype=bool)
        for m in (pwm, pwm[::-1, ::-1]):
            hit |= np.einsum("nbpw,bw->np", windows, m) >= 0.8 * best
        ends = np.arange(windows.shape[2]) + w <= length[:, None]
        hit &= ends
        sums = np.lib.stride_tricks.sliding_window_view(per_base, w, axis=1).sum(axis=2)
        if hit.sum() >= min_count:
            rows.append((mid, name, int(hit.sum()), float(sums[hit].mean()), w))
    rows.sort(key=lambda r: -r[3])
    print(f"\nknown motifs with at least {min_count} matches ({len(rows)}), by mean summed "
          f"contribution per match")
    print(f"{'motif':<10}{'name':<16}{'width':>6}{'matches':>9}{'mean':>10}")
    for mid, name, n, mean, w in rows[:top]:
        print(f"{mid:<10}{name[:15]:<16}{w:>6}{n:>9}{mean:>10.4f}")
    print("...")
    for mid, name, n, mean, w in rows[-3:]:
        print(f"{mid:<10}{name[:15]:<16}{w:>6}{n:>9}{mean:>10.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("npz")
    ap.add_argument("-k", type=int, default=6)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--min-count", type=int, default=20)
    ap.add_argument("--jaspar", help="also rank these known motifs (JASPAR-format counts)")
    ap.add_argument("--training", help="sequence,label CSV: k-mer enrichment in label 1 vs 0")
    args = ap.parse_args()
    with np.load(args.npz) as z:
        contrib, onehot, length = z["contrib"], z["onehot"], z["length"]
    per_base = contrib.sum(axis=1)                      # (N, L): the observed base's score
    sums = defaultdict(list)
    k = args.k
    for r in range(contrib.shape[0]):
        n = int(length[r])
        known = onehot[r, :, :n].sum(axis=0) > 0
        seq = "".join(ACGT[i] if ok else "N" for i, ok in
                      zip(onehot[r, :, :n].argmax(axis=0), known))
        window = np.convolve(per_base[r, :n], np.ones(k), mode="valid")
        for p in range(n - k + 1):
            kmer = seq[p:p + k]
            if "N" not in kmer:
                sums[kmer].append(window[p])
    rows = [(kmer, len(v), float(np.mean(v))) for kmer, v in sums.items()
            if len(v) >= args.min_count]
    rows.sort(key=lambda r: -r[2])
    means = {kmer: m for kmer, _, m in rows}
    ratio = enrichment(args.training, k) if args.training else {}
    print(f"{contrib.shape[0]} records, {len(rows)} {k}-mers seen at least {args.min_count} "
          f"times; mean summed contribution per occurrence")
    print(f"{'k-mer':<{k + 2}}{'count':>7}{'mean':>10}{'rev. comp.':>{k + 4}}{'its mean':>10}"
          + (f"{'label 1 / 0':>13}" if ratio else ""))
    shown = rows[:args.top] + [None] + rows[-3:]
    for row in shown:
        if row is None:
            print("...")
            continue
        kmer, count, mean = row
        rc = kmer.translate(COMPLEMENT)[::-1]
        other = f"{means[rc]:10.4f}" if rc in means else f"{'-':>10}"
        extra = f"{ratio.get(kmer, float('nan')):13.2f}" if ratio else ""
        print(f"{kmer:<{k + 2}}{count:>7}{mean:>10.4f}{rc:>{k + 4}}{other}{extra}")
    if args.jaspar:
        known_motifs(args.jaspar, contrib, onehot, length, args.top, args.min_count)


if __name__ == "__main__":
    main()
