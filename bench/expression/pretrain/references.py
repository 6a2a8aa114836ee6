#!/usr/bin/env python3
"""No-deep-learning references for masked-accessibility pretraining (docs/expression.md,
"Pretraining that learns"), on the same split as a `luminome-train region-pretrain` run.

The pretraining objective `--target accessibility` hides the standardised accessibility (the last
feature) of a random half of each window's regions and predicts it from the region's own motif
features and the other regions of the window. Here the same target is predicted by:

  mean          the training mean (R² 0 by definition: the reference every R² is measured from)
  ridge_motifs  RidgeCV (alphas 10^-3..10^5) on the region's own 282 motif features (log1p) and
                a one-hot of the cell type: what the region's sequence alone says
  gbt_motifs    HistGradientBoostingRegressor (scikit-learn defaults, random_state 0) on the same
  ridge_neigh   RidgeCV on the same plus what the visible neighbours say: the mean standardised
                accessibility of the window's unmasked regions and that of the nearest unmasked
                region on each side (0 and a flag when there is none)

Rows: the masked real regions of the training (fit) and dev (score) samples, masks drawn as the
model draws them (round(0.5 · regions), at least one; other random draws, 3 for the training
samples, 1 for dev). Targets are standardised with the training samples' real regions' mean and
standard deviation, as the model's are; R² = 1 − SS_res / SS_tot with SS_tot around the training
mean (0 after standardisation), the model's dev_r2. Also reports how many dev rows' regions occur
in a training sample of the same cell type (tiles overlap: a window is 2 Mbp).

usage: references.py TILES.safetensors TILES.samples.tsv RUN_DIR/best.config.json
Prints TSV: reference, n_dev_rows, dev_r2.
"""
import csv
import json
import sys
import warnings

import numpy as np
from safetensors.numpy import load_file
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

warnings.filterwarnings("ignore", module="sklearn")
warnings.filterwarnings("ignore", message="Ill-conditioned")


def find_holdout(obj):
    """The stored split: the first dict with a `by` key of genes / cell-type."""
    if isinstance(obj, dict):
        if obj.get("by") in ("genes", "cell-type"):
            return obj
        for v in obj.values():
            h = find_holdout(v)
            if h is not None:
                return h
    elif isinstance(obj, list):
        for v in obj:
            h = find_holdout(v)
            if h is not None:
                return h
    return None


def inside(intervals, chrom, tss):
    return any(i["chrom"] == chrom and i["first"] <= tss <= i["last"] for i in intervals)


def assign(h, row):
    chrom, tss, cell = row["chrom"], int(row["tss"]), row["cell_type"]
    if h["by"] == "genes":
        if inside(h["test"], chrom, tss):
            return "test"
        return "dev" if inside(h["dev"], chrom, tss) else "train"
    if cell == h["cell_type"]:
        return "test"
    return "dev" if inside(h["dev"], chrom, tss) else "train"


def draw_masks(used, n, rng):
    """[S, N] bool: round(0.5 · used) of each sample's real slots (at least one)."""
    m = np.zeros((len(used), n), dtype=bool)
    for s, u in enumerate(used):
        if u == 0:
            continue
        k = min(max(int(np.floor(0.5 * u + 0.5)), 1), u)
        m[s, rng.choice(u, size=k, replace=False)] = True
    return m


def rows(samples, masks, feats, acc, real, cells):
    """Features and targets of the masked slots of `samples` under `masks` ([len, N])."""
    xs, ys = [], []
    for s, m in zip(samples, masks):
        vis = real[s] & ~m
        a = acc[s]
        slots = np.nonzero(m)[0]
        vis_idx = np.nonzero(vis)[0]
        mean_vis = a[vis].mean() if vis.any() else 0.0
        for i in slots:
            left = vis_idx[vis_idx < i]
            right = vis_idx[vis_idx > i]
            lv, lf = (a[left[-1]], 1.0) if len(left) else (0.0, 0.0)
            rv, rf = (a[right[0]], 1.0) if len(right) else (0.0, 0.0)
            xs.append(
                np.concatenate(
                    [np.log1p(np.maximum(feats[s, i, :-1], 0)), cells[s], [mean_vis, float(vis.any()), lv, lf, rv, rf]]
                )
            )
            ys.append(a[i])
    return np.array(xs), np.array(ys)


def main():
    tiles, samples_tsv, config = sys.argv[1:4]
    d = load_file(tiles)
    feats = d["features"].astype(np.float64)
    real = d["region_mask"].astype(bool)
    region_index = d["region_index"]
    with open(samples_tsv, newline="") as f:
        samples = list(csv.DictReader(f, delimiter="\t"))
    with open(config) as f:
        h = find_holdout(json.load(f))
    if h is None:
        sys.exit(f"{config}: no holdout in the config")
    split = np.array([assign(h, r) for r in samples])
    names = sorted({r["cell_type"] for r in samples})
    cells = np.array([[float(r["cell_type"] == c) for c in names] for r in samples])
    train = np.nonzero(split == "train")[0]
    dev = np.nonzero(split == "dev")[0]
    # Standardise the accessibility as the model does: over the training samples' real slots.
    raw = feats[:, :, -1]
    vals = raw[train][real[train]]
    mu, sd = vals.mean(), vals.std()
    acc = (raw - mu) / sd
    n = feats.shape[1]
    used = real.sum(axis=1)
    rng = np.random.default_rng(0)
    parts = [
        rows(train, draw_masks(used[train], n, rng), feats, acc, real, cells) for _ in range(3)
    ]
    xtr = np.concatenate([p[0] for p in parts])
    ytr = np.concatenate([p[1] for p in parts])
    dev_masks = draw_masks(used[dev], n, rng)
    xdv, ydv = rows(dev, dev_masks, feats, acc, real, cells)
    n_own = feats.shape[2] - 1 + len(names)

    def r2(pred):
        return 1.0 - ((pred - ydv) ** 2).sum() / (ydv**2).sum()

    out = [("mean", np.zeros_like(ydv))]
    alphas = np.logspace(-3, 5, 17)
    ridge = make_pipeline(StandardScaler(), RidgeCV(alphas=alphas))
    out.append(("ridge_motifs", ridge.fit(xtr[:, :n_own], ytr).predict(xdv[:, :n_own])))
    gbt = HistGradientBoostingRegressor(random_state=0)
    out.append(("gbt_motifs", gbt.fit(xtr[:, :n_own], ytr).predict(xdv[:, :n_own])))
    ridge = make_pipeline(StandardScaler(), RidgeCV(alphas=alphas))
    out.append(("ridge_neigh", ridge.fit(xtr, ytr).predict(xdv)))
    gbt = HistGradientBoostingRegressor(random_state=0)
    out.append(("gbt_neigh", gbt.fit(xtr, ytr).predict(xdv)))
    # Dev rows whose (region, cell type) also occurs in a training sample.
    seen = {
        (int(region_index[s, i]), samples[s]["cell_type"])
        for s in train
        for i in np.nonzero(real[s])[0]
    }
    dev_keys = [
        (int(region_index[s, i]), samples[s]["cell_type"])
        for s, m in zip(dev, dev_masks)
        for i in np.nonzero(m)[0]
    ]
    shared = sum(k in seen for k in dev_keys) / len(dev_keys)
    print("reference\tn_dev_rows\tdev_r2")
    for name, pred in out:
        print(f"{name}\t{len(ydv)}\t{r2(pred):.4f}")
    preds = dict(out)
    corr = np.corrcoef(preds["ridge_motifs"], preds["gbt_motifs"])[0, 1]
    print(f"# Pearson between the ridge_motifs and gbt_motifs predictions: {corr:.3f}")
    print(f"# {len(train)} training and {len(dev)} dev samples; {shared:.1%} of the dev rows' "
          f"(region, cell type) also occur in a training sample")


if __name__ == "__main__":
    main()
