#!/usr/bin/env python3
"""GPU time of an `ncu --csv --metrics gpu__time_duration.sum` log, split into phases by launch index.

    ncu_phases.py PROFILE.csv[.gz] --map                 # one character per kernel, 200 per line:
                                                         # G = a matrix product (cuBLAS/CUTLASS),
                                                         # r = a cuRAND draw, . = anything else
    ncu_phases.py PROFILE.csv[.gz] START:END:LABEL ...   # per phase: kernels, summed GPU time and
                                                         # the eight kernels with the most time

The phases are read off the map by eye (a training step's forward is the first run of matrix
products after initialisation, its backward the denser run after it, the optimizer the run
without any); bench/gpu/results/2026-11-27-h200-3/README.md names the ones used.
"""
import collections
import csv
import gzip
import sys

from ncu_summary import SCALE  # the unit table of the one-line summary's parser, beside this file


def kernels(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        lines = [line for line in f if line.startswith('"')]
    rows = [r for r in csv.DictReader(lines) if r.get("Metric Name") == "gpu__time_duration.sum"]
    return [(r["Kernel Name"].split("(")[0][:44],
             float(r["Metric Value"].replace(",", "")) * SCALE.get(r["Metric Unit"], 1.0))
            for r in rows]


def glyph(name):
    if "gemm" in name or "cutlass" in name or "splitK" in name:
        return "G"
    return "r" if "curand" in name or "gen_sequenced" in name or "generate_seed" in name else "."


def main():
    ks = kernels(sys.argv[1])
    if sys.argv[2:] == ["--map"]:
        marks = "".join(glyph(n) for n, _ in ks)
        for i in range(0, len(marks), 200):
            print(f"{i:6d} {marks[i:i + 200]}")
        return
    for phase in sys.argv[2:]:
        start, end, label = phase.split(":", 2)
        part = ks[int(start):int(end)]
        total, count = collections.Counter(), collections.Counter()
        for name, us in part:
            total[name] += us
            count[name] += 1
        print(f"{label}\t{len(part)} kernels\t{sum(us for _, us in part) / 1e3:.1f} ms")
        for name, us in total.most_common(8):
            print(f"  {name}\t{count[name]} launches\t{us / 1e3:.2f} ms\tmean {us / count[name]:.1f} us")


if __name__ == "__main__":
    main()
