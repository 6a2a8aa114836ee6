"""The masked-LM floor for docs/pretrained.md: predict every masked token as the training set's
most frequent token (accuracy) or by its unigram frequencies (cross-entropy, nats), over the
tokens a masked LM may be asked for (not [PAD]/[CLS]/[SEP]/[MASK]).

`luminome-train mlm` scores its dev accuracy on every chosen position, as BERT's 80/10/10
corruption leaves them: 80 % [MASK], 10 % a random token, 10 % unchanged. A context-blind model
that repeats a visible token and guesses the most frequent one under [MASK] scores
0.1 + 0.1 * P(random = original) + 0.8 * (most-frequent accuracy) on that mix: the floor to
compare the MLM's dev accuracy with.

    python bench/pretrain/unigram_baseline.py TRAIN.safetensors DEV.safetensors [DEV_ROWS]

DEV_ROWS (default 2000): the first rows of the dev set, as `luminome-train mlm --eval-records`.
"""
import sys

import numpy as np
from safetensors.numpy import load_file

BOUNDARY = {0, 1, 2, 3}  # [PAD] [CLS] [SEP] [MASK]


def tokens(path, rows=None):
    ids = load_file(path)["input_ids"].astype(np.int64)
    if rows is not None:
        ids = ids[:rows]
    flat = ids.ravel()
    return flat[~np.isin(flat, list(BOUNDARY))]


def main():
    train, dev = sys.argv[1], sys.argv[2]
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    t, d = tokens(train), tokens(dev, rows)
    vocab = int(max(t.max(), d.max())) + 1
    counts = np.bincount(t, minlength=vocab).astype(np.float64)
    p = (counts + 1.0) / (counts.sum() + vocab)  # add-one, so no dev token has p = 0
    acc = float(np.mean(d == counts.argmax()))
    ce = float(-np.mean(np.log(p[d])))
    print(f"train tokens {t.size}, dev tokens {d.size}")
    n_random = vocab - len(BOUNDARY) - 1  # random replacements: the non-special tokens (no [UNK])
    same = 0.1 + 0.1 / n_random + 0.8 * acc
    print(f"most frequent token accuracy {acc:.4f}; unigram cross-entropy {ce:.4f} nats")
    print(f"context-blind accuracy under the 80/10/10 corruption: {same:.4f}")


if __name__ == "__main__":
    main()
