#!/usr/bin/env python3
"""Mean ± sd over seeds of the test metrics of each adapter (ft_<adapter>_s<seed>/test_metrics.tsv),
as the Markdown table in docs/results.md, beside the spec's numbers.

    python3 bench/train/summarize.py WORK_DIR [PREFIX]     # runs named PREFIX_<adapter>_s<seed>, default ft
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


def main(work, prefix):
    runs = {}
    for path in glob.glob(os.path.join(work, f"{prefix}_*_s*", "test_metrics.tsv")):
        m = re.search(rf"{prefix}_(\w+?)_s(\d+)", os.path.basename(os.path.dirname(path)))
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


def run_details(work, prefix):
    """One line per fine-tuning run: best dev step and MCC, test MCC, wall time and peak RSS
    (from the `/usr/bin/time -v` log beside the run folder)."""
    print()
    print("| run | steps run | best step | best dev MCC | test MCC | wall | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for folder in sorted(glob.glob(os.path.join(work, f"{prefix}_*_s*"))):
        if not os.path.isdir(folder):
            continue
        name = os.path.basename(folder)
        with open(os.path.join(folder, "metrics.tsv")) as f:
            header = f.readline().rstrip("\n").split("\t")
            rows = [dict(zip(header, line.rstrip("\n").split("\t"))) for line in f]
        evals = [r for r in rows if r.get("dev_mcc")]
        best = max(evals, key=lambda r: float(r["dev_mcc"])) if evals else None
        test = "–"
        tm = os.path.join(folder, "test_metrics.tsv")
        if os.path.exists(tm):
            with open(tm) as f:
                test = dict(line.rstrip("\n").split("\t") for line in f).get("mcc", "–")
        wall, rss = "–", "–"
        log = folder + ".log"
        if os.path.exists(log):
            for line in open(log):
                if "Elapsed (wall clock)" in line:
                    wall = line.rsplit(" ", 1)[1].strip()
                elif "Maximum resident set size" in line:
                    rss = f"{int(line.rsplit(' ', 1)[1]) / 1024:.0f} MB"
        print(
            f"| {name} | {rows[-1]['step'] if rows else '–'} | {best['step'] if best else '–'} | "
            f"{best['dev_mcc'] if best else '–'} | {test} | {wall} | {rss} |"
        )


if __name__ == "__main__":
    prefix = sys.argv[2] if len(sys.argv) > 2 else "ft"
    main(sys.argv[1], prefix)
    run_details(sys.argv[1], prefix)
