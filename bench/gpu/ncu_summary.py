#!/usr/bin/env python3
"""Summary of an `ncu --csv --metrics gpu__time_duration.sum` log (bench/gpu/run_gpu.sh profile).

    ncu_summary.py PROFILE.csv

Prints one summary line (kernels, their summed GPU time, the mean per kernel, the share under
10 µs) and the ten kernels with the most summed time (launches, total, mean), as tab-separated
lines headed `profile`.
"""
import csv
import sys
from collections import defaultdict

SCALE = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
         "second": 1e6, "s": 1e6}


def main():
    with open(sys.argv[1]) as f:
        lines = [line for line in f if line.startswith('"')]
    rows = [r for r in csv.DictReader(lines) if r.get("Metric Name") == "gpu__time_duration.sum"]
    if not rows:
        print("profile\tncu wrote no kernel durations (see profile_ncu.err)")
        return
    per_kernel = defaultdict(list)
    for r in rows:
        us = float(r["Metric Value"].replace(",", "")) * SCALE.get(r["Metric Unit"], 1.0)
        name = r["Kernel Name"].split("(")[0][:60]
        per_kernel[name].append(us)
    durations = [d for v in per_kernel.values() for d in v]
    total = sum(durations)
    short = sum(1 for d in durations if d < 10)
    print(f"profile\t{len(durations)} kernels, {total / 1e3:.1f} ms of GPU time, mean "
          f"{total / len(durations):.1f} µs, {100 * short / len(durations):.0f} % under 10 µs")
    top = sorted(per_kernel.items(), key=lambda kv: -sum(kv[1]))[:10]
    for name, v in top:
        print(f"profile kernel\t{name}\t{len(v)} launches, {sum(v) / 1e3:.2f} ms "
              f"({100 * sum(v) / total:.0f} %), mean {sum(v) / len(v):.1f} µs")


if __name__ == "__main__":
    main()
