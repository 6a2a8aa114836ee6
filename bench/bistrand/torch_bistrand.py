#!/usr/bin/env python3
"""The bi-strand benchmark model in PyTorch, for timing against luminome's (docs/benchmarks.md).

Same architecture, sizes and step as tools/luminome-engine/examples/bench_bistrand.rs: per strand
an embedding, `layers` pre-norm bidirectional Mamba layers (in_proj shared by the two directions;
per direction a causal depthwise convolution, x_proj, dt_proj, A_log, D and a selective scan; the
reverse direction runs on the flipped sequence, as in Caduceus' BiMamba; out_proj shared) and a
final LayerNorm; cross-attention A<->B; fusion GELU([H; H_cross] W + b) and a 4-way LM head at the
masked positions only; loss L_a + L_b; clip the gradient norm to 1; AdamW. Untied strands, random
bases, 15 % of positions masked on both strands.

The scan is `selective_scan_ref` of mamba_ssm (mamba_ssm/ops/selective_scan_interface.py, Apache
2.0), rewritten here without its unused options: a loop over positions with einsum, the pure
PyTorch path that Mamba/Caduceus code runs where the CUDA kernels are missing. Cross-attention
uses torch's scaled_dot_product_attention (its fastest CPU path).

    python bench/bistrand/torch_bistrand.py [steps] [d_model] [layers] [length] [batch] [--threads N]
    python bench/bistrand/torch_bistrand.py --verify CHECKPOINT SNV_DATASET SCORES_TSV

Prints one line like the Rust example: parameters, median train step (forward, backward) in ms,
then the median inference batch. Needs torch (not installed in CI).
"""

import argparse
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn


def selective_scan_ref(u, delta, A, B, C, D):
    """u, delta [B, E, L]; A [E, N]; B, C [B, N, L]; D [E] -> y [B, E, L] (mamba_ssm's reference)."""
    batch, dim, length = u.shape
    dstate = A.shape[1]
    deltaA = torch.exp(torch.einsum("bdl,dn->bdln", delta, A))
    deltaB_u = torch.einsum("bdl,bnl,bdl->bdln", delta, B, u)
    x = A.new_zeros((batch, dim, dstate))
    ys = []
    for i in range(length):
        x = deltaA[:, :, i] * x + deltaB_u[:, :, i]
        ys.append(torch.einsum("bdn,bn->bd", x, C[:, :, i]))
    y = torch.stack(ys, dim=2)
    return y + u * D[:, None]


class SsmDirection(nn.Module):
    def __init__(self, e, d_state, dt_rank, d_conv):
        super().__init__()
        self.conv = nn.Conv1d(e, e, d_conv, groups=e, padding=d_conv - 1)
        self.x_proj = nn.Linear(e, dt_rank + 2 * d_state)
        self.dt_proj = nn.Linear(dt_rank, e)
        self.a_log = nn.Parameter(torch.log(torch.arange(1, d_state + 1).float()).repeat(e, 1))
        self.d = nn.Parameter(torch.ones(e))
        self.dt_rank, self.d_state = dt_rank, d_state

    def forward(self, x, keep):
        """x [B, L, E] (zero at padding, already flipped for the reverse direction)."""
        length = x.shape[1]
        xs = F.silu(self.conv(x.transpose(1, 2))[..., :length]) * keep.transpose(1, 2)  # [B, E, L]
        proj = self.x_proj(xs.transpose(1, 2))  # [B, L, R + 2N]
        r, n = self.dt_rank, self.d_state
        delta = F.softplus(self.dt_proj(proj[..., :r])).transpose(1, 2)
        bm = proj[..., r : r + n].transpose(1, 2)
        cm = proj[..., r + n :].transpose(1, 2)
        y = selective_scan_ref(xs, delta, -torch.exp(self.a_log), bm, cm, self.d)
        return y.transpose(1, 2)  # [B, L, E]


class BiMambaMixer(nn.Module):
    def __init__(self, d, e, d_state, dt_rank, d_conv):
        super().__init__()
        self.in_proj = nn.Linear(d, 2 * e)
        self.fwd = SsmDirection(e, d_state, dt_rank, d_conv)
        self.rev = SsmDirection(e, d_state, dt_rank, d_conv)
        self.out_proj = nn.Linear(e, d)
        self.e = e

    def forward(self, u, keep):
        x, z = self.in_proj(u).split(self.e, dim=-1)
        x = x * keep
        y_fwd = self.fwd(x, keep)
        y_rev = self.rev(x.flip(1), keep.flip(1)).flip(1)
        return self.out_proj((y_fwd + y_rev) * F.silu(z))


class MambaLayer(nn.Module):
    def __init__(self, d, e, d_state, dt_rank, d_conv):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.mixer = BiMambaMixer(d, e, d_state, dt_rank, d_conv)

    def forward(self, u, keep):
        return u + self.mixer(self.norm(u), keep)


class StrandEncoder(nn.Module):
    def __init__(self, vocab, d, layers, e, d_state, dt_rank, d_conv):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(MambaLayer(d, e, d_state, dt_rank, d_conv) for _ in range(layers))
        self.final_norm = nn.LayerNorm(d)

    def forward(self, ids, keep):
        h = self.embed(ids)
        for layer in self.layers:
            h = layer(h, keep)
        return self.final_norm(h)


class CrossAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.q, self.k, self.v, self.out = (nn.Linear(d, d) for _ in range(4))
        self.heads = heads

    def forward(self, query, context, context_mask):
        b, l, d = query.shape
        split = lambda x: x.view(b, l, self.heads, d // self.heads).transpose(1, 2)
        bias = (1.0 - context_mask)[:, None, None, :] * -1e9
        ctx = F.scaled_dot_product_attention(
            split(self.q(query)), split(self.k(context)), split(self.v(context)), attn_mask=bias
        )
        return self.out(ctx.transpose(1, 2).reshape(b, l, d))


class BiStrandModel(nn.Module):
    """Parameter names as luminome's checkpoints (untied strands, with cross-attention)."""

    def __init__(self, d, layers, d_state=16, expand=2, d_conv=4, heads=4, vocab=10, dt_rank=None):
        super().__init__()
        e, dt_rank = expand * d, dt_rank or math.ceil(d / 16)
        self.strand_a = StrandEncoder(vocab, d, layers, e, d_state, dt_rank, d_conv)
        self.strand_b = StrandEncoder(vocab, d, layers, e, d_state, dt_rank, d_conv)
        self.cross_ab, self.cross_ba = CrossAttention(d, heads), CrossAttention(d, heads)
        self.fuse_a, self.fuse_b = nn.Linear(2 * d, d), nn.Linear(2 * d, d)
        self.head_a, self.head_b = nn.Linear(d, 4), nn.Linear(d, 4)

    def forward(self, ids_a, ids_b, mask, positions):
        keep = mask[..., None]
        h_a, h_b = self.strand_a(ids_a, keep), self.strand_b(ids_b, keep)

        def side(cross, fuse, head, own, other):
            x = torch.cat([own, cross(own, other, mask)], dim=-1)
            rows = x.reshape(-1, x.shape[-1])[positions]
            return head(F.gelu(fuse(rows)))

        return (
            side(self.cross_ab, self.fuse_a, self.head_a, h_a, h_b),
            side(self.cross_ba, self.fuse_b, self.head_b, h_b, h_a),
        )


def verify(checkpoint, dataset, scores):
    """Loads a luminome bistrand checkpoint into this model, scores the variant windows of a
    luminome-mask-pairs --variants dataset, and compares LLR_A and LLR_B with luminome-predict's
    TSV: the two implementations are the same model when they agree."""
    import csv
    import json

    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(checkpoint, "pt") as handle:
        meta = json.loads(handle.metadata()["luminome"])
    cfg = meta["model"]
    assert cfg["cross_attention"] and not cfg["tie_strands"], "verify covers untied strands with cross-attention"
    model = BiStrandModel(
        cfg["d_model"], cfg["num_layers"], cfg["d_state"], cfg["expand"], cfg["d_conv"],
        cfg["cross_heads"], cfg["vocab_size"], cfg["dt_rank"],
    )
    weights = load_file(checkpoint)
    state = model.state_dict()
    for name, value in weights.items():
        state[name].copy_(value.reshape(state[name].shape))  # conv [E, K] -> [E, 1, K]
    assert set(weights) == set(state), set(weights) ^ set(state)

    data = load_file(dataset)
    ids_a, ids_b = data["ids_a"].long(), data["ids_b"].long()
    mask = data["attention_mask"].float()
    positions = data["mask_positions"].flatten().nonzero().squeeze(1)
    assert len(positions) == ids_a.shape[0], "one masked site per variant window"
    with torch.no_grad():
        lp_a, lp_b = (F.log_softmax(x.double(), dim=-1) for x in model(ids_a, ids_b, mask, positions))
    with open(scores, newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    classes = {b: i for i, b in enumerate("ACGT")}
    worst = 0.0
    for row in rows:
        r, ref, alt = int(row["record"]), classes[row["ref"]], classes[row["alt"]]
        ours = (lp_a[r, alt] - lp_a[r, ref]).item(), (lp_b[r, 3 - alt] - lp_b[r, 3 - ref]).item()
        theirs = float(row["llr_a"]), float(row["llr_b"])
        worst = max(worst, *(abs(x - y) for x, y in zip(ours, theirs)))
    print(f"verify: {len(rows)} variants, largest |LLR difference| {worst:.2e}")
    assert worst < 1e-3, "the PyTorch model and luminome's disagree"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in (("steps", 10), ("d_model", 128), ("layers", 2), ("length", 512), ("batch", 8)):
        parser.add_argument(name, type=int, nargs="?", default=default)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--verify", nargs=3, metavar=("CHECKPOINT", "DATASET", "SCORES_TSV"),
        help="check this model against luminome's on a variant dataset instead of timing",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.verify:
        verify(*args.verify)
        return
    torch.manual_seed(7)
    b, l = args.batch, args.length

    model = BiStrandModel(args.d_model, args.layers)
    params = sum(p.numel() for p in model.parameters())
    a = 5 + torch.randint(0, 4, (b, l))
    comp = 13 - a  # A C G T = 5 6 7 8: the complement of id x is 13 - x
    masked = torch.rand(b, l) < 0.15
    positions = masked.flatten().nonzero().squeeze(1)
    targets_a, targets_b = a.flatten()[positions] - 5, comp.flatten()[positions] - 5
    ids_a, ids_b = a.masked_fill(masked, 3), comp.masked_fill(masked, 3)
    mask = torch.ones(b, l)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "a_log" not in n]
    other = [p for n, p in model.named_parameters() if p.dim() < 2 or "a_log" in n]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": other, "weight_decay": 0.0}], lr=1e-4
    )

    fwd, bwd, total = [], [], []
    for step in range(args.steps + 2):
        t0 = time.perf_counter()
        logits_a, logits_b = model(ids_a, ids_b, mask, positions)
        loss = F.cross_entropy(logits_a, targets_a) + F.cross_entropy(logits_b, targets_b)
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step >= 2:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
            total.append(time.perf_counter() - t0)
    ms = lambda v: statistics.median(v) * 1e3
    print(
        f"torch bistrand d{args.d_model} x{args.layers} L{l} B{b} ({params} parameters): "
        f"train_step_ms median {ms(total):.1f} (forward {ms(fwd):.1f}, backward {ms(bwd):.1f})"
    )
    inference = []
    with torch.no_grad():
        for _ in range(args.steps + 2):
            t0 = time.perf_counter()
            model(ids_a, ids_b, mask, positions)[0].numpy()
            inference.append(time.perf_counter() - t0)
    print(f"inference_batch_ms median {ms(inference):.1f} ({b / statistics.median(inference):.0f} windows/s)")


if __name__ == "__main__":
    main()
