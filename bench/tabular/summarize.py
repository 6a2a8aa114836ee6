"""Mean ± sd over every (seed, fold) test fold of bench/tabular/run.sh's runs.

    python bench/tabular/summarize.py OUT_DIR
"""

import csv
import glob
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from summary_util import mean_sd, time_log  # noqa: E402

METRICS = ["accuracy", "sensitivity", "specificity", "auroc", "f1", "mcc"]


def main(out):
    rows = {}
    for path in sorted(glob.glob(f"{out}/*.seed*/cv_metrics.tsv")):
        model = os.path.basename(os.path.dirname(path)).split(".seed")[0]
        with open(path) as f:
            for r in csv.DictReader(f, delimiter="\t"):
                if r["fold"].isdigit():
                    rows.setdefault(model, []).append(r)
    for path in sorted(glob.glob(f"{out}/baselines.seed*.tsv")):
        with open(path) as f:
            for r in csv.DictReader(f, delimiter="\t"):
                rows.setdefault(r["model"], []).append(r)
    print("| model | folds | " + " | ".join(METRICS) + " | wall per 5-fold run (1 thread) |")
    print("|---" * (len(METRICS) + 3) + "|")
    for model, rs in rows.items():
        cells = [mean_sd([float(r[m]) for r in rs]) for m in METRICS]
        logs = sorted(glob.glob(f"{out}/{model}.seed*.log"))
        cost = "—"
        if logs:
            t = [time_log(p) for p in logs]
            cost = ", ".join(w for w, _ in t) + f"; peak {max(m for _, m in t)} MiB"
        print(f"| {model} | {len(rs)} | " + " | ".join(cells) + f" | {cost} |")


if __name__ == "__main__":
    main(sys.argv[1])
