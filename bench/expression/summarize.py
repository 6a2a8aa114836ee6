#!/usr/bin/env python3
"""Summarises bench/expression/run.sh: test Pearson / Spearman (mean ± sd over seeds) per split,
head and initialisation, per cell type, and the baselines of each split, as markdown tables.

usage: summarize.py OUT_DIR
"""
import csv
import glob
import os
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]
runs = defaultdict(lambda: defaultdict(list))
for path in sorted(glob.glob(os.path.join(out, "expr.*.seed*/test_metrics.tsv"))):
    name = os.path.basename(os.path.dirname(path))
    _, split, head, init, _seed = name.split(".")
    with open(path, newline="") as f:
        metrics = {r["metric"]: r["value"] for r in csv.DictReader(f, delimiter="\t")}
    for key, value in metrics.items():
        if value != "NA":
            runs[(split, head, init)][key].append(float(value))


def cell(values):
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


for split in ("genes", "loco"):
    keys = [k for k in runs if k[0] == split]
    if not keys:
        continue
    cells = ["", "K562.", "GM12878."] if split == "genes" else ["GM12878."]
    print(f"\n### {split}\n")
    header = "| model | seeds | " + " | ".join(f"{c or 'all '}Pearson | {c or 'all '}Spearman" for c in cells) + " |"
    print(header)
    print("|" + "---|" * (2 + 2 * len(cells)))
    for k in sorted(keys):
        m = runs[k]
        seeds = len(m["pearson"])
        row = f"| {k[1]}, {k[2]} | {seeds} | " + " | ".join(
            f"{cell(m[c + 'pearson'])} | {cell(m[c + 'spearman'])}" for c in cells
        ) + " |"
        print(row)
    base = os.path.join(out, f"baselines.{split}.tsv")
    if os.path.exists(base):
        with open(base, newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        print()
        print("| baseline | cell type | n | Pearson | Spearman |")
        print("|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['baseline']} | {r['cell_type']} | {r['n']} | {r['pearson']} | {r['spearman']} |")
