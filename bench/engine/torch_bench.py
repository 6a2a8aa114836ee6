#!/usr/bin/env python3
"""PyTorch side of the engine benchmark (docs/benchmarks.md, "Training and inference (engine)").

The model and inputs mirror tools/luminome-engine/examples/bench_step.rs: vocab 10, d_model 128,
4 layers, 4 heads, FFN 512, max length 72, batch 32, learned positions, pre-LN, DynamicGated
adapter, dropout 0.1; the same token pattern ([CLS] then A/C/G/T), no padding, labels i % 2.
Dropout as the engine applies it: on the embeddings, the attention probabilities (SDPA's
dropout_p), the FFN's hidden layer and both residual branches; --no-attention-dropout leaves the
attention probabilities alone (SDPA's fused kernel; not the engine's model, reported apart).
A training step = forward (train mode, dropout on) + cross-entropy + backward + gradient-norm
clipping at 1.0 + AdamW step (lr 1e-4, weight decay 0.01); inference = forward in eval mode under
torch.inference_mode(). Three warm-up iterations, then the median of --steps.

    python3 bench/engine/torch_bench.py --threads 1 --steps 20
    python3 bench/engine/torch_bench.py --threads 1 --steps 20 --backbone cnn
    python3 bench/engine/torch_bench.py --device cuda --precision bf16     # a GPU (run_gpu.sh)

Sizes from the environment, as bench_step.rs reads them (transformer): BENCH_D, BENCH_LAYERS,
BENCH_HEADS, BENCH_FFN, BENCH_LEN, BENCH_BATCH (defaults: the model above).

--backbone cnn: the dilated residual CNN (128 channels, first kernel 15, 7 blocks of kernel 3 with
dilations 1..64), mean adapter, same batch and tokens.
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_model import Classifier, cnn_config, model_config  # noqa: E402

def env(name, default):
    return int(os.environ.get(name, default))


B, L = env("BENCH_BATCH", 32), env("BENCH_LEN", 72)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--no-attention-dropout", action="store_true",
                    help="no dropout on the attention probabilities (the Rust engine has it): "
                         "SDPA then runs its fused CPU kernel; a cheaper model than Luminome's")
    ap.add_argument("--backbone", choices=["transformer", "cnn"], default="transformer")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (bench/gpu/run_gpu.sh)")
    ap.add_argument("--precision", choices=["f32", "bf16"], default="f32",
                    help="bf16: autocast to bfloat16 (CUDA), weights and optimiser in f32")
    a = ap.parse_args()
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    autocast = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.precision == "bf16")
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    if a.backbone == "cnn":
        model = Classifier(cnn_config("mean", dropout=a.dropout))
    else:
        model = Classifier(model_config(
            "gated", d_model=env("BENCH_D", 128), num_layers=env("BENCH_LAYERS", 4),
            num_heads=env("BENCH_HEADS", 4), ffn_dim=env("BENCH_FFN", 512), max_length=L,
            dropout=a.dropout))
    if a.no_attention_dropout and a.backbone != "cnn":
        for layer in model.encoder.layers:
            layer.attn.dropout = 0.0
    model = model.to(dev)
    ids = torch.tensor([[1 if j == 0 else 5 + ((i * L + j) * 7 % 4) for j in range(L)] for i in range(B)])
    ids = ids.to(dev)
    mask = torch.ones(B, L, device=dev)
    targets = torch.tensor([i % 2 for i in range(B)], device=dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)

    model.train()
    times = []
    for step in range(a.steps + 3):
        t0 = time.perf_counter()
        with autocast:
            logits, _ = model(ids, mask)
            loss = torch.nn.functional.cross_entropy(logits.float(), targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sync()
        if step >= 3:
            times.append(time.perf_counter() - t0)
    train_ms = statistics.median(times) * 1e3

    model.eval()
    inf = []
    with torch.inference_mode():
        for _ in range(a.steps + 3):
            t0 = time.perf_counter()
            with autocast:
                logits, _ = model(ids, mask)
            logits.tolist()
            inf.append(time.perf_counter() - t0)
    inf_ms = statistics.median(inf[3:]) * 1e3
    variant = " no-attention-dropout" if a.no_attention_dropout else ""
    print(f"torch {torch.__version__} threads {a.threads} backbone {a.backbone} device {a.device} {a.precision}{variant}")
    print(f"train_step_ms median {train_ms:.1f}")
    print(f"inference_batch_ms median {inf_ms:.1f} ({B / inf_ms * 1e3:.0f} sequences/s)")


if __name__ == "__main__":
    main()
