#!/usr/bin/env python3
"""Summarises bench/train/small_data.sh: per task and model, test MCC (mean ± sd over seeds), the
dev loss at the best checkpoint and at the last evaluation, the step the run stopped at, and the
k-mer floor's test MCC on the same split.

    python3 bench/train/small_data.py WORK
"""
import csv
import glob
import os
import statistics
import sys

MODELS = [("standard", "transformer, standard settings"),
          ("small", "transformer, small-data defaults"),
          ("cnn", "CNN (64 channels, both strands)"),
          ("defaults", "classify's defaults (the CNN on both strands, 20 epochs)")]


def tsv(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def ms(v, digits=3):
    if not v:
        return "n/a"
    sd = statistics.stdev(v) if len(v) > 1 else 0.0
    return f"{statistics.mean(v):.{digits}f} ± {sd:.{digits}f}"


def main():
    work = sys.argv[1]
    print("| training set | model | test MCC | dev loss at best | dev loss at stop | stopped at step | seeds |")
    print("|---|---|---|---|---|---|---|")
    for task, label in [("tf_0_2k", "tf/0, 2,000 rows"), ("mouse_0", "mouse/0, 6,478 rows")]:
        for model, name in MODELS:
            mcc, best_loss, stop_loss, stops = [], [], [], []
            for d in sorted(glob.glob(os.path.join(work, task, f"small_{model}_s*"))):
                if not os.path.exists(os.path.join(d, "test_metrics.tsv")):
                    continue
                m = {r["metric"]: r["value"] for r in tsv(os.path.join(d, "test_metrics.tsv"))}
                mcc.append(float(m["mcc"]))
                evals = [r for r in tsv(os.path.join(d, "metrics.tsv")) if r["dev_loss"]]
                best = next(r for r in evals if r["step"] == m["checkpoint_step"])
                best_loss.append(float(best["dev_loss"]))
                stop_loss.append(float(evals[-1]["dev_loss"]))
                stops.append(int(evals[-1]["step"]))
            if not mcc:
                continue
            print(f"| {label} | {name} | {ms(mcc)} | {ms(best_loss, 2)} | {ms(stop_loss, 2)} | "
                  f"{', '.join(map(str, stops))} | {len(mcc)} |")
        floor = os.path.join(work, task, "kmer", "test_metrics.tsv")
        if os.path.exists(floor):
            m = {r["metric"]: r["value"] for r in tsv(floor)}
            print(f"| {label} | k-mer floor (deterministic) | {float(m['mcc']):.3f} | | | | |")


if __name__ == "__main__":
    main()
