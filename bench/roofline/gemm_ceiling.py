#!/usr/bin/env python3
"""One core's achievable matrix-product rate: PyTorch's f32 `mm` (its BLAS) on one thread, square
sizes 256–1024 and the benchmark models' own shapes (rows × d × 4d), best of five. Prints
"gemm_gflops SIZE RATE" lines.

    python3 bench/roofline/gemm_ceiling.py
"""
import time

import torch

torch.set_num_threads(1)
shapes = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024),
          (2304, 128, 512), (2304, 512, 128), (2048, 64, 256)]
for m, k, n in shapes:
    a, b = torch.randn(m, k), torch.randn(k, n)
    reps = max(3, int(2e9 / (2 * m * k * n)))
    best = 0.0
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            torch.mm(a, b)
        best = max(best, 2 * m * k * n * reps / (time.perf_counter() - t0) / 1e9)
    print(f"gemm_gflops {m}x{k}x{n} {best:.1f}")
