#!/usr/bin/env python3
"""Ratios (Luminome / PyTorch) from the bench.sh part-1 logs in this directory:
    python3 summarize.py > summary.txt"""
import sys
from pathlib import Path

here = Path(__file__).parent
sys.path.insert(0, str(here.parent.parent))
from speed_report import report  # noqa: E402

report(here, "binary at 76b39a9 (built 14:23 UTC)", {"head (default env)": "head_steps10.txt"}, ["head (default env)"],
       "head_steps1.txt")
report(here, "binary at 76b39a9, second run (14:29 UTC; load 0.64 at the start, 2.5 at the end)",
       {"second (default env)": "quiet_steps10.txt"}, ["second (default env)"], "quiet_steps1.txt")
report(here, "earlier binary (built 13:44 UTC from a0873d2's tree: before the in-place AdamW)",
       {"1 (default env)": "earlier_binary_run1_steps10.txt",
        "2 (OMP_WAIT_POLICY=PASSIVE)": "earlier_binary_run2_omp_passive_steps10.txt",
        "3 (default env)": "earlier_binary_run3_steps10.txt"},
       ["1 (default env)", "3 (default env)"], "earlier_binary_steps1.txt")
