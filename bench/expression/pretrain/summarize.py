#!/usr/bin/env python3
"""Summarises bench/expression/pretrain/run.sh as markdown tables: the best dev R² of each
pretraining objective per split (mean ± sd over seeds, and each seed), the references of
references.py, and the fine-tuned expression models' test metrics.

usage: summarize.py OUT_DIR
"""
import csv
import glob
import os
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]


def cell(values):
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


pre = defaultdict(dict)
for path in sorted(glob.glob(os.path.join(out, "pre.*.seed*/metrics.tsv"))):
    _, target, split, seed = os.path.basename(os.path.dirname(path)).split(".")
    with open(path, newline="") as f:
        r2 = [float(r["dev_r2"]) for r in csv.DictReader(f, delimiter="\t") if r.get("dev_r2") not in (None, "", "NA")]
    if r2:
        pre[(split, target)][int(seed[4:])] = (max(r2), r2[-1])

if pre:
    print("\n### Pretraining: dev R² of the masked targets (best over evaluations; last in brackets)\n")
    print("| split | target | seeds | best dev R² | per seed (best / last) |")
    print("|---|---|---|---|---|")
    for (split, target), by_seed in sorted(pre.items()):
        best = [v[0] for v in by_seed.values()]
        each = ", ".join(f"{s}: {b:.3f} / {l:.3f}" for s, (b, l) in sorted(by_seed.items()))
        print(f"| {split} | {target} | {len(best)} | {cell(best)} | {each} |")

for split in ("genes", "loco"):
    path = os.path.join(out, f"references.{split}.tsv")
    if not os.path.exists(path):
        continue
    with open(path) as f:
        lines = f.read().splitlines()
    rows = list(csv.DictReader([l for l in lines if not l.startswith("#")], delimiter="\t"))
    print(f"\n### References, {split} (masked accessibility, dev R²)\n")
    print("| reference | dev rows | dev R² |")
    print("|---|---|---|")
    for r in rows:
        print(f"| {r['reference']} | {r['n_dev_rows']} | {r['dev_r2']} |")
    for l in lines:
        if l.startswith("#"):
            print(f"\n{l[1:].strip()}")

runs = defaultdict(lambda: defaultdict(list))
for path in sorted(glob.glob(os.path.join(out, "expr.*.seed*/test_metrics.tsv"))):
    _, split, head, init, _seed = os.path.basename(os.path.dirname(path)).split(".")
    with open(path, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["value"] != "NA":
                runs[init][r["metric"]].append(float(r["value"]))
if runs:
    cells = ["", "K562.", "GM12878."]
    print("\n### Fine-tuning (held-out genes, TSS-region head): test metrics\n")
    print("| init | seeds | " + " | ".join(f"{c or 'all '}Pearson | {c or 'all '}Spearman" for c in cells) + " |")
    print("|" + "---|" * (2 + 2 * len(cells)))
    for init in ("scratch", "all", "accessibility"):
        if init not in runs:
            continue
        m = runs[init]
        print(f"| {init} | {len(m['pearson'])} | " + " | ".join(
            f"{cell(m[c + 'pearson'])} | {cell(m[c + 'spearman'])}" for c in cells) + " |")
