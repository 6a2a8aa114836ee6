"""Baselines on exactly the folds of a `luminome-train tabular --folds K` run: logistic
regression (standardised features, L2, C chosen by 5-fold CV on the training part) and
gradient-boosted trees (scikit-learn's HistGradientBoostingClassifier, defaults), each trained
on every row outside the test fold (the suite's training + validation rows).

    python bench/tabular/baselines.py TABLE.tsv CV_DIR LABEL POSITIVE [ID] > baselines.tsv

Reads CV_DIR/cv_predictions.tsv for the fold of each sample. Columns are typed as the suite
types them; categorical ones enter as integer codes (the gene table's strand: two values); NaN
where missing (trees split on it; logistic regression imputes the median and adds indicators). Prints: model, fold, n, accuracy, sensitivity,
specificity, auroc, f1, mcc (the suite's cv_metrics.tsv columns).
"""

import csv
import warnings
import sys

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegressionCV
from sklearn.metrics import (accuracy_score, f1_score, matthews_corrcoef,
                             recall_score, roc_auc_score)
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


MISSING = {"", "NA", "N/A", "NaN", "nan", "null", "NULL", "."}


def number(v):
    try:
        return float(v)
    except ValueError:
        return None


def column(rows, c):
    """A numeric column (NaN where missing) or a categorical one as integer codes (sorted
    values; NaN where missing), as luminome-train tabular infers them."""
    cells = [r[c] for r in rows]
    present = [v for v in cells if v not in MISSING]
    if all(number(v) is not None for v in present):
        return np.array([np.nan if v in MISSING else float(v) for v in cells])
    codes = {v: i for i, v in enumerate(sorted(set(present)))}
    return np.array([np.nan if v in MISSING else codes[v] for v in cells], dtype=float)


def main(table, cv_dir, label, positive, id_col="sample"):
    warnings.simplefilter("ignore", FutureWarning)
    with open(table) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    with open(f"{cv_dir}/cv_predictions.tsv") as f:
        fold_of = {r["sample"]: int(r["fold"]) for r in csv.DictReader(f, delimiter="\t")}
    features = [c for c in rows[0] if c not in (label, id_col)]
    x = np.column_stack([column(rows, c) for c in features])
    y = np.array([int(r[label] == positive) for r in rows])
    fold = np.array([fold_of[r[id_col]] for r in rows])
    models = {
        # Missing values: median imputation plus a missing-indicator column per feature.
        "logistic_regression": lambda: make_pipeline(
            SimpleImputer(strategy="median", add_indicator=True), StandardScaler(),
            LogisticRegressionCV(Cs=10, cv=5, max_iter=5000)),
        "gradient_boosting": lambda: HistGradientBoostingClassifier(random_state=0),
    }
    print("model\tfold\tn\taccuracy\tsensitivity\tspecificity\tauroc\tf1\tmcc")
    if "tss_accessibility" in features:
        # The gene table's one-line rule, no fitting: expressed when the TSS lies in an
        # accessible region; ranked by that region's accessibility (AUROC).
        acc = x[:, features.index("tss_accessibility")]
        models["tss_in_accessible_region"] = None
    for name, make in models.items():
        for k in sorted(set(fold)):
            test = fold == k
            if make is None:
                a = acc[test]
                pred = (~np.isnan(a)).astype(int)
                p = np.where(np.isnan(a), np.nanmin(acc) - 1.0, a)
            else:
                m = make().fit(x[~test], y[~test])
                p = m.predict_proba(x[test])[:, 1]
                pred = (p >= 0.5).astype(int)
            t = y[test]
            v = [accuracy_score(t, pred), recall_score(t, pred, pos_label=1),
                 recall_score(t, pred, pos_label=0), roc_auc_score(t, p),
                 f1_score(t, pred), matthews_corrcoef(t, pred)]
            print(f"{name}\t{k}\t{test.sum()}\t" + "\t".join(f"{a:.6f}" for a in v))


if __name__ == "__main__":
    main(*sys.argv[1:])
