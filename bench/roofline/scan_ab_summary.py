#!/usr/bin/env python3
"""Summarises a scan_ab.sh runs.txt: per measure, the median over rounds of AFTER's time over
BEFORE's in the same round (with the range), and the scan's FLOP rates against the transformer's
from the same rounds (the transformer's FLOPs per step from flops.py: 12.57 GFLOP a training
step, 4.19 GFLOP an inference batch).

    python3 bench/roofline/scan_ab_summary.py OUT_DIR/runs.txt
"""
import re
import statistics
import sys

TRANSFORMER_TRAIN, TRANSFORMER_INFER = 12.573523968e9, 4.191174656e9

rounds = []
for line in open(sys.argv[1]):
    label = line.split()[0]
    if label == "before" and " scan " in line:
        rounds.append({})
    num = lambda key: float(re.search(key + r" median ([0-9.]+)", line).group(1))
    r = rounds[-1]
    if " scan " in line:
        r[label, "scan forward"] = num("forward_ms")
        r[label, "scan forward + backward"] = num("train_ms")
        r[label, "scan GFLOP/s"] = (
            float(re.findall(r"\(([0-9.]+) GFLOP/s\)", line)[0]),
            float(re.findall(r"\(([0-9.]+) GFLOP/s\)", line)[1]),
        )
    elif "bistrand" in line:
        r[label, "bi-strand training step"] = num("train_step_ms")
        r[label, "bi-strand inference"] = num("inference_batch_ms")
    elif label == "transformer":
        r["transformer"] = (
            TRANSFORMER_TRAIN / num("train_step_ms") / 1e6,
            TRANSFORMER_INFER / num("inference_batch_ms") / 1e6,
        )

print(f"{len(rounds)} rounds")
for m in ["scan forward", "scan forward + backward", "bi-strand training step", "bi-strand inference"]:
    ratios = [r["after", m] / r["before", m] for r in rounds]
    after = [r["after", m] for r in rounds]
    print(f"{m}: after/before median {statistics.median(ratios):.2f} "
          f"({min(ratios):.2f}-{max(ratios):.2f}); after median {statistics.median(after):.2f} ms")
fwd = [r["after", "scan GFLOP/s"][0] for r in rounds]
trn = [r["after", "scan GFLOP/s"][1] for r in rounds]
tt = [r["transformer"][0] for r in rounds]
ti = [r["transformer"][1] for r in rounds]
print(f"scan forward {statistics.median(fwd):.1f} GFLOP/s vs transformer inference "
      f"{statistics.median(ti):.1f}: {100 * statistics.median([a / b for a, b in zip(fwd, ti)]):.0f} %")
print(f"scan forward + backward {statistics.median(trn):.1f} GFLOP/s vs transformer training "
      f"{statistics.median(tt):.1f}: {100 * statistics.median([a / b for a, b in zip(trn, tt)]):.0f} %")
