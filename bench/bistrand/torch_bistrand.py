#!/usr/bin/env python3
"""The bi-strand benchmark model in PyTorch, for timing against luminome's (docs/benchmarks.md).

Same architecture, sizes and step as tools/luminome-engine/examples/bench_bistrand.rs: per strand
an embedding, `layers` pre-norm bidirectional Mamba layers (in_proj shared by the two directions;
per direction a causal depthwise convolution, x_proj, dt_proj, A_log, D and a selective scan; the
reverse direction runs on the flipped sequence, as in Caduceus' BiMamba; out_proj shared) and a
final LayerNorm; cross-attention A<->B; fusion GELU([H; H_cross] W + b) and a 4-way LM head at the
masked positions only; loss L_a + L_b; clip the gradient norm to 1; AdamW. Untied strands, random
bases, 15 % of positions masked on both strands.

The scan (`--scan`):
  vectorised  (default, the timing peer) the recurrence h_t = exp(Δ_t A) h_{t-1} + Δ_t B_t u_t for
              all positions at once: a work-efficient parallel prefix scan of the affine maps
              h -> a h + b over the whole length in tensor ops (odd-even reduction, the recursive
              form of Blelloch's scan: log2 L levels, O(L) work; products of decays in (0, 1], so
              nothing overflows) on [batch, position, channel, state] tensors, in a
              torch.autograd.Function whose backward is the adjoint recurrence
              g_t = C_t dy_t + exp(Δ_{t+1} A) g_{t+1}, run as the same prefix scan in reverse;
              the states h are kept from the forward pass.
  ref         `selective_scan_ref` of mamba_ssm (mamba_ssm/ops/selective_scan_interface.py, Apache
              2.0), rewritten here without its unused options: a loop over positions with einsum,
              the pure PyTorch path that Mamba/Caduceus code runs where the CUDA kernels are
              missing; autograd differentiates the loop. Kept as the correctness reference.
`--check-scan` compares the two: the scan alone (loss and the gradients of u, Δ, A, B, C, D) and the
whole model (loss and every parameter's gradient), in float32 and float64, and prints the largest
differences. Cross-attention uses torch's scaled_dot_product_attention (its fastest CPU path).

    python bench/bistrand/torch_bistrand.py [steps] [d_model] [layers] [length] [batch] [--threads N] [--scan vectorised|ref]
    python bench/bistrand/torch_bistrand.py --check-scan
    python bench/bistrand/torch_bistrand.py --verify CHECKPOINT SNV_DATASET SCORES_TSV

Prints lines like the Rust example's: parameters, median train step (forward, backward) in ms,
then the median inference batch; each also with the median process CPU time (all threads) of a
step, which the Rust example does not print. Needs torch (not installed in CI).
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


def _prefix_scan(a, b, reverse=False):
    """h_t = a_t h_{t-1} + b_t (h_{-1} = 0) along dimension 1, all t at once; `reverse`: h_t = a_t
    h_{t+1} + b_t from the last position down. Work-efficient parallel prefix (odd-even reduction,
    the recursive form of Blelloch's scan): compose the maps of neighbouring pairs, scan the half-
    length sequence of pairs, then fill in the other half; log2(L) levels, O(L) work. The products
    of decays stay in (0, 1], so nothing overflows."""
    length = a.shape[1]
    if length == 1:
        return b
    if length % 2:  # odd: scan all but the position the recurrence reaches last, then that one
        if reverse:
            h = _prefix_scan(a[:, 1:], b[:, 1:], reverse)
            return torch.cat([torch.addcmul(b[:, :1], a[:, :1], h[:, :1]), h], 1)
        h = _prefix_scan(a[:, :-1], b[:, :-1], reverse)
        return torch.cat([h, torch.addcmul(b[:, -1:], a[:, -1:], h[:, -1:])], 1)
    # the pair (2i, 2i+1) read in the recurrence's order: `first` then `second`
    (a1, b1), (a2, b2) = (a[:, 0::2], b[:, 0::2]), (a[:, 1::2], b[:, 1::2])
    if reverse:
        (a1, b1), (a2, b2) = (a2, b2), (a1, b1)
    h2 = _prefix_scan(a2 * a1, torch.addcmul(b2, a2, b1), reverse)  # h at each pair's second
    h = torch.empty_like(b)
    first, second = (slice(1, None, 2), slice(0, None, 2)) if reverse else (slice(0, None, 2), slice(1, None, 2))
    h[:, second] = h2
    # h at each pair's first = a h(the previous pair's second) + b; the first pair has no previous
    if reverse:
        h[:, -1] = b1[:, -1]
        h[:, first][:, :-1] = torch.addcmul(b1[:, :-1], a1[:, :-1], h2[:, 1:])
    else:
        h[:, 0] = b1[:, 0]
        h[:, first][:, 1:] = torch.addcmul(b1[:, 1:], a1[:, 1:], h2[:, :-1])
    return h


class SelectiveScanFn(torch.autograd.Function):
    """The selective scan as a parallel prefix with its own backward (the reverse scan), on
    [batch, position, channel, state] tensors."""

    @staticmethod
    def forward(ctx, u, delta, A, B, C, D):
        # u, delta [B, L, E]; A [E, N]; B, C [B, L, N]; D [E]
        decay = torch.exp(delta[..., None] * A)  # [B, L, E, N]
        h = _prefix_scan(decay, (delta * u)[..., None] * B[:, :, None, :])
        y = torch.matmul(h, C[..., None]).squeeze(-1) + u * D
        ctx.save_for_backward(u, delta, A, B, C, D, h)
        return y

    @staticmethod
    def backward(ctx, dy):
        u, delta, A, B, C, D, h = ctx.saved_tensors
        dy = dy.contiguous()
        decay = torch.exp(delta[..., None] * A)
        # adjoint: g_t = dL/dh_t = C_t dy_t + exp(Δ_{t+1} A) g_{t+1}
        next_decay = torch.cat([decay[:, 1:], torch.zeros_like(decay[:, :1])], 1)
        g = _prefix_scan(next_decay, dy[..., None] * C[:, :, None, :], reverse=True)
        d_log = torch.zeros_like(g)  # dL/d(Δ_t A) = g_t h_{t-1} exp(Δ_t A); h_{-1} = 0
        torch.mul(g[:, 1:], h[:, :-1], out=d_log[:, 1:]).mul_(decay[:, 1:])
        g_b = torch.matmul(g, B[..., None]).squeeze(-1)  # Σ_n g_t B_t  [B, L, E]
        d_delta = (d_log * A).sum(-1) + g_b * u
        d_A = (d_log * delta[..., None]).sum((0, 1))
        d_B = torch.matmul((delta * u)[:, :, None, :], g).squeeze(2)
        d_C = torch.matmul(dy[:, :, None, :], h).squeeze(2)
        d_u = g_b * delta + dy * D
        d_D = (dy * u).sum((0, 1))
        return d_u, d_delta, d_A, d_B, d_C, d_D


def selective_scan_vectorised(u, delta, A, B, C, D):
    """Same signature and result as selective_scan_ref, without a Python loop over positions."""
    t = lambda x: x.transpose(1, 2).contiguous()  # positions to dimension 1 (free for the model's Δ, B, C)
    return SelectiveScanFn.apply(t(u), t(delta), A, t(B), t(C), D).transpose(1, 2)


SCANS = {"ref": selective_scan_ref, "vectorised": selective_scan_vectorised}


class SsmDirection(nn.Module):
    def __init__(self, e, d_state, dt_rank, d_conv, scan="vectorised"):
        super().__init__()
        self.scan = SCANS[scan]
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
        y = self.scan(xs, delta, -torch.exp(self.a_log), bm, cm, self.d)
        return y.transpose(1, 2)  # [B, L, E]


class BiMambaMixer(nn.Module):
    def __init__(self, d, e, d_state, dt_rank, d_conv, scan):
        super().__init__()
        self.in_proj = nn.Linear(d, 2 * e)
        self.fwd = SsmDirection(e, d_state, dt_rank, d_conv, scan)
        self.rev = SsmDirection(e, d_state, dt_rank, d_conv, scan)
        self.out_proj = nn.Linear(e, d)
        self.e = e

    def forward(self, u, keep):
        x, z = self.in_proj(u).split(self.e, dim=-1)
        x = x * keep
        y_fwd = self.fwd(x, keep)
        y_rev = self.rev(x.flip(1), keep.flip(1)).flip(1)
        return self.out_proj((y_fwd + y_rev) * F.silu(z))


class MambaLayer(nn.Module):
    def __init__(self, d, e, d_state, dt_rank, d_conv, scan):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.mixer = BiMambaMixer(d, e, d_state, dt_rank, d_conv, scan)

    def forward(self, u, keep):
        return u + self.mixer(self.norm(u), keep)


class StrandEncoder(nn.Module):
    def __init__(self, vocab, d, layers, e, d_state, dt_rank, d_conv, scan):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(MambaLayer(d, e, d_state, dt_rank, d_conv, scan) for _ in range(layers))
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

    def __init__(
        self, d, layers, d_state=16, expand=2, d_conv=4, heads=4, vocab=10, dt_rank=None, scan="vectorised"
    ):
        super().__init__()
        e, dt_rank = expand * d, dt_rank or math.ceil(d / 16)
        self.strand_a = StrandEncoder(vocab, d, layers, e, d_state, dt_rank, d_conv, scan)
        self.strand_b = StrandEncoder(vocab, d, layers, e, d_state, dt_rank, d_conv, scan)
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


def random_batch(b, l):
    """Random bases on strand A, their complement on B, 15 % of positions masked on both."""
    a = 5 + torch.randint(0, 4, (b, l))
    comp = 13 - a  # A C G T = 5 6 7 8: the complement of id x is 13 - x
    masked = torch.rand(b, l) < 0.15
    positions = masked.flatten().nonzero().squeeze(1)
    targets_a, targets_b = a.flatten()[positions] - 5, comp.flatten()[positions] - 5
    ids_a, ids_b = a.masked_fill(masked, 3), comp.masked_fill(masked, 3)
    return ids_a, ids_b, torch.ones(b, l), positions, targets_a, targets_b


def check_scan(tolerance=1e-5):
    """The vectorised scan against the reference on small random cases, in float32 and float64:
    the scan alone (loss = Σ w·y with random w; gradients of u, Δ, A, B, C, D) and the whole model
    (d 32 × 2, windows of 64, batch 2: the training loss and every parameter's gradient). Prints
    the loss's relative difference, the largest absolute difference of any gradient entry, and the
    largest relative one: per gradient tensor, its largest |difference| over its reference's largest
    magnitude (gradients under 1e-6 of the largest over all tensors, zero in exact arithmetic: the
    cross-attention key biases, are reported by their absolute difference alone); fails above
    `tolerance` (relative)."""
    worst = 0.0

    def report(what, dtype, ref_loss, vec_loss, grads):
        nonlocal worst
        rel_loss = abs(vec_loss - ref_loss) / abs(ref_loss)
        worst_abs = max(abs_diff for _, abs_diff, _, _ in grads)
        name, _, rel, _ = max((g for g in grads if not g[3]), key=lambda g: g[2])
        worst = max(worst, rel_loss, rel)
        zero = [g for g in grads if g[3]]
        floored = (
            f"; {len(zero)} gradients zero in exact arithmetic (max|reference| < 1e-6 of the largest): "
            f"largest |difference| {max(g[1] for g in zero):.1e}" if zero else ""
        )
        print(
            f"check-scan {what} {str(dtype)[6:]}: loss ref {ref_loss:.9g} vectorised {vec_loss:.9g} "
            f"(relative difference {rel_loss:.1e}); gradients: largest |difference| {worst_abs:.1e}, "
            f"largest |difference| / max|reference| {rel:.1e} ({name}){floored}"
        )

    def compare(pairs):
        floor = 1e-6 * max(ref.abs().max().item() for _, ref, _ in pairs)
        out = []
        for name, ref, vec in pairs:
            diff, scale = (vec - ref).abs().max().item(), ref.abs().max().item()
            out.append((name, diff, diff / scale if scale >= floor else 0.0, scale < floor))
        return out

    for dtype in (torch.float32, torch.float64):
        gen = torch.Generator().manual_seed(0)
        rand = lambda *shape: torch.randn(*shape, generator=gen, dtype=dtype)
        for b, e, n, l in ((2, 16, 16, 256), (2, 4, 16, 37)):  # 37: the scan's odd-length paths
            inputs = {
                "u": rand(b, e, l),
                "delta": F.softplus(rand(b, e, l)),
                "A": -torch.arange(1, n + 1, dtype=dtype).repeat(e, 1) * torch.exp(0.3 * rand(e, n)),
                "B": rand(b, n, l),
                "C": rand(b, n, l),
                "D": rand(e),
            }
            w = rand(b, e, l)
            losses, grads = {}, {}
            for scan in ("ref", "vectorised"):
                leaves = {k: v.clone().requires_grad_() for k, v in inputs.items()}
                loss = (SCANS[scan](*leaves.values()) * w).sum()
                loss.backward()
                losses[scan], grads[scan] = loss.item(), {k: v.grad for k, v in leaves.items()}
            report(f"scan L{l} (u, delta, A, B, C, D)", dtype, losses["ref"], losses["vectorised"],
                   compare([(k, grads["ref"][k], grads["vectorised"][k]) for k in inputs]))

        torch.manual_seed(1)
        models = {scan: BiStrandModel(32, 2, scan=scan).to(dtype) for scan in ("ref", "vectorised")}
        models["vectorised"].load_state_dict(models["ref"].state_dict())
        ids_a, ids_b, mask, positions, targets_a, targets_b = random_batch(2, 64)
        for scan, model in models.items():
            logits_a, logits_b = model(ids_a, ids_b, mask.to(dtype), positions)
            loss = F.cross_entropy(logits_a, targets_a) + F.cross_entropy(logits_b, targets_b)
            loss.backward()
            losses[scan] = loss.item()
        params = {scan: dict(model.named_parameters()) for scan, model in models.items()}
        report(f"model ({len(params['ref'])} parameter tensors)", dtype, losses["ref"], losses["vectorised"],
               compare([(k, p.grad, params["vectorised"][k].grad) for k, p in params["ref"].items()]))
    assert worst < tolerance, f"the vectorised scan differs from the reference by {worst:.1e}"
    print(f"check-scan passed (largest relative difference {worst:.1e} < {tolerance:.0e})")


def verify(checkpoint, dataset, scores, scan="vectorised"):
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
        cfg["cross_heads"], cfg["vocab_size"], cfg["dt_rank"], scan,
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
    parser.add_argument("--scan", choices=sorted(SCANS), default="vectorised", help="selective scan (see above)")
    parser.add_argument(
        "--check-scan", action="store_true", help="compare the vectorised scan with the reference scan and exit"
    )
    parser.add_argument(
        "--verify", nargs=3, metavar=("CHECKPOINT", "DATASET", "SCORES_TSV"),
        help="check this model against luminome's on a variant dataset instead of timing",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.check_scan:
        check_scan()
        return
    if args.verify:
        verify(*args.verify, scan=args.scan)
        return
    torch.manual_seed(7)
    b, l = args.batch, args.length

    model = BiStrandModel(args.d_model, args.layers, scan=args.scan)
    params = sum(p.numel() for p in model.parameters())
    ids_a, ids_b, mask, positions, targets_a, targets_b = random_batch(b, l)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "a_log" not in n]
    other = [p for n, p in model.named_parameters() if p.dim() < 2 or "a_log" in n]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": other, "weight_decay": 0.0}], lr=1e-4
    )

    fwd, bwd, total, cpu = [], [], [], []
    for step in range(args.steps + 2):
        t0, c0 = time.perf_counter(), time.process_time()
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
            cpu.append(time.process_time() - c0)
    ms = lambda v: statistics.median(v) * 1e3
    print(
        f"torch bistrand scan={args.scan} d{args.d_model} x{args.layers} L{l} B{b} ({params} parameters): "
        f"train_step_ms median {ms(total):.1f} (forward {ms(fwd):.1f}, backward {ms(bwd):.1f}; "
        f"process CPU {ms(cpu):.1f})"
    )
    inference, inference_cpu = [], []
    with torch.no_grad():
        for _ in range(args.steps + 2):
            t0, c0 = time.perf_counter(), time.process_time()
            model(ids_a, ids_b, mask, positions)[0].numpy()
            inference.append(time.perf_counter() - t0)
            inference_cpu.append(time.process_time() - c0)
    print(
        f"inference_batch_ms median {ms(inference):.1f} ({b / statistics.median(inference):.0f} windows/s; "
        f"process CPU {ms(inference_cpu):.1f})"
    )


if __name__ == "__main__":
    main()
