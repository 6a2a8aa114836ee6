#!/usr/bin/env python3
"""Summarises bench/cnn/gue_cnn.sh: per task and run setting (the run folder's name without its
_s<seed>: cnn_<adapter>[_fwd][TAG]), test MCC mean ± sd over seeds, the dev MCC of the chosen
checkpoint, the best checkpoint's step, wall time and peak memory of each run (from its
/usr/bin/time -v log), and the k-mer floor the runs fitted on the same split (kmer_floor.tsv;
deterministic, the same for every seed; absent with FLOOR=0).

    python3 bench/cnn/summarize.py WORK        # WORK as given to gue_cnn.sh
"""
import collections
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from summary_util import mean_sd, time_log, tsv  # noqa: E402

TASKS = ["prom_prom_core_all", "tf_0", "mouse_0"]
DNABERT2 = {"prom_prom_core_all": 0.694, "tf_0": 0.720, "mouse_0": 0.568}
RUN = re.compile(r"^cnn_(cls|mean|max|gated)(_fwd)?(.*)_s(\d+)$")


def main():
    work = sys.argv[1]
    print("| task | adapter | strands | tag | test MCC | dev MCC | k-mer floor test MCC | DNABERT-2 | runs (best step, wall, peak RSS) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for task in TASKS:
        groups = collections.defaultdict(list)
        for d in sorted(glob.glob(os.path.join(work, task, "cnn_*_s*"))):
            m = RUN.match(os.path.basename(d))
            if m and os.path.isdir(d) and os.path.exists(os.path.join(d, "test_metrics.tsv")):
                groups[m.groups()[:3]].append((m.group(4), d))
        for (adapter, fwd, tag), runs in sorted(groups.items()):
            test, dev, floor, notes = [], [], set(), []
            for seed, d in runs:
                m = {r["metric"]: r["value"] for r in tsv(os.path.join(d, "test_metrics.tsv"))}
                test.append(float(m["mcc"]))
                step = m["checkpoint_step"]
                for r in tsv(os.path.join(d, "metrics.tsv")):
                    if r["step"] == step and r["dev_mcc"]:
                        dev.append(float(r["dev_mcc"]))
                fl = os.path.join(d, "kmer_floor.tsv")
                if os.path.exists(fl):
                    for r in tsv(fl):
                        if r["metric"] == "mcc" and r["set"] == "test":
                            floor.add(round(float(r["kmer_floor"]), 4))
                wall, rss = time_log(d + ".log")
                notes.append(f"s{seed} {float(m['mcc']):.3f} step {step} {wall} {rss} MB")
            strands = "given strand" if fwd else "both (RC aug. + avg.)"
            print(f"| {task} | {adapter} | {strands} | {tag or '-'} | {mean_sd(test)} | {mean_sd(dev)} | "
                  f"{', '.join(str(f) for f in sorted(floor)) or 'n/a'} | {DNABERT2[task]} | "
                  f"{'; '.join(notes)} |")


if __name__ == "__main__":
    main()
