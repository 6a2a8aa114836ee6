#!/usr/bin/env python3
"""Ratios (Luminome / PyTorch) from the bench.sh part-1 logs in this directory:
    python3 summarize.py > summary.txt"""
import sys
from pathlib import Path

here = Path(__file__).parent
sys.path.insert(0, str(here.parent.parent))
from speed_report import report  # noqa: E402

report(here, "bench_bistrand with the prefetching scan (2026-11-29, AMD EPYC Zen 5)",
       {"prefetching scan": "steps10.txt"}, ["prefetching scan"], "steps1.txt")
