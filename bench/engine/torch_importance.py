#!/usr/bin/env python3
"""PyTorch side of the integrated-gradients throughput benchmark (docs/benchmarks.md): what
`luminome-importance --method ig --checkpoint CK --dataset DS` does for a sequence classifier,
in PyTorch.

Loads a Luminome classifier checkpoint into bench/engine/torch_model.py's Classifier (the same
parameter names, so `load_state_dict(strict=True)`), reads the token dataset and, in batches of
--batch-size records (luminome-importance's default, 16; each batch cut to its longest record),
computes integrated gradients as tools/luminome-importance/src/methods.rs does:

- input: the token embeddings (the encoder adds the learned positions after them);
- baseline: zero embeddings at sequence tokens; [CLS], [SEP] and padding keep their own;
- explained output: f = logit[target] − mean_c logit[c], summed over the batch; target: the
  larger label value for two classes, each record's predicted class for more (or --target);
- midpoint Riemann sum over --ig-steps (default 32) points α = (k + ½) / steps, one eval-mode
  forward and backward pass per point;
- score of a token: Σ_d (x − x₀)_d · mean gradient_d.

Writes luminome-importance's per-token TSV (record, name, position, token, start, end, score;
sequence tokens only). Prints the time of the IG computation alone and the sequences per second;
with --compare SCORES.tsv (luminome-importance's -o for the same checkpoint, dataset, records and
steps) it also prints the largest score difference and the Pearson correlation.

    python3 bench/engine/torch_importance.py --checkpoint run/best.safetensors \\
        --dataset test.safetensors --threads 1 --limit 1000 -o torch_ig.tsv [--compare ig.tsv]
"""
import argparse
import csv
import json
import os
import sys
import time

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_model import Classifier  # noqa: E402


def boundary_ids(tok):
    """[PAD], [CLS] and [SEP]: the tokens IG keeps at their own embedding and never scores."""
    return [i for i in (tok["pad_id"], tok.get("cls_id"), tok.get("sep_id")) if i is not None]


def token_span(tok, position, token_id):
    """Bases `[start, end)` a sequence token covers (luminome-io's TokenizerInfo::token_span)."""
    pos = position - int(tok["add_cls"])
    if tok["scheme"] == "nucleotide":
        return pos, pos + 1
    if tok["scheme"] == "kmer":
        k, step = tok["k"], tok["kmer_step"]
        return pos * step, pos * step + min(len(tok["vocab"][token_id]), k)
    return None


def integrated_gradients(model, ids, mask, keep, weights, steps):
    """Token scores [B, L] of one batch."""
    emb = model.embed(ids).detach()
    baseline = emb * keep[:, :, None]
    delta = emb - baseline
    total = torch.zeros_like(emb)
    for k in range(steps):
        x = (baseline + delta * ((k + 0.5) / steps)).requires_grad_(True)
        logits, _ = model.forward_from_embeddings(x, mask)
        (grad,) = torch.autograd.grad((logits * weights).sum(), x)
        total += grad
    return (delta * (total / steps)).sum(-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ig-steps", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--target", type=int, help="label value of the explained class")
    ap.add_argument("--limit", type=int, help="only the first N records")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--compare", help="luminome-importance's -o TSV for the same inputs")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    with safe_open(a.checkpoint, "pt") as handle:
        meta = json.loads(handle.metadata()["luminome"])
        weights = {k: handle.get_tensor(k) for k in handle.keys()}
    cfg = meta["model"]
    if cfg.get("rc_average"):
        sys.exit(f"{a.checkpoint}: reverse-complement averaging is not mirrored here")
    model = Classifier(cfg)
    model.load_state_dict(weights, strict=True)
    model.eval()
    model.requires_grad_(False)  # gradients reach the embeddings only

    data = load_file(a.dataset)
    with safe_open(a.dataset, "np") as handle:
        tok = json.loads(handle.metadata()["luminome"])["tokenizer"]
    n = data["input_ids"].shape[0] if a.limit is None else min(a.limit, data["input_ids"].shape[0])
    ids = torch.from_numpy(data["input_ids"][:n].astype(np.int64))
    mask = torch.from_numpy(data["attention_mask"][:n].astype(np.float32))
    keep = torch.isin(ids, torch.tensor(boundary_ids(tok))).to(torch.float32)
    stem = a.dataset[:-len(".safetensors")] if a.dataset.endswith(".safetensors") else a.dataset
    with open(stem + ".index.tsv") as handle:
        index = list(csv.DictReader(handle, delimiter="\t"))[:n]

    values, classes = cfg["label_values"], cfg["num_classes"]
    if a.target is not None:
        target = values.index(a.target)
    elif classes == 2:
        target = 1 if values[1] > values[0] else 0
    else:
        target = None  # each record's predicted class

    t0 = time.perf_counter()
    scores = []
    for s in range(0, n, a.batch_size):
        m = mask[s:s + a.batch_size]
        real = int((m.flip(1).cumsum(1) > 0).sum(1).max())  # up to the last unpadded token
        rows, cut = slice(s, s + a.batch_size), slice(0, max(real, 1))
        b_ids, b_mask, b_keep = ids[rows, cut], m[:, cut], keep[rows, cut]
        if target is None:
            with torch.inference_mode():
                targets = model(b_ids, b_mask)[0].argmax(-1)
        else:
            targets = torch.full((b_ids.shape[0],), target)
        w = torch.full((b_ids.shape[0], classes), -1.0 / classes)
        w[torch.arange(b_ids.shape[0]), targets] += 1.0
        scores.append(integrated_gradients(model, b_ids, b_mask, b_keep, w, a.ig_steps))
    ig_s = time.perf_counter() - t0

    mine = {}
    with open(a.output, "w") as out:
        out.write("record\tname\tposition\ttoken\tstart\tend\tscore\n")
        for b, batch in enumerate(scores):
            for i, row in enumerate(batch.numpy()):
                r = b * a.batch_size + i
                for p, score in enumerate(row):
                    t = int(ids[r, p])
                    if mask[r, p] == 0 or keep[r, p] != 0:
                        continue
                    span = token_span(tok, p, t)
                    start, end = (".", ".") if span is None else span
                    rec = index[r]["record"]
                    mine[(rec, p)] = float(score)
                    out.write(f"{rec}\t{index[r]['name']}\t{p}\t{tok['vocab'][t]}\t{start}\t{end}\t"
                              f"{np.format_float_positional(score, unique=True, trim='-')}\n")
    print(f"torch {torch.__version__} threads {a.threads}: {n} sequences, {a.ig_steps} IG steps, "
          f"batch {a.batch_size}: IG {ig_s:.3f} s ({n / ig_s:.1f} sequences/s)")

    if a.compare:
        with open(a.compare) as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        theirs = np.array([float(r["score"]) for r in rows])
        ours = np.array([mine[(r["record"], int(r["position"]))] for r in rows])
        if len(rows) != len(mine):
            print(f"warning: {len(rows)} scored tokens in {a.compare}, {len(mine)} here")
        diff = np.abs(ours - theirs).max()
        print(f"{len(rows)} token scores: largest |torch - luminome| {diff:.2e} "
              f"({diff / np.abs(theirs).max():.2e} of the largest |score|), "
              f"Pearson r {np.corrcoef(ours, theirs)[0, 1]:.8f}")


if __name__ == "__main__":
    main()
