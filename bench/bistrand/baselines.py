#!/usr/bin/env python3
"""Unigram and 5-mer-context baselines on the masked positions of a paired test dataset, trained
on the (unmasked) sequences of a paired training dataset, per strand.

  baselines.py TRAIN.safetensors TEST.safetensors > baselines.tsv

The context model sees what the bi-strand model sees: the test input with every masked position
hidden (a masked neighbour makes it back off). Prints TSV: baseline, strand, positions,
accuracy, perplexity.
"""
import sys

import numpy as np
from safetensors.numpy import load_file

from kmer_context import ContextModel, classes


def unmasked(d, strand):
    ids = d[f"ids_{strand}"].astype(np.int64)
    lab = d[f"labels_{strand}"].astype(np.int64)
    m = d["mask_positions"] == 1
    ids[m] = lab[m]
    return classes(ids)


def main():
    train, test = load_file(sys.argv[1]), load_file(sys.argv[2])
    print("baseline\tstrand\tpositions\taccuracy\tperplexity")
    for strand in ["a", "b"]:
        model = ContextModel(unmasked(train, strand))
        visible = classes(test[f"ids_{strand}"])
        truth = classes(test[f"labels_{strand}"].astype(np.int64))
        rows, cols = np.nonzero(test["mask_positions"] == 1)
        for name, order in [("unigram", 0), ("5-mer context", 2)]:
            nll, correct = 0.0, 0
            for r, i in zip(rows, cols):
                p = model.probs(visible[r], i, order)
                t = truth[r, i]
                nll -= np.log(p[t])
                correct += int(np.argmax(p) == t)
            n = len(rows)
            print(f"{name}\t{strand}\t{n}\t{correct / n:.4f}\t{np.exp(nll / n):.4f}")


if __name__ == "__main__":
    main()
