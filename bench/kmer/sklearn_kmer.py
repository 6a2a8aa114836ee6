#!/usr/bin/env python3
"""The k-mer logistic-regression baseline as issue reports and most papers run it, on the same
GUE split as `luminome-train kmer-linear`: scikit-learn CountVectorizer character n-grams
(ngram_range (1, k_max)) + LogisticRegression (L2, lbfgs), k_max and C chosen on dev by MCC,
scored on test. Prints one TSV line per task: task, k_max, C, dev_mcc, test_mcc, seconds.

    python bench/kmer/sklearn_kmer.py ../shared/data/gue/tf/0 [more task folders...]
"""
import sys
import time

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import matthews_corrcoef


def run(folder):
    t0 = time.time()
    sets = {s: pd.read_csv(f"{folder}/{s}.csv") for s in ("train", "dev", "test")}
    best = None
    for k_max in range(3, 7):
        vec = CountVectorizer(analyzer="char", ngram_range=(1, k_max), lowercase=False)
        xtr = vec.fit_transform(sets["train"].sequence)
        xdv = vec.transform(sets["dev"].sequence)
        for c in (0.001, 0.01, 0.1, 1.0):
            m = LogisticRegression(C=c, max_iter=2000)
            m.fit(xtr, sets["train"].label)
            mcc = matthews_corrcoef(sets["dev"].label, m.predict(xdv))
            if best is None or mcc > best[0]:
                best = (mcc, k_max, c, vec, m)
    mcc, k_max, c, vec, m = best
    test = matthews_corrcoef(sets["test"].label, m.predict(vec.transform(sets["test"].sequence)))
    return k_max, c, mcc, test, time.time() - t0


if __name__ == "__main__":
    print("task\tk_max\tC\tdev_mcc\ttest_mcc\tseconds")
    for folder in sys.argv[1:]:
        k, c, d, t, s = run(folder)
        print(f"{folder}\t{k}\t{c}\t{d:.4f}\t{t:.4f}\t{s:.0f}", flush=True)
