#!/usr/bin/env python3
"""Summarises bench/cnn/defaults.sh: per task, test MCC of classify's plain defaults (mean ± sd
over seeds) beside the k-mer floor the same runs fitted on the same split, the best
checkpoint's step, where training stopped (early or at its default step count), wall and CPU
time and peak memory of each run (its /usr/bin/time -v log).

    python3 bench/cnn/defaults.py WORK [TAG]  # WORK (and TAG) as given to defaults.sh
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from summary_util import mean_sd, time_log, tsv  # noqa: E402

TASKS = ["bundled", "mouse_0", "tf_0", "prom_prom_core_all"]
DNABERT2 = {"prom_prom_core_all": 0.694, "tf_0": 0.720, "mouse_0": 0.568, "bundled": None}


def cpu_seconds(log):
    text = open(log).read()
    user = re.search(r"User time \(seconds\): (\S+)", text)
    sys_ = re.search(r"System time \(seconds\): (\S+)", text)
    return float(user.group(1)) + float(sys_.group(1)) if user and sys_ else float("nan")


def run(d):
    test = {r["metric"]: r["value"] for r in tsv(os.path.join(d, "test_metrics.tsv"))}
    floor = {(r["metric"], r["set"]): r["kmer_floor"] for r in tsv(os.path.join(d, "kmer_floor.tsv"))}
    rows = tsv(os.path.join(d, "metrics.tsv"))
    log = d + ".log"
    text = open(log).read()
    steps = re.search(r"--steps (\d+)", text)
    wall, rss = time_log(log)
    return {
        "mcc": float(test["mcc"]),
        "floor": float(floor[("mcc", "test")]),
        "best": int(test["checkpoint_step"]),
        "stop": int(rows[-1]["step"]),
        "max": int(steps.group(1)) if steps else None,
        "early": "early stop" in text,
        "wall": wall,
        "cpu": cpu_seconds(log),
        "rss": rss,
    }


def main():
    work = sys.argv[1]
    tag = sys.argv[2] if len(sys.argv) > 2 else "default"
    print("| task | test MCC, defaults | k-mer floor (test) | DNABERT-2 | runs (best step / stopped at of max; wall, CPU s, peak RSS) |")
    print("|---|---|---|---|---|")
    for task in TASKS:
        runs = [run(d) for d in sorted(glob.glob(os.path.join(work, task, f"{tag}_s*")))
                if os.path.isdir(d) and os.path.exists(os.path.join(d, "kmer_floor.tsv"))]
        if not runs:
            continue
        mccs = [r["mcc"] for r in runs]
        detail = "; ".join(
            f"{r['best']} / {r['stop']}{' (early)' if r['early'] else ''} of {r['max']}, "
            f"{r['wall']}, {r['cpu']:.0f} s, {r['rss']} MB"
            for r in runs
        )
        floor = sorted({r["floor"] for r in runs})
        print(f"| {task} | {mean_sd(mccs)} ({', '.join(f'{m:.3f}' for m in mccs)}) | "
              f"{', '.join(f'{f:.3f}' for f in floor)} | {DNABERT2[task] or ''} | {detail} |")


if __name__ == "__main__":
    main()
