"""Non-learned baselines for masked bases, shared by the bi-strand scripts: base frequencies
(unigram) and a context model P(base | 2 bases left, 2 right) with back-off to 1+1 context and
then to the unigram when a context base is unknown (masked, N, padding), add-1/2 smoothing.

Ids are the nucleotide vocabulary's: A=5 C=6 G=7 T=8 (class = id - 5); anything else unknown.
"""
import numpy as np


def classes(ids):
    """Base class 0-3 of each id, -1 where unknown."""
    c = ids.astype(np.int64) - 5
    c[(c < 0) | (c > 3)] = -1
    return c


class ContextModel:
    def __init__(self, seqs):
        """`seqs`: rows of base classes (-1 unknown), the unmasked training sequences."""
        self.uni = np.full(4, 0.5)
        self.c1 = np.full((4, 4, 4), 0.5)  # left, right, centre
        self.c2 = np.full((4,) * 5, 0.5)  # l2, l1, r1, r2, centre
        for s in seqs:
            ok = s >= 0
            np.add.at(self.uni, s[ok], 1)
            l, r = s[:-2], s[2:]
            m = s[1:-1]
            k = (l >= 0) & (m >= 0) & (r >= 0)
            np.add.at(self.c1, (l[k], r[k], m[k]), 1)
            a, b, c, d, e = s[:-4], s[1:-3], s[2:-2], s[3:-1], s[4:]
            k = (a >= 0) & (b >= 0) & (c >= 0) & (d >= 0) & (e >= 0)
            np.add.at(self.c2, (a[k], b[k], d[k], e[k], c[k]), 1)
        self.uni /= self.uni.sum()
        self.c1 /= self.c1.sum(-1, keepdims=True)
        self.c2 /= self.c2.sum(-1, keepdims=True)

    def probs(self, row, i, order=2):
        """P(base at i) from the visible bases around it (`row`: classes, -1 unknown)."""
        n = len(row)
        if order >= 2 and i >= 2 and i + 2 < n:
            ctx = row[i - 2], row[i - 1], row[i + 1], row[i + 2]
            if min(ctx) >= 0:
                return self.c2[ctx]
        if order >= 1 and i >= 1 and i + 1 < n and row[i - 1] >= 0 and row[i + 1] >= 0:
            return self.c1[row[i - 1], row[i + 1]]
        return self.uni
