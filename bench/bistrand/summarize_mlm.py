#!/usr/bin/env python3
"""Tables of the bi-strand masked-LM runs of run_mlm.sh: test masked-base accuracy and perplexity
per strand, mean ± sd over seeds, beside the baselines.

  summarize_mlm.py OUT_DIR
"""
import sys
from pathlib import Path

import numpy as np


def metrics(path):
    rows = [l.split("\t") for l in path.read_text().splitlines()[1:]]
    return {k: float(v) for k, v in rows}


def main():
    out = Path(sys.argv[1])
    print("| genome | model | seeds | accuracy A | accuracy B | perplexity A | perplexity B |")
    print("|---|---|---|---|---|---|---|")
    for g in ["ecoli", "celegans"]:
        base = {}
        for line in (out / f"{g}.baselines.tsv").read_text().splitlines()[1:]:
            name, strand, n, acc, ppl = line.split("\t")
            if strand == "a":
                base[name] = (acc, ppl)
            else:
                a = base.get(name, ("", ""))
                print(f"| {g} | {name} | - | {a[0]} | {acc} | {a[1]} | {ppl} |")
        for cross in ["cross", "nocross"]:
            runs = sorted(out.glob(f"{g}.{cross}.seed*/test_metrics.tsv"))
            if not runs:
                continue
            m = [metrics(p) for p in runs]
            cell = lambda k: f"{np.mean([x[k] for x in m]):.4f} ± {np.std([x[k] for x in m], ddof=1) if len(m) > 1 else 0:.4f}"
            label = "bi-strand, cross-attention" if cross == "cross" else "bi-strand, no cross-attention"
            print(f"| {g} | {label} | {len(m)} | {cell('accuracy_a')} | {cell('accuracy_b')} | {cell('perplexity_a')} | {cell('perplexity_b')} |")


if __name__ == "__main__":
    main()
