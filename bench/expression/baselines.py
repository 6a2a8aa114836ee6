#!/usr/bin/env python3
"""Baselines for expression on the same split as a luminome expression model (docs/results.md).

Reads the region dataset and a luminome-predict TSV over *all* samples of a model trained with
--holdout (its `split` column says which samples are train / dev / test), and fits, on the train
samples, then scores on the test samples:

  tss_accessibility  the accessibility (last feature) of the TSS region, 0 when no region holds
                     the TSS (no fitting: correlations are scale-free)
  ridge              RidgeCV (alphas 10^-3..10^4, 5-fold on train) on [TSS-region features;
                     features summed over the window's regions], standardised
  gbt                HistGradientBoostingRegressor (scikit-learn defaults, random_state 0) on the
                     same features
  ridge_tss_acc      ridge on [TSS-region accessibility; whether a region holds the TSS], the
                     penalty by dev Pearson from the model's grid (the linear path's start with
                     --linear-inputs tss-accessibility, fitted here independently)
  other_cell_type    the same gene's expression in the other cell type(s) (their mean; the
                     training mean where no other cell type has a value) — for the leave-one-
                     cell-type-out split the number a user would check first

Prints TSV: baseline, cell_type (all or each), n, pearson, spearman.

usage: baselines.py DATASET.safetensors PREDICTIONS_ALL.tsv
"""
import csv
import sys
import warnings

import numpy as np
from safetensors.numpy import load_file
from scipy.stats import pearsonr, spearmanr
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

# RidgeCV's small alphas on 566 collinear columns warn of ill-conditioning; its CV picks a
# larger alpha, so the warnings say nothing about the fit that is used.
warnings.filterwarnings("ignore", module="sklearn")
warnings.filterwarnings("ignore", message="Ill-conditioned")

dataset, predictions = sys.argv[1:3]
d = load_file(dataset)
features, mask, tss = d["features"], d["region_mask"].astype(bool), d["tss_index"]
y_all = d["expression"].astype(np.float64)
with open(predictions, newline="") as f:
    rows = list(csv.DictReader(f, delimiter="\t"))
split = {int(r["record"]): r["split"] for r in rows}
cell = {int(r["record"]): r["cell_type"] for r in rows}
n = features.shape[0]
assert len(split) == n, (len(split), n)

tss_feat = np.where(tss[:, None] >= 0, features[np.arange(n), np.maximum(tss, 0)], 0.0)
window = (features * mask[:, :, None]).sum(axis=1)
X = np.concatenate([tss_feat, window], axis=1)
train = np.array([split[i] == "train" and not np.isnan(y_all[i]) for i in range(n)])
test = np.array([split[i] == "test" and not np.isnan(y_all[i]) and mask[i].any() for i in range(n)])

dev = np.array([split[i] == "dev" and not np.isnan(y_all[i]) and mask[i].any() for i in range(n)])

scores = {"tss_accessibility": tss_feat[:, -1]}
ridge = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 4, 15), cv=5))
scores["ridge"] = ridge.fit(X[train], y_all[train]).predict(X)
gbt = HistGradientBoostingRegressor(random_state=0)
scores["gbt"] = gbt.fit(X[train], y_all[train]).predict(X)

acc = np.stack([tss_feat[:, -1], (tss >= 0).astype(np.float64)], axis=1)
scaled = StandardScaler().fit(acc[train]).transform(acc)
best = None
for lam in [1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000]:
    pred = Ridge(alpha=lam * train.sum()).fit(scaled[train], y_all[train]).predict(scaled)
    r = pearsonr(pred[dev], y_all[dev])[0] if dev.any() else -lam
    if best is None or r >= best[0]:
        best = (r, pred)
scores["ridge_tss_acc"] = best[1]

gene = {int(r["record"]): r["gene_id"] for r in rows}
by_gene = {}
for i in range(n):
    if not np.isnan(y_all[i]):
        by_gene.setdefault(gene[i], []).append((cell[i], y_all[i]))
train_mean = y_all[train].mean()
scores["other_cell_type"] = np.array([
    np.mean([v for c, v in by_gene.get(gene[i], []) if c != cell[i]] or [train_mean])
    for i in range(n)
])

print("baseline\tcell_type\tn\tpearson\tspearman")
cells = ["all"] + sorted({cell[i] for i in range(n) if test[i]})
for name, s in scores.items():
    for c in cells:
        sel = test & np.array([c == "all" or cell[i] == c for i in range(n)])
        p = pearsonr(y_all[sel], s[sel])[0] if np.std(s[sel]) > 0 else float("nan")
        r = spearmanr(y_all[sel], s[sel])[0]
        print(f"{name}\t{c}\t{int(sel.sum())}\t{p:.4f}\t{r:.4f}")
