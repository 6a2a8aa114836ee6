#!/usr/bin/env python3
"""Summarises bench/pretrain/nt_v2_prom_adapters.sh: per init (the chr22 NT-v2 masked-LM
checkpoint, or random weights) and adapter, test accuracy / AUROC / F1 / MCC mean ± sd over
seeds (the adapter spec's four metrics), the dev MCC of the chosen checkpoint, its step, and each
run's wall time and peak memory (from its /usr/bin/time -v log).

    python3 bench/pretrain/summarize_nt_v2.py WORK    # WORK as given to nt_v2_prom_adapters.sh
"""
import glob
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from summary_util import mean_sd, time_log, tsv  # noqa: E402

ADAPTERS = ["cls", "mean", "max", "gated"]
METRICS = ["accuracy", "auroc", "f1", "mcc"]


def main():
    work = sys.argv[1]
    print("| init | adapter | seeds | accuracy | AUROC | F1 | MCC (per seed) | dev MCC | runs (best step, wall, peak RSS) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for init in ["genome", "scratch"]:
        for adapter in ADAPTERS:
            cols = {m: [] for m in METRICS}
            dev, runs = [], []
            for d in sorted(glob.glob(os.path.join(work, f"{init}_{adapter}_s*/"))):
                d = d.rstrip("/")
                tm = os.path.join(d, "test_metrics.tsv")
                if not os.path.exists(tm):
                    continue  # still running or stopped
                m = {r["metric"]: r["value"] for r in tsv(tm)}
                step = m["checkpoint_step"]
                for k in METRICS:
                    cols[k].append(float(m[k]))
                for r in tsv(os.path.join(d, "metrics.tsv")):
                    if r["step"] == step and r["dev_mcc"]:
                        dev.append(float(r["dev_mcc"]))
                wall, rss = time_log(d + ".log")
                runs.append(f"s{d.rsplit('_s', 1)[1]} {step} {wall} {rss} MB")
            if not cols["mcc"]:
                continue
            seeds = ", ".join(f"{t:.3f}" for t in cols["mcc"])
            print(f"| {init} | {adapter} | {len(cols['mcc'])} | {mean_sd(cols['accuracy'])} | "
                  f"{mean_sd(cols['auroc'])} | {mean_sd(cols['f1'])} | {mean_sd(cols['mcc'])} ({seeds}) | "
                  f"{mean_sd(dev)} | {'; '.join(runs)} |")


if __name__ == "__main__":
    main()
