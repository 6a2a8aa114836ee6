#!/usr/bin/env python3
"""`luminome-importance --method deepliftshap` against tangermeme's `deep_lift_shap`
(docs/predict-importance.md, "DeepLIFT/SHAP").

Loads a Luminome CNN classifier checkpoint into bench/engine/torch_model.py's Classifier (the
loader and the one-hot X (B, 4, L) → f (B, 1) wrapper of ism_tangermeme.py), with the
operations tangermeme's hooks must see written as modules: the CNN's ReLUs already are; the
max-pooling adapter pools with nn.MaxPool1d over the whole row, and the gated adapter's
sigmoids are nn.Sigmoid and its three products tangermeme's BilinearOp (the midpoint rule).
The layer norms are nn.LayerNorm (tangermeme 1.6's `_layernorm` rule).

tangermeme is given the references Luminome drew (the npz's `references`, one-hot with N as an
all-zero column), so both explain the same pairs; it returns hypothetical contributions
(`hypothetical=True`) averaged over the references, which the npz holds as `hypothetical`.

    luminome-importance --checkpoint CK --dataset DS --method deepliftshap --records 50 \\
        -o dls.tsv --npz dls.npz
    python3 bench/importance/deeplift_tangermeme.py --checkpoint CK --dataset DS --limit 50 \\
        --compare dls.npz
    # the Rust test's fixture (tools/luminome-importance/tests/fixtures/deeplift_tangermeme/):
    python3 bench/importance/deeplift_tangermeme.py --fixture DIR
    # timing (bench/importance/run_deeplift_bench.sh): --threads, --shuffles, -o OUT.npz
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch
import tangermeme
from safetensors.numpy import load_file, save_file
from tangermeme.deep_lift_shap import BilinearOp, deep_lift_shap
from tangermeme.ersatz import dinucleotide_shuffle

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from ism_tangermeme import (  # noqa: E402
    ExplainedOutput, agreement, dataset_sequences, load_classifier, one_hot, target_class)

FIXTURE_ADAPTERS = ["mean", "max", "gated"]
# The transformer: the tiny random checkpoints of tools/luminome-predict/tests/fixtures/torch_reference
# (12 tokens, so its own short sequences).
FIXTURE_TRANSFORMERS = ["mean", "gated"]
TINY = "tools/luminome-predict/tests/fixtures/torch_reference/tiny_{}.safetensors"
FIXTURE = "tools/luminome-importance/tests/fixtures/deeplift_tangermeme"


class HookedMaxPool(torch.nn.Module):
    """LinearMaxPool with the pooling as nn.MaxPool1d over the whole row (the kernel set to the
    row's length on each call), so tangermeme's `_maxpool` rule applies."""

    def __init__(self, head):
        super().__init__()
        self.head = head.head
        self.pool = torch.nn.MaxPool1d(1)

    def forward(self, h, mask):
        m = mask.to(h.dtype)[:, :, None]
        biased = (h + (m - 1.0) * 1e9).transpose(1, 2)            # (B, D, L)
        self.pool.kernel_size = self.pool.stride = biased.shape[-1]
        return self.head(self.pool(biased)[..., 0]), None


class HookedGated(torch.nn.Module):
    """The DynamicGated adapter with its sigmoids as modules and its products as BilinearOp."""

    def __init__(self, gated):
        super().__init__()
        self.g = gated
        self.gate_sigmoid, self.score_sigmoid = torch.nn.Sigmoid(), torch.nn.Sigmoid()
        self.score_product = BilinearOp("...,...->...")
        self.gate_product = BilinearOp("...,...->...")
        self.pool_product = BilinearOp("...,...->...")

    def forward(self, h, mask):
        g = self.g
        b, l, d = h.shape
        h_cls = h[:, 0]
        pair = torch.cat([h_cls[:, None, :].expand(b, l, d), h], dim=-1)
        g_base = self.gate_sigmoid(g.gate(pair))
        score = self.score_product(g.key(h), g.query(h_cls)[:, None, :]).sum(-1, keepdim=True)
        alpha = self.score_sigmoid(score * g.score_scale)
        m = mask.to(h.dtype).clone()
        m[:, 0] = 0.0
        gates = self.gate_product(g_base, alpha) * m[:, :, None]
        z = self.pool_product(gates, h).sum(1)
        return g.head(g.norm(z)), gates


class HookedAttention(torch.nn.Module):
    """Standard attention written out (torch_model.SelfAttention uses SDPA, which tangermeme
    cannot see into): QKᵀ and probabilities·V as BilinearOp (midpoint rule), nn.Softmax
    (tangermeme's softmax rule) on the scaled, biased scores."""

    def __init__(self, attn):
        super().__init__()
        self.a = attn
        self.scores = BilinearOp()
        self.softmax = torch.nn.Softmax(dim=-1)
        self.context = BilinearOp()

    def forward(self, x, bias):
        b, l, d = x.shape
        h = self.a.num_heads
        qkv = self.a.qkv(x).reshape(b, l, 3, h, d // h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * (d // h) ** -0.5, qkv[1], qkv[2]
        probs = self.softmax(self.scores(q, k.transpose(-1, -2)) + bias)
        return self.a.out(self.context(probs, v).transpose(1, 2).reshape(b, l, d))


class HookedFeedForward(torch.nn.Module):
    """The feed-forward block with its GELU (erf form) as nn.GELU (the rescale rule)."""

    def __init__(self, ffn):
        super().__init__()
        self.f = ffn
        self.gelu = torch.nn.GELU()

    def forward(self, x, dropout, training):
        return self.f.down(self.gelu(self.f.up(x)))


def hookable(path):
    """(model, cfg, tok) with the operations tangermeme's rules attach to as modules."""
    model, cfg, tok = load_classifier(path)
    if "encoder" in cfg:
        if cfg["encoder"].get("attention", "standard") != "standard":
            sys.exit(f"{path}: genetic attention has no DeepLIFT rule")
        for layer in model.encoder.layers:
            layer.attn = HookedAttention(layer.attn)
            layer.ffn = HookedFeedForward(layer.ffn)
    if cfg["adapter"] == "max":
        model.adapter = HookedMaxPool(model.adapter)
    elif cfg["adapter"] == "gated":
        model.adapter = HookedGated(model.adapter)
    model.eval()
    return model, cfg, tok


def read_npz(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def references_of(arrays, r, length):
    """The references of record r as tangermeme reads them: (S, 4, length) float, N = zeros."""
    return torch.from_numpy(arrays["references"][r, :, :, :length].astype(np.float32))


def run_tangermeme(wrapper, seqs, refs, batch_size, **kwargs):
    """Hypothetical contributions (N, 4, W), zero past each record's length; refs[i] is
    (S, 4, len_i). One call per group of equal length (rows of one call share a length)."""
    width = max(len(s) for s in seqs)
    out = np.zeros((len(seqs), 4, width), dtype=np.float32)
    by_length = {}
    for i, s in enumerate(seqs):
        by_length.setdefault(len(s), []).append(i)
    for length, rows in by_length.items():
        X = torch.from_numpy(np.stack([one_hot(seqs[i]) for i in rows]).astype(np.float32))
        R = torch.stack([refs[i] for i in rows])
        attr = deep_lift_shap(wrapper, X, references=R, batch_size=batch_size,
                              hypothetical=True, device="cpu",
                              # X may hold N (an all-zero column), which deep_lift_shap
                              # would refuse; the references already allow it.
                              only_warn=True, **kwargs)
        out[rows, :, :length] = attr.detach().numpy()
    return out


def luminome(checkpoint, dataset, npz, shuffles, extra=()):
    exe = os.path.join(ROOT, "target", "debug", "luminome-importance")
    if not os.path.exists(exe):
        exe = "luminome-importance"
    subprocess.run([exe, "--checkpoint", checkpoint, "--dataset", dataset, "--method",
                    "deepliftshap", "--shuffles", str(shuffles), "-q", "-o",
                    npz.replace(".npz", ".tsv"), "--npz", npz, *extra], check=True)
    return read_npz(npz)


def write_fixture(out_dir, batch_size):
    """Luminome's npz for each fixture checkpoint on the fixture dataset (both in out_dir, made
    by tests/deeplift_reference.rs's instructions in the README), then tangermeme on the same
    references."""
    tensors = {}

    def compare(key, checkpoint, dataset, seqs):
        npz = os.path.join("/tmp", f"deeplift_fixture_{key}.npz")
        ours = luminome(checkpoint, dataset, npz, 8)
        model, cfg, tok = hookable(checkpoint)
        wrapper = ExplainedOutput(model, cfg, tok, target_class(cfg, None))
        refs = [references_of(ours, r, len(s)) for r, s in enumerate(seqs)]
        tensors[f"{key}.hypothetical"] = run_tangermeme(wrapper, seqs, refs, batch_size)
        tensors[f"{key}.references"] = ours["references"].astype(np.uint8)
        agreement(f"{key} hypothetical", ours["hypothetical"], tensors[f"{key}.hypothetical"])

    dataset = os.path.join(out_dir, "sequences.safetensors")
    seqs = dataset_sequences(dataset, None)
    for adapter in FIXTURE_ADAPTERS:
        compare(adapter, os.path.join(out_dir, f"cnn_{adapter}.safetensors"), dataset, seqs)
    short = os.path.join(out_dir, "short.safetensors")
    short_seqs = dataset_sequences(short, None)
    for adapter in FIXTURE_TRANSFORMERS:
        compare(f"tfm_{adapter}", os.path.join(ROOT, TINY.format(adapter)), short, short_seqs)
    meta = {
        "sequences": ",".join(seqs),
        "short_sequences": ",".join(short_seqs),
        "checkpoints": ",".join(f"cnn_{a}.safetensors" for a in FIXTURE_ADAPTERS)
        + "," + ",".join(TINY.format(a) for a in FIXTURE_TRANSFORMERS),
        "shuffles": "8",
        "seed": "1",
        "tangermeme": tangermeme.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "date": datetime.date.today().isoformat(),
        "command": "python3 bench/importance/deeplift_tangermeme.py --fixture " + out_dir,
    }
    save_file(tensors, os.path.join(out_dir, "tangermeme.safetensors"), metadata=meta)
    print(json.dumps(meta, indent=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint")
    ap.add_argument("--dataset")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--compare", help="luminome-importance's npz on the same records")
    ap.add_argument("--shuffles", type=int, default=20,
                    help="timing without --compare: tangermeme's own dinucleotide shuffles")
    ap.add_argument("--batch-size", type=int, default=32,
                    help="sequence-reference pairs per pass (tangermeme's default)")
    ap.add_argument("--threads", type=int)
    ap.add_argument("-o", "--output", help="write tangermeme's hypothetical contributions")
    ap.add_argument("--fixture", help="write the Rust test's fixture into this folder")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
        torch.set_num_interop_threads(1)
    if args.fixture:
        write_fixture(args.fixture, args.batch_size)
        return
    model, cfg, tok = hookable(args.checkpoint)
    wrapper = ExplainedOutput(model, cfg, tok, target_class(cfg, None))
    seqs = dataset_sequences(args.dataset, args.limit)
    if args.compare:
        ours = read_npz(args.compare)
        refs = [references_of(ours, r, len(s)) for r, s in enumerate(seqs)]
    else:
        refs = [dinucleotide_shuffle(torch.from_numpy(one_hot(s)[None].astype(np.float32)),
                                     n=args.shuffles, random_state=i, allow_N=True)[0]
                for i, s in enumerate(seqs)]
    started = time.perf_counter()
    theirs = run_tangermeme(wrapper, seqs, refs, args.batch_size)
    seconds = time.perf_counter() - started
    print(f"tangermeme deep_lift_shap: {len(seqs)} records x {refs[0].shape[0]} references "
          f"in {seconds:.2f}s ({torch.get_num_threads()} threads)")
    if args.compare:
        agreement("hypothetical", ours["hypothetical"][:, :, :theirs.shape[2]], theirs)
        contrib = theirs * ours["onehot"][:, :, :theirs.shape[2]]
        agreement("contrib", ours["contrib"][:, :, :theirs.shape[2]], contrib)
    if args.output:
        np.savez(args.output, hypothetical=theirs)


if __name__ == "__main__":
    main()
