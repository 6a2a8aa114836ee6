#!/usr/bin/env python3
"""FLOPs of one training step and one inference batch of each engine benchmark model, counted by
PyTorch's FlopCounterMode on the benchmarks' own PyTorch mirrors (the same models, sizes and
batches as the Luminome bench examples). Convention: FlopCounterMode's — matrix products,
convolutions and attention's products, 2 FLOPs per multiply-add, backward included; element-wise
ops, normalisation, softmax and the optimiser are not counted. The selective scan is element-wise
too, so it is added by hand (scan_flops below, stated per state element). Prints one TSV line
per workload: workload, train FLOPs, inference FLOPs, scan's share of each.

    python3 bench/roofline/flops.py            # from the repository root, torch installed
"""
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for sub in ("engine", "expression", "bistrand", "dual"):
    sys.path.insert(0, os.path.join(ROOT, sub))


def count(fn):
    """FLOPs of `fn`. A convolution's backward is counted as twice its forward (the gradients of
    input and weights): FlopCounterMode's own count ignores `groups` there, so a depthwise
    convolution's backward came out 130x its forward (torch 2.15)."""
    mode = FlopCounterMode(display=False)
    with mode:
        fn()
    by_op = {str(k): v for k, v in mode.get_flop_counts()["Global"].items()}
    if "aten.convolution_backward" in by_op:
        by_op["aten.convolution_backward"] = 2 * by_op.get("aten.convolution", 0)
    return sum(by_op.values())


def step_and_batch(model, forward, loss):
    """(FLOPs of forward + backward in train mode, FLOPs of a forward in eval mode)."""
    model.train()

    def train():
        loss(forward()).backward()

    trained = count(train)
    model.eval()
    with torch.no_grad():
        inferred = count(forward)
    return trained, inferred


def classifier(backbone):
    from torch_model import Classifier, cnn_config, model_config

    b, l = 32, 72
    cfg = cnn_config("mean") if backbone == "cnn" else model_config("gated", max_length=l)
    model = Classifier(cfg)
    ids = torch.tensor([[1 if j == 0 else 5 + ((i * l + j) * 7 % 4) for j in range(l)] for i in range(b)])
    mask = torch.ones(b, l)
    targets = torch.tensor([i % 2 for i in range(b)])
    return step_and_batch(model, lambda: model(ids, mask)[0], lambda y: F.cross_entropy(y, targets))


def expression():
    from torch_expression import ExpressionModel, region_positions

    b, n, f, d = 16, 200, 283, 128
    encoder = dict(n_features=f, d_model=d, num_layers=4, num_heads=4, ffn_dim=256, dropout=0.0,
                   max_regions=n, position="tss-relative", layer_norm_eps=1e-5)
    model = ExpressionModel(encoder, {"type": "attention-pool", "mlp_hidden": d}, "poisson")
    x, targets, mask = torch.rand(b, n, f), torch.rand(b) * 5.0, torch.ones(b, n)
    tss = torch.full((b,), n // 2, dtype=torch.long)
    offsets, slots, _ = region_positions(mask, tss, tss, torch.ones(b, dtype=torch.int8), n)
    return step_and_batch(model, lambda: model(x, mask, offsets, slots)[0],
                          lambda y: model.loss(y, targets))


def scan_flops(b, l, e, n):
    """One selective scan (one direction) forward: per state element Δ·A, its exp, Δ·B·u, the
    state update (a multiply-add) and C·h (a multiply-add): 7 FLOPs, the exp counted as one;
    backward twice that (the adjoint recurrence and the gradients of Δ, A, B, C, u)."""
    forward = 7 * b * l * e * n
    return forward, 2 * forward


def bistrand(d=64, layers=2, l=256, b=8, d_state=16, expand=2):
    import torch_bistrand
    from torch_bistrand import BiStrandModel, random_batch

    # The scan is replaced by an element-wise stand-in that FlopCounterMode counts as nothing and
    # that keeps every input's gradient path (so x_proj's and dt_proj's backward are counted);
    # the scan itself is added by scan_flops. (The vectorised peer's own scan has a few matrix
    # products, C·h and three in its backward, which FlopCounterMode would count partially.)
    def uncounted(u, delta, a, bm, cm, dd):
        return u * dd[:, None] + delta * u + (bm.sum(1, keepdim=True) + cm.sum(1, keepdim=True)) * u + a.sum() * 0

    torch_bistrand.SCANS["uncounted"] = uncounted
    model = BiStrandModel(d, layers, scan="uncounted")
    ids_a, ids_b, mask, positions, t_a, t_b = random_batch(b, l)
    trained, inferred = step_and_batch(
        model, lambda: model(ids_a, ids_b, mask, positions),
        lambda y: F.cross_entropy(y[0], t_a) + F.cross_entropy(y[1], t_b))
    fwd, bwd = scan_flops(b, l, expand * d, d_state)
    scans = 2 * layers * 2  # strands × layers × directions
    return trained + scans * (fwd + bwd), inferred + scans * fwd, scans * (fwd + bwd), scans * fwd


def dual():
    import torch_dual

    b, ql, pl = 32, 122, 497
    enc = {"vocab_size": 4101, "d_model": 64, "num_layers": 1, "num_heads": 4, "ffn_dim": 256,
           "dropout": 0.1, "max_length": pl, "position": "learned", "layer_norm_eps": 1e-5,
           "attention": "standard"}
    model = torch_dual.DualEncoder({"encoder": enc, "shared": True, "temperature": 0.05})

    def ids(length, salt):
        return torch.tensor([[1 if j == 0 else 2 if j == length - 1 else 5 + (i * 131 + j * 17 + salt) % 4096
                              for j in range(length)] for i in range(b)])

    q, p = ids(ql, 0), ids(pl, 7)
    qm, pm = torch.ones(b, ql), torch.ones(b, pl)
    model.train()
    trained = count(lambda: model.loss(q, qm, p, pm).backward())
    model.eval()
    with torch.no_grad():
        # Inference: embedding the passages (the corpus side), as bench_dual times it.
        inferred = count(lambda: model.embed("passage", p, pm))
    return trained, inferred


def main():
    torch.manual_seed(1)
    rows = [("transformer (d128 x 4, L72, B32)",) + classifier("transformer") + (0, 0),
            ("dilated CNN (128 ch, 7 blocks, L72, B32)",) + classifier("cnn") + (0, 0),
            ("expression (d128 x 4, N200, F283, B16)",) + expression() + (0, 0),
            ("bi-strand (d64 x 2, L256, B8)",) + bistrand(),
            ("dual encoder (d64 x 1, 122 + 497 tokens, B32)",) + dual() + (0, 0)]
    print("workload\ttrain_flops\tinference_flops\tscan_train_flops\tscan_inference_flops")
    for name, t, i, st, si in rows:
        print(f"{name}\t{t}\t{i}\t{st}\t{si}")


if __name__ == "__main__":
    main()
