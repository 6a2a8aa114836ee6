#!/usr/bin/env python3
"""Where an attention-pooling expression model looks (docs/results.md, "The attention-pool head").

Reads the region dataset and `luminome-importance --method pooling` TSVs (one per model), and
prints per model: samples whose TSS lies in a region, the mean alpha of the TSS region, the mean
of 1 / (regions in the window) (what uniform pooling gives it), the fraction of samples in which
the TSS region has the largest alpha, and the mean effective number of regions pooled
(1 / sum alpha^2).

usage: pooling_alpha.py DATASET.safetensors LABEL=POOLING.tsv [LABEL=POOLING.tsv ...]
"""
import csv
import sys
from collections import defaultdict

import numpy as np
from safetensors.numpy import load_file

d = load_file(sys.argv[1])
tss, mask = d["tss_index"], d["region_mask"].astype(bool)
print("model\tsamples\tmean_alpha_tss\tuniform\ttss_is_max\teffective_regions")
for arg in sys.argv[2:]:
    label, path = arg.split("=", 1)
    alpha = defaultdict(dict)
    with open(path, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            alpha[int(r["sample"])][int(r["slot"])] = float(r["alpha"])
    at, uniform, is_max, eff = [], [], [], []
    for s, a in alpha.items():
        if tss[s] < 0:
            continue
        values = np.array(list(a.values()))
        at.append(a.get(int(tss[s]), 0.0))
        uniform.append(1.0 / mask[s].sum())
        is_max.append(float(a.get(int(tss[s]), 0.0) >= values.max()))
        eff.append(1.0 / (values ** 2).sum())
    print(f"{label}\t{len(at)}\t{np.mean(at):.4f}\t{np.mean(uniform):.4f}\t{np.mean(is_max):.3f}\t{np.mean(eff):.1f}")
