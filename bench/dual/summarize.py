#!/usr/bin/env python3
"""Mean ± sd over seeds of the dual-encoder runs of bench/dual/run.sh, beside the baselines.

    python3 bench/dual/summarize.py OUT
"""
import csv
import glob
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import statistics  # noqa: E402

from summary_util import time_log  # noqa: E402


def mean_sd(v, digits):
    sd = statistics.stdev(v) if len(v) > 1 else 0.0
    return f"{statistics.mean(v):.{digits}f} ± {sd:.{digits}f}"

COLS = ["mrr", "map", "ndcg_at_5", "p_at_1", "p_at_5", "r_at_1", "r_at_5", "hit_at_5"]


def read_metrics(path):
    with open(path) as f:
        return {r["metric"]: float(r["value"]) for r in csv.DictReader(f, delimiter="\t")}


def main():
    out = sys.argv[1]
    print("| queries | model | " + " | ".join(COLS) + " | pos sim | variance | in-batch MRR |")
    print("|---" * (len(COLS) + 5) + "|")
    for q in ["test", "test.fwd", "test.rc"]:
        for attention in ["standard", "genetic"]:
            runs = sorted(glob.glob(f"{out}/{attention}.seed*/{q}.metrics.tsv"))
            if not runs:
                continue
            ms = [read_metrics(r) for r in runs]
            cell = lambda k: mean_sd([m[k] for m in ms], 3)
            print(f"| {q} | {attention} ({len(ms)} seeds) | "
                  + " | ".join(cell(f"full.{c}") for c in COLS)
                  + f" | {cell('positive_similarity')} | {mean_sd([m['passage_variance'] for m in ms], 5)}"
                  + f" | {cell('in_batch.mrr')} |")
        with open(f"{out}/baselines.tsv") as f:
            for r in csv.DictReader(f, delimiter="\t"):
                if os.path.basename(r["pairs"]) == f"{q}.pairs.tsv" and (r["method"].endswith("*") or r["method"] == "minimizer-overlap"):
                    print(f"| {q} | {r['method'].rstrip('*')} | "
                          + " | ".join(f"{float(r[c]):.3f}" for c in COLS) + " | — | — | — |")
    print()
    for attention in ["standard", "genetic"]:
        for log in sorted(glob.glob(f"{out}/{attention}.seed*.time.log")):
            wall, rss = time_log(log)
            run = log[: -len(".time.log")]
            best = ""
            mt = os.path.join(run, "metrics.tsv")
            if os.path.exists(mt):
                with open(mt) as f:
                    rows = [r for r in csv.DictReader(f, delimiter="\t") if r.get("dev_mrr")]
                if rows:
                    b = max(rows, key=lambda r: float(r["dev_mrr"]))
                    best = f"best dev MRR {float(b['dev_mrr']):.3f} at step {b['step']}, last {float(rows[-1]['dev_mrr']):.3f}"
            print(f"- {os.path.basename(run)}: wall {wall}, peak RSS {rss} MB; {best}")


if __name__ == "__main__":
    main()
