#!/usr/bin/env python3
"""Ratios (Luminome / PyTorch) from the bench.sh part-1 logs in this directory:
    python3 summarize.py > summary.txt"""
import sys
from pathlib import Path

here = Path(__file__).parent
sys.path.insert(0, str(here.parent.parent))
from speed_report import report  # noqa: E402

report(here, "bench_bistrand after the scan kernels (2026-11-28, Intel Xeon AVX-512)",
       {"scan kernels": "steps10.txt"}, ["scan kernels"], "steps1.txt")
