#!/usr/bin/env python3
"""Summarises bench/cnn/gue_cnn.sh: per task and adapter, test MCC mean ± sd over seeds, the best
checkpoint's step, wall time and peak memory of each run (from its /usr/bin/time -v log), and
the k-mer floor each run fitted on the same split (kmer_floor.tsv; the same for every seed).

    python3 bench/cnn/summarize.py WORK        # WORK as given to gue_cnn.sh
"""
import glob
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from summary_util import mean_sd, time_log, tsv  # noqa: E402

TASKS = ["prom_prom_core_all", "tf_0", "mouse_0"]
DNABERT2 = {"prom_prom_core_all": 0.694, "tf_0": 0.720, "mouse_0": 0.568}


def main():
    work = sys.argv[1]
    print("| task | model | test MCC | dev MCC | k-mer floor test MCC | DNABERT-2 | runs (wall, peak RSS) |")
    print("|---|---|---|---|---|---|---|")
    for task in TASKS:
        for adapter in ["mean", "gated"]:
            test, dev, floor, runs = [], [], set(), []
            for d in sorted(glob.glob(os.path.join(work, task, f"cnn_{adapter}_s*"))):
                tm = os.path.join(d, "test_metrics.tsv")
                if not os.path.exists(os.path.join(d, "kmer_floor.tsv")):
                    continue  # still running (the floor is fitted last)
                m = {r["metric"]: r["value"] for r in tsv(tm)}
                test.append(float(m["mcc"]))
                for r in tsv(os.path.join(d, "kmer_floor.tsv")):
                    if r["metric"] == "mcc" and r["set"] == "dev":
                        dev.append(float(r["model"]))
                    if r["metric"] == "mcc" and r["set"] == "test":
                        floor.add(round(float(r["kmer_floor"]), 4))
                wall, rss = time_log(d + ".log")
                runs.append(f"s{d.rsplit('_s', 1)[1]} step {m['checkpoint_step']} {wall} {rss} MB")
            print(f"| {task} | CNN + {adapter} | {mean_sd(test)} | {mean_sd(dev)} | "
                  f"{', '.join(str(f) for f in sorted(floor))} | {DNABERT2[task]} | {'; '.join(runs)} |")


if __name__ == "__main__":
    main()
