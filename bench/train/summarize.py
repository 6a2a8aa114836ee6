#!/usr/bin/env python3
"""Mean ± sd over seeds of the test metrics of each adapter (ft_<adapter>_s<seed>/test_metrics.tsv),
as the Markdown table in docs/results.md, beside the spec's numbers.

    python3 bench/train/summarize.py WORK_DIR
"""
import glob
import os
import re
import statistics
import sys

SPEC = {
    "gated": ("DynamicGated", "0.8547", "0.9308", "0.8557", "0.7094"),
    "mean": ("LinearMeanPool", "0.8550", "0.9219", "0.8519", "0.7109"),
    "max": ("LinearMaxPool", "0.8440", "0.9354", "0.8323", "0.6957"),
    "cls": ("LinearCLS", "0.7934", "0.8831", "0.7798", "0.5918"),
}
METRICS = ["accuracy", "auroc", "f1", "mcc"]


def main():
    work = sys.argv[1]
    runs = {}
    for path in glob.glob(os.path.join(work, "ft_*_s*", "test_metrics.tsv")):
        m = re.search(r"ft_(\w+?)_s(\d+)", path)
        with open(path) as f:
            values = dict(line.rstrip("\n").split("\t") for line in f if not line.startswith("metric\t"))
        runs.setdefault(m.group(1), []).append(values)
    print("| adapter | seeds | accuracy | AUROC | F1 | MCC | spec (acc / AUROC / F1 / MCC) |")
    print("|---|---|---|---|---|---|---|")
    for key, (name, *spec) in SPEC.items():
        rs = runs.get(key, [])
        cells = []
        for metric in METRICS:
            v = [float(r[metric]) for r in rs if r.get(metric, "NA") != "NA"]
            if not v:
                cells.append("–")
            elif len(v) == 1:
                cells.append(f"{v[0]:.4f}")
            else:
                cells.append(f"{statistics.mean(v):.4f} ± {statistics.stdev(v):.4f}")
        print(f"| {name} | {len(rs)} | " + " | ".join(cells) + f" | {' / '.join(spec)} |")


if __name__ == "__main__":
    main()
