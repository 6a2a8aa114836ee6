#!/usr/bin/env python3
"""The region expression transformer in PyTorch: proof that luminome's matches it, and the PyTorch
side of the speed comparison (tools/luminome-engine/examples/bench_expression.rs).

The model, with parameter names equal to the safetensors names of a `luminome-train expression`
checkpoint (so `load_state_dict(strict=True)` takes one unchanged):

- encoder (tools/luminome-engine/src/models/region/encoder.rs, RegionEncoder):
  x~ = (x - input_mean) * input_scale (buffers `encoder.region_emb.input_mean` / `input_scale`:
  the training set's per-feature mean and 1/std, stored, never trained); h = x~ W_emb
  (`encoder.region_emb.weight`, no bias, no activation); with `position: tss-relative`
  h += E[offset] (`encoder.tss_offset_emb.weight`, 2 * max_regions + 1 rows; offset = signed
  distance in regions from the TSS, upstream negative on the gene's strand, clamped to
  +-max_regions, +max_regions to index the table; models/region/batch.rs tss_offset); dropout.
- blocks (backbones/transformer/encoder.rs, EncoderStack): pre-LN, per layer
  x + Attn(LN1(x)), then + FFN(LN2(.)); LayerNorm eps from the config (1e-5), biased variance;
  attention with one fused `attn.qkv` (rows: q, k, v, each head-major), scores
  q k^T / sqrt(D/H) + (mask - 1) * 1e9 (nn/masking.rs MASK_BIAS: padded regions are never
  attended to), softmax, dropout, `attn.out`; FFN `ffn.up` -> exact (erf) GELU -> dropout ->
  `ffn.down`; `encoder.final_norm` after the last layer. No positions other than the optional
  TSS-relative embedding (no learned absolute positions, no rotary).
- heads (models/expression/model.rs):
  attention-pool: a_i = softmax_i(w . h_i + (m_i - 1) * 1e9) (`head.pool.weight`, no bias),
  z = sum_i a_i h_i, r = `head.mlp.down`(GELU_erf(`head.mlp.up`(z)));
  tss-region: r = `head.tss`(h_t) at the slot t that holds the TSS, or when no region holds it
  the first region after the TSS in genomic order, or the last region when the TSS follows
  them all (batch.rs read_slot).
  Prediction = softplus(r) for the Poisson loss (a rate, what luminome-predict writes in
  `predicted`), r itself for MSE.
- loss: Poisson mean(y^ - y ln(y^ + 1e-8)) (PyTorch's PoissonNLLLoss(log_input=False)) or MSE.

Usage:

    # 1. numerical check against luminome (threads 1; example files from test-data/chr22_slice)
    B=target/release; mkdir -p /tmp/e
    $B/luminome-regions --reference test-data/chr22_slice/chr22_slice.fa --bed-tss center \\
        --window 30000 --n-regions 24 --genes test-data/chr22_slice/genes_tss.bed \\
        --peaks test-data/chr22_slice/peaks.narrowPeak \\
        --accessibility K562=test-data/chr22_slice/acc.K562.bedgraph \\
        --accessibility GM12878=test-data/chr22_slice/acc.GM12878.bedgraph \\
        --expression K562=test-data/expression/k562_tpm_slice.tsv \\
        --expression GM12878=test-data/expression/gm12878_rampage_slice.tsv \\
        --motifs test-data/motifs/vierstra_small.meme \\
        --motif-clusters test-data/motifs/vierstra_small_clusters.csv --threads 1 \\
        -o /tmp/e/genes.safetensors
    $B/luminome-train expression --train /tmp/e/genes.safetensors --holdout genes --blocks 3 \\
        --d-model 32 --layers 2 --heads 4 --ffn 48 --head attention-pool --position tss-relative \\
        --batch-size 6 --steps 40 --warmup 5 --lr 3e-3 --eval-every 20 --threads 1 -o /tmp/e/run
    $B/luminome-predict --checkpoint /tmp/e/run/best.safetensors --dataset /tmp/e/genes.safetensors \\
        --threads 1 -o /tmp/e/run/preds.tsv
    python bench/expression/torch_expression.py --verify /tmp/e/run/best.safetensors \\
        /tmp/e/genes.safetensors /tmp/e/run/preds.tsv

    # 2. timing (the same model, batch and step as bench_expression.rs: every slot a region, the
    #    TSS at the middle slot, TSS-relative positions, no dropout, Poisson loss, clip 1, AdamW)
    python bench/expression/torch_expression.py --bench --batch-size 16 --d-model 128 --layers 4 \\
        --heads 4 --ffn 256 --head attention-pool --threads 1 --steps 10 --header
    # whole-process timing: build, run exactly K steps, exit
    /usr/bin/time python bench/expression/torch_expression.py --mode train --steps 20 --threads 1

--verify runs the model in float64 on every sample of DATASET, compares with the `predicted`
column of luminome-predict's TSV (rows by `record`; `NA` rows, samples without a region, must be
exactly those with no region) and prints the largest absolute and relative difference (relative
to max(|luminome|, 1e-3)); when the checkpoint stores a dev_loss and the TSV has a `split`
column (a --holdout run predicted on its own training dataset), it also recomputes the dev loss
from the dev rows. Exits 1 when a relative difference exceeds --tolerance (1e-4: on test-data
luminome's f32 forward came within 5e-6 of this float64 one, 2e-5 for a prediction near 0; the
tanh GELU in place of the exact one moves predictions by 1e-5 to 2e-4, anything else more).

--bench prints one TSV line (--header: the column names first): implementation, head, sizes,
threads, parameters (buffers included, as luminome counts them), then mean seconds per training
step (forward + loss + backward + clipping + AdamW) and per inference batch (forward under
no_grad) after --warmup steps, and samples/s of each. --mode train|infer runs only that part,
exactly --steps steps with no warmup (the other columns NA). Needs torch, numpy and safetensors
(not installed in CI).
"""

import argparse
import csv
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

MASK_BIAS = -1e9  # nn/masking.rs
POISSON_EPS = 1e-8  # models/expression/model.rs loss
INIT_STD = 0.02  # nn/init.rs


# --- the model ---------------------------------------------------------------------------------


class RegionEmb(nn.Module):
    """Standardisation (buffers) and the linear F -> D without bias or activation."""

    def __init__(self, n_features, d_model):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d_model, n_features))
        self.register_buffer("input_mean", torch.zeros(n_features))
        self.register_buffer("input_scale", torch.ones(n_features))

    def forward(self, x):
        return F.linear((x - self.input_mean) * self.input_scale, self.weight)


class SelfAttention(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.heads, self.dropout = heads, dropout

    def forward(self, x, bias):
        b, n, d = x.shape
        # [B, N, 3, H, Dh] -> [3, B, H, N, Dh], as attention.rs.
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        ctx = F.scaled_dot_product_attention(
            q, k, v, attn_mask=bias, dropout_p=self.dropout if self.training else 0.0
        )
        return self.out(ctx.transpose(1, 2).reshape(b, n, d))


class FeedForward(nn.Module):
    def __init__(self, d, ffn, dropout):
        super().__init__()
        self.up, self.down = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.down(self.drop(F.gelu(self.up(x), approximate="none")))


class EncoderLayer(nn.Module):
    """Pre-LN: x + Drop(Attn(LN1(x))), then + Drop(FFN(LN2(.)))."""

    def __init__(self, d, heads, ffn, dropout, eps):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.attn = SelfAttention(d, heads, dropout)
        self.ffn = FeedForward(d, ffn, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, bias):
        x = x + self.drop(self.attn(self.ln1(x), bias))
        return x + self.drop(self.ffn(self.ln2(x)))


class RegionEncoder(nn.Module):
    def __init__(self, n_features, d_model, num_layers, num_heads, ffn_dim, dropout, max_regions,
                 position, layer_norm_eps):
        super().__init__()
        assert position in ("none", "tss-relative"), position
        self.max_regions = max_regions
        self.region_emb = RegionEmb(n_features, d_model)
        if position == "tss-relative":
            self.tss_offset_emb = nn.Embedding(2 * max_regions + 1, d_model)
        else:
            self.tss_offset_emb = None
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, ffn_dim, dropout, layer_norm_eps)
            for _ in range(num_layers)
        )
        self.final_norm = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, offsets, bias):
        assert x.shape[1] <= self.max_regions, "more region slots than the model reads"
        h = self.region_emb(x)
        if self.tss_offset_emb is not None:
            h = h + self.tss_offset_emb(offsets)
        h = self.drop(h)
        for layer in self.layers:
            h = layer(h, bias)
        return self.final_norm(h)


class Mlp(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.up, self.down = nn.Linear(d, hidden), nn.Linear(hidden, 1)

    def forward(self, z):
        return self.down(F.gelu(self.up(z), approximate="none"))


class AttentionPoolHead(nn.Module):
    def __init__(self, d, mlp_hidden):
        super().__init__()
        self.pool = nn.Linear(d, 1, bias=False)
        self.mlp = Mlp(d, mlp_hidden)

    def forward(self, h, bias, read_slots):
        b, n, d = h.shape
        alpha = torch.softmax(self.pool(h).view(b, n) + bias.view(b, n), dim=-1)  # [B, N]
        z = torch.bmm(alpha.unsqueeze(1), h).view(b, d)
        return self.mlp(z).view(b), alpha


class TssRegionHead(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.tss = nn.Linear(d, 1)

    def forward(self, h, bias, read_slots):
        at = h[torch.arange(h.shape[0]), read_slots]  # [B, D]
        return self.tss(at).view(-1), None


class ExpressionModel(nn.Module):
    """Parameter names as luminome's expression checkpoints (`encoder.*`, `head.*`)."""

    def __init__(self, encoder, head, loss):
        super().__init__()
        self.encoder = RegionEncoder(**encoder)
        d = encoder["d_model"]
        if head["type"] == "attention-pool":
            self.head = AttentionPoolHead(d, head["mlp_hidden"])
        elif head["type"] == "tss-region":
            self.head = TssRegionHead(d)
        else:
            raise ValueError(f"unknown head {head['type']!r}")
        assert loss in ("poisson", "mse"), loss
        self.loss_kind = loss

    @classmethod
    def from_config(cls, model_cfg):
        enc = {k: model_cfg["encoder"][k] for k in (
            "n_features", "d_model", "num_layers", "num_heads", "ffn_dim", "dropout",
            "max_regions", "position", "layer_norm_eps")}
        return cls(enc, model_cfg["head"], model_cfg["loss"])

    def forward(self, features, mask, offsets, read_slots):
        """features [B, N, F], mask [B, N] (1 = region), offsets [B, N] (long, already shifted
        by +max_regions), read_slots [B] -> (prediction [B], alpha [B, N] or None)."""
        b, n = mask.shape
        bias = ((mask.to(features.dtype) - 1.0) * -MASK_BIAS).view(b, 1, 1, n)
        h = self.encoder(features, offsets, bias)
        raw, alpha = self.head(h, bias, read_slots)
        prediction = F.softplus(raw) if self.loss_kind == "poisson" else raw
        return prediction, alpha

    def loss(self, prediction, targets):
        if self.loss_kind == "poisson":
            return (prediction - targets * torch.log(prediction + POISSON_EPS)).mean()
        return (prediction - targets).square().mean()


def region_positions(region_mask, tss_index, tss_slot, strand, max_offset):
    """models/region/batch.rs for a batch: (offsets [S, N] long, shifted by +max_offset; the slot
    a TSS-region head reads [S]; regions used [S]). Real regions fill the first n_used slots;
    padding slots get offset 0. Without tss_slot (old datasets) the TSS region's slot (or 0)
    stands in; without strand every gene counts as +."""
    s, n = region_mask.shape
    n_used = (region_mask != 0).sum(1)
    slots = tss_slot if tss_slot is not None else tss_index.clamp(min=0)
    strand = strand.long() if strand is not None else torch.ones(s, dtype=torch.long)
    i = torch.arange(n)[None, :]
    t = slots[:, None]
    in_region = (tss_index >= 0)[:, None]
    genomic = torch.where(in_region | (i < t), i - t, i - t + 1)
    offset = torch.where(strand[:, None] < 0, -genomic, genomic)
    offset = torch.where(i < n_used[:, None], offset, torch.zeros_like(offset))
    offsets = offset.clamp(-max_offset, max_offset) + max_offset
    read = torch.where(
        tss_index >= 0, tss_index, torch.where(slots < n_used, slots, (slots - 1).clamp(min=0))
    )
    return offsets.long(), read.long(), n_used


def init_like_luminome(model, seed):
    """nn/init.rs's scheme (not its random stream): matrices and embeddings ~ N(0, 0.02^2),
    biases 0, layer-norm scales 1; standardisation at the identity."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) * INIT_STD)
            elif name.endswith(("ln1.weight", "ln2.weight", "norm.weight")):
                p.fill_(1.0)
            else:
                p.zero_()


# --- verify ------------------------------------------------------------------------------------


def read_checkpoint_meta(path):
    """The `luminome` JSON of a checkpoint's __metadata__ (or its .config.json sidecar)."""
    from safetensors import safe_open

    with safe_open(path, "pt") as handle:
        md = handle.metadata() or {}
    if "luminome" in md:
        return json.loads(md["luminome"])
    sidecar = path[: -len(".safetensors")] + ".config.json" if path.endswith(".safetensors") else None
    if sidecar and os.path.exists(sidecar):
        with open(sidecar) as handle:
            return json.load(handle)
    sys.exit(f"{path}: no luminome metadata and no .config.json beside it")


def verify(checkpoint, dataset, predictions, tolerance=1e-4, batch_size=256):
    from safetensors import safe_open
    from safetensors.torch import load_file

    meta = read_checkpoint_meta(checkpoint)
    cfg = meta["model"]
    if cfg.get("kind") != "expression":
        sys.exit(f"{checkpoint}: a {cfg.get('kind')} checkpoint, not an expression model")
    model = ExpressionModel.from_config(cfg)
    model.load_state_dict(load_file(checkpoint), strict=True)
    model = model.double().eval()
    enc = cfg["encoder"]

    with safe_open(dataset, "pt") as handle:
        ds_names = json.loads(handle.metadata()["feature_names"])
    if meta.get("feature_names") is not None and meta["feature_names"] != ds_names:
        sys.exit(f"{dataset}: its features differ from the checkpoint's")
    data = load_file(dataset)
    if enc["position"] == "tss-relative" and "tss_slot" not in data:
        sys.exit(f"{dataset}: no tss_slot tensor; a tss-relative model needs it")
    offsets, read_slots, n_used = region_positions(
        data["region_mask"], data["tss_index"], data.get("tss_slot"), data.get("strand"),
        enc["max_regions"],
    )
    features, mask = data["features"].double(), (data["region_mask"] != 0).double()
    preds = []
    with torch.no_grad():
        for start in range(0, features.shape[0], batch_size):
            sl = slice(start, start + batch_size)
            preds.append(model(features[sl], mask[sl], offsets[sl], read_slots[sl])[0])
    ours = torch.cat(preds)

    with open(predictions, newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    worst_abs = worst_rel = 0.0
    worst_row = None
    compared = 0
    for row in rows:
        r = int(row["record"])
        if row["predicted"] == "NA":
            assert n_used[r] == 0, f"record {r}: NA from luminome but it has {n_used[r]} regions"
            continue
        assert n_used[r] > 0, f"record {r}: no region, yet luminome predicted {row['predicted']}"
        theirs, mine = float(row["predicted"]), ours[r].item()
        diff = abs(mine - theirs)
        rel = diff / max(abs(theirs), 1e-3)
        compared += 1
        worst_abs = max(worst_abs, diff)
        if rel >= worst_rel:
            worst_rel, worst_row = rel, (r, mine, theirs)
    print(
        f"verify: {os.path.basename(checkpoint)} ({cfg['head']['type']}, positions "
        f"{enc['position']}, loss {cfg['loss']}, d {enc['d_model']} x {enc['num_layers']}): "
        f"{compared} samples, largest |difference| {worst_abs:.2e}, largest relative {worst_rel:.2e}"
        + (f" (record {worst_row[0]}: torch {worst_row[1]:.9g}, luminome {worst_row[2]:.9g})"
           if worst_row else "")
    )
    ok = compared > 0 and worst_rel <= tolerance

    # The loss formula: the dev loss stored with the weights, from the dev rows of the TSV.
    # Counted only when DATASET is the training file (sources are as given to luminome-train,
    # resolved here against the working directory); a file of the same name is only reported.
    dev_loss = meta.get("metrics", {}).get("dev_loss")
    sources = meta.get("sources", [])
    same_file = os.path.realpath(dataset) in {os.path.realpath(s) for s in sources}
    same_name = os.path.basename(dataset) in {os.path.basename(s) for s in sources}
    if dev_loss is not None and rows and "split" in rows[0] and "expression" in data and same_name:
        dev = [int(r["record"]) for r in rows if r["split"] == "dev" and r["predicted"] != "NA"]
        if dev:
            idx = torch.tensor(dev)
            mine = model.loss(ours[idx], data["expression"][idx].double()).item()
            rel = abs(mine - dev_loss) / max(abs(dev_loss), 1e-3)
            print(
                f"verify: dev loss over {len(dev)} samples: torch {mine:.7g}, luminome "
                f"{dev_loss:.7g} (relative difference {rel:.2e}"
                + (")" if same_file else "; not checked: not the training file found from here)")
            )
            ok = ok and (rel <= tolerance or not same_file)
    if not ok:
        print("verify: FAILED: the PyTorch model and luminome's disagree", file=sys.stderr)
        sys.exit(1)


# --- benchmark ---------------------------------------------------------------------------------

COLUMNS = [
    "impl", "head", "d_model", "layers", "heads", "ffn", "regions", "features", "batch", "threads",
    "parameters", "steps", "train_s_per_step", "train_samples_per_s", "infer_s_per_batch",
    "infer_samples_per_s",
]


def bench(args):
    torch.manual_seed(args.seed)
    b, n, f, d = args.batch_size, args.regions, args.features, args.d_model
    head = {"type": args.head, "mlp_hidden": args.mlp_hidden or d}
    encoder = dict(
        n_features=f, d_model=d, num_layers=args.layers, num_heads=args.heads, ffn_dim=args.ffn,
        dropout=args.dropout, max_regions=n, position=args.position, layer_norm_eps=1e-5,
    )
    model = ExpressionModel(encoder, head, "poisson")
    init_like_luminome(model, args.seed)
    params = sum(p.numel() for p in model.parameters()) + sum(x.numel() for x in model.buffers())

    # As bench_expression.rs: features U(0, 1), targets U(0, 5), every slot a region, the TSS in
    # the middle slot, + strand.
    features = torch.rand(b, n, f)
    targets = torch.rand(b) * 5.0
    mask = torch.ones(b, n)
    tss = torch.full((b,), n // 2, dtype=torch.long)
    offsets, read_slots, _ = region_positions(mask, tss, tss, torch.ones(b, dtype=torch.int8), n)

    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": other, "weight_decay": 0.0}],
        lr=1e-4, betas=(0.9, 0.999), eps=1e-8,
    )

    def train_step():
        model.train()
        prediction, _ = model(features, mask, offsets, read_slots)
        loss = model.loss(prediction, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def infer_step():
        model.eval()
        with torch.no_grad():
            model(features, mask, offsets, read_slots)[0].tolist()

    def timed(step, warmup):
        for _ in range(warmup):
            step()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        return (time.perf_counter() - t0) / max(args.steps, 1)

    warmup = 0 if args.mode != "both" else args.warmup
    fmt = lambda s: ("NA", "NA") if s is None else (f"{s:.6f}", f"{b / s:.1f}")
    train = timed(train_step, warmup) if args.mode in ("train", "both") else None
    infer = timed(infer_step, warmup) if args.mode in ("infer", "both") else None
    line = [
        "torch", args.head, d, args.layers, args.heads, args.ffn, n, f, b, args.threads, params,
        args.steps, *fmt(train), *fmt(infer),
    ]
    if args.header:
        print("\t".join(COLUMNS))
    print("\t".join(str(v) for v in line), flush=True)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--verify", nargs=3, metavar=("CHECKPOINT", "DATASET", "PREDICTIONS_TSV"),
        help="check this model against luminome-predict's predictions of a checkpoint",
    )
    parser.add_argument(
        "--tolerance", type=float, default=1e-4,
        help="--verify fails above this relative difference (default 1e-4)",
    )
    parser.add_argument("--bench", action="store_true", help="time training and inference steps")
    parser.add_argument(
        "--mode", choices=("train", "infer", "both"), default=None,
        help="train or infer: exactly --steps steps of that kind, no warmup (implies --bench); "
        "both (the --bench default): warmup, then each",
    )
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--regions", type=int, default=200, help="region slots N")
    parser.add_argument("--features", type=int, default=283, help="features per region F")
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ffn", type=int, default=256)
    parser.add_argument("--mlp-hidden", type=int, default=None, help="[default: --d-model]")
    parser.add_argument("--head", choices=("attention-pool", "tss-region"), default="attention-pool")
    parser.add_argument("--position", choices=("tss-relative", "none"), default="tss-relative")
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--header", action="store_true", help="print the TSV header line first")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.verify:
        verify(*args.verify, tolerance=args.tolerance)
    elif args.bench or args.mode:
        args.mode = args.mode or "both"
        bench(args)
    else:
        parser.error("give --verify CHECKPOINT DATASET PREDICTIONS_TSV, --bench or --mode")


if __name__ == "__main__":
    main()
