#!/usr/bin/env python3
"""Summarises bench/pretrain/gue_from_genome.sh: per task, init (genome checkpoint or scratch)
and adapter, test MCC mean ± sd over seeds, the dev MCC of the chosen checkpoint, its step, and
each run's wall time and peak memory (from its /usr/bin/time -v log).

    python3 bench/pretrain/summarize.py WORK        # WORK as given to gue_from_genome.sh
"""
import glob
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from summary_util import mean_sd, time_log, tsv  # noqa: E402

TASKS = ["prom_core_all", "tf0", "mouse0"]
DNABERT2 = {"prom_core_all": 0.694, "tf0": 0.720, "mouse0": 0.568}


def main():
    work = sys.argv[1]
    print("| task | init | adapter | test MCC (per seed) | dev MCC | DNABERT-2 | runs (best step, wall, peak RSS) |")
    print("|---|---|---|---|---|---|---|")
    for task in TASKS:
        for init in ["genome", "scratch"]:
            for adapter in ["mean", "gated"]:
                test, dev, runs = [], [], []
                for d in sorted(glob.glob(os.path.join(work, task, f"{init}_{adapter}_s*"))):
                    tm = os.path.join(d, "test_metrics.tsv")
                    if not os.path.exists(tm):
                        continue  # still running or stopped
                    m = {r["metric"]: r["value"] for r in tsv(tm)}
                    step = m["checkpoint_step"]
                    test.append(float(m["mcc"]))
                    for r in tsv(os.path.join(d, "metrics.tsv")):
                        if r["step"] == step and r["dev_mcc"]:
                            dev.append(float(r["dev_mcc"]))
                    wall, rss = time_log(d + ".log")
                    runs.append(f"s{d.rsplit('_s', 1)[1]} {step} {wall} {rss} MB")
                if not test:
                    continue
                seeds = ", ".join(f"{t:.3f}" for t in test)
                print(f"| {task} | {init} | {adapter} | {mean_sd(test)} ({seeds}) | {mean_sd(dev)} | "
                      f"{DNABERT2[task]} | {'; '.join(runs)} |")


if __name__ == "__main__":
    main()
