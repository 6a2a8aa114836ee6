#!/usr/bin/env python3
"""Which k-mers carry a classifier's attributions (docs/predict-importance.md, "Worked example").

Reads a luminome-importance npz (`contrib` and `onehot`, (N, 4, L): DeepLIFT/SHAP, ISM, IG...)
and ranks every k-mer that occurs at least --min-count times by the mean of its summed
contribution (the contributions of its k bases, added) over its occurrences, beside how often it
occurs and its mean over the opposite strand's reading. A motif the model uses rises to the top
with a large mean; a k-mer it ignores sits near zero whatever its count. No TF-MoDISco needed
(its seqlets would be the next step: `modisco motifs -s onehot.npy -a contrib.npy`).

    python3 bench/importance/motif_example.py dls.npz [-k 6] [--top 15] [--min-count 20]
"""
import argparse
from collections import defaultdict

import numpy as np

ACGT = "ACGT"
COMPLEMENT = str.maketrans("ACGT", "TGCA")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("npz")
    ap.add_argument("-k", type=int, default=6)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--min-count", type=int, default=20)
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
    print(f"{contrib.shape[0]} records, {len(rows)} {k}-mers seen at least {args.min_count} "
          f"times; mean summed contribution per occurrence")
    print(f"{'k-mer':<{k + 2}}{'count':>7}{'mean':>10}{'rev. comp.':>{k + 4}}{'its mean':>10}")
    for kmer, count, mean in rows[:args.top]:
        rc = kmer.translate(COMPLEMENT)[::-1]
        other = f"{means[rc]:10.4f}" if rc in means else f"{'-':>10}"
        print(f"{kmer:<{k + 2}}{count:>7}{mean:>10.4f}{rc:>{k + 4}}{other}")
    print("...")
    for kmer, count, mean in rows[-3:]:
        print(f"{kmer:<{k + 2}}{count:>7}{mean:>10.4f}")


if __name__ == "__main__":
    main()
