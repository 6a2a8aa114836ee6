#!/usr/bin/env python3
"""`luminome-importance --method ism` against tangermeme's `saturation_mutagenesis`
(docs/predict-importance.md, "In-silico mutagenesis"; docs/benchmarks.md, "ISM against
tangermeme").

Loads a Luminome classifier checkpoint into bench/engine/torch_model.py's Classifier (same
parameter names, `load_state_dict(strict=True)`; the CNN's convolutions stored [out, k·in]
tap-major are reshaped to nn.Conv1d's [out, in, k]) and wraps it as the module tangermeme
expects: one-hot X (B, 4, L) → f (B, 1), the output luminome-importance explains,

    f = logit[target] − mean_c logit[c]    (two classes: target = the larger label value)

The wrapper builds the model's token row from X as luminome-tokenize writes it: [CLS] (if the
tokenizer adds it), one token per base (A, C, G, T = the vocabulary's ids 5..8; a column of
zeros, tangermeme's N, = the N token), [SEP] (if added), no padding (mask all ones). It does so
by a one-hot product (X·P, then the embedding rows), which picks exactly the rows the ids
(argmax over ACGT) would, and lets torch.export trace it for tangermeme's fast path.

tangermeme's `saturation_mutagenesis` is called with `raw_outputs=True`, which returns the
model's outputs y0 (N, 1) and y_hat (N, 4, L, 1) for every single-base substitution (the
reference base's slot filled with y0); the raw change Δf = y_hat − y0 is what luminome-importance
writes as the npz's `ism`. (Its default return is not Δf: Δf minus its mean over the four bases
of a position, times the one-hot X; `hypothetical=True` skips the product. --attributions also
compares those with Luminome's `ism`/`contrib`.)

Sequences: a nucleotide token dataset (--dataset, records in order, --limit) or --sequences.
Each group of equal length is one tangermeme call; shorter rows are zero-padded to the widest.

    # agreement with luminome-importance on the same records
    luminome-importance --checkpoint CK --dataset DS --method ism --records 200 -o ism.tsv --npz ism.npz
    python3 bench/importance/ism_tangermeme.py --checkpoint CK --dataset DS --limit 200 \\
        --compare ism.npz --attributions
    # the Rust test's fixture (tools/luminome-importance/tests/fixtures/ism_tangermeme/)
    python3 bench/importance/ism_tangermeme.py --fixture DIR
    # timing (bench/importance/run_ism_bench.sh): --threads, -o OUT.npz
"""
import argparse
import datetime
import json
import os
import sys
import time
import warnings

import numpy as np
import torch
import tangermeme
from safetensors import safe_open
from safetensors.numpy import load_file, save_file
from tangermeme.saturation_mutagenesis import saturation_mutagenesis

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "engine"))
from torch_model import Classifier  # noqa: E402

ACGT = "ACGT"
TINY = "tools/luminome-predict/tests/fixtures/torch_reference/tiny_{}.safetensors"
# ≤ 10 bases (the tiny models take 12 tokens); different lengths (padding on the Rust side)
# and an N (mutated to all four bases on both sides).
FIXTURE_SEQUENCES = ["ACGTTATAGC", "GGCANTTA", "TTGAC"]
FIXTURE_ADAPTERS = ["gated", "mean"]


def load_classifier(path):
    """(model in eval mode, model config, tokenizer) of a Luminome classifier checkpoint."""
    with safe_open(path, "pt") as handle:
        meta = json.loads(handle.metadata()["luminome"])
        weights = {k: handle.get_tensor(k) for k in handle.keys()}
    cfg = meta["model"]
    if cfg.get("kind") != "classifier":
        sys.exit(f"{path}: not a sequence classifier ({cfg.get('kind')})")
    if cfg.get("rc_average"):
        sys.exit(f"{path}: reverse-complement averaging is not mirrored here")
    if "cnn" in cfg:
        cnn = cfg["cnn"]
        for name, w in list(weights.items()):
            if name.startswith("cnn.") and name.endswith(".weight") and w.dim() == 2 \
                    and "norm" not in name:
                k = cnn["first_kernel"] if name == "cnn.first.weight" else cnn["kernel"]
                # Luminome [out, k·in] tap-major → nn.Conv1d [out, in, k].
                weights[name] = w.reshape(w.shape[0], k, w.shape[1] // k).permute(0, 2, 1) \
                    .contiguous()
    model = Classifier(cfg)
    model.load_state_dict(weights, strict=True)
    model.eval()
    model.requires_grad_(False)
    return model, cfg, meta["tokenizer"]


def target_class(cfg, label):
    """Index of the explained class: --target's label value, else the larger of two labels."""
    values = cfg["label_values"]
    if label is not None:
        return values.index(label)
    if len(values) != 2:
        sys.exit("more than two classes: pass --target (luminome-importance's default there is "
                 "each record's predicted class, which tangermeme's fixed target cannot mirror)")
    return 1 if values[1] > values[0] else 0


class ExplainedOutput(torch.nn.Module):
    """One-hot X (B, 4, L) → f (B, 1) = logit[target] − mean_c logit[c]."""

    def __init__(self, model, cfg, tok, target):
        super().__init__()
        if tok["scheme"] != "nucleotide":
            sys.exit(f"the {tok['scheme']} scheme: only nucleotide tokens are mirrored here")
        self.model = model
        vocab = tok["vocab"]
        v = len(vocab)
        place = torch.zeros(4, v)
        for i, b in enumerate(ACGT):
            place[i, vocab.index(b)] = 1.0
        self.register_buffer("place", place)
        self.register_buffer("n_token", torch.nn.functional.one_hot(
            torch.tensor(vocab.index("N")), v).float())
        ends = []
        for flag, key in (("add_cls", "cls_id"), ("add_sep", "sep_id")):
            ends.append(torch.nn.functional.one_hot(torch.tensor(tok[key]), v).float()
                        if tok[flag] else None)
        self.cls, self.sep = ends
        classes = cfg["num_classes"]
        w = torch.full((classes,), -1.0 / classes)
        w[target] += 1.0
        self.register_buffer("w", w)
        # The CNN reads the one-hot tokens themselves; the transformer their embedding rows.
        self.table = None if hasattr(model, "cnn") else model.encoder.tok_emb.weight

    def forward(self, X):
        x = X.transpose(1, 2).to(self.place.dtype)                  # (B, L, 4)
        tokens = x @ self.place + (1.0 - x.sum(-1, keepdim=True)) * self.n_token
        b = tokens.shape[0]
        parts = [tokens]
        if self.cls is not None:
            parts.insert(0, self.cls.expand(b, 1, -1))
        if self.sep is not None:
            parts.append(self.sep.expand(b, 1, -1))
        tokens = torch.cat(parts, dim=1)                             # (B, T, V)
        emb = tokens if self.table is None else tokens @ self.table
        mask = torch.ones(tokens.shape[:2], dtype=emb.dtype)
        logits, _ = self.model.forward_from_embeddings(emb, mask)
        return (logits @ self.w)[:, None]


def dataset_sequences(path, limit):
    """The bases of each record of a nucleotide token dataset, in order."""
    data = load_file(path)
    with safe_open(path, "np") as handle:
        tok = json.loads(handle.metadata()["luminome"])["tokenizer"]
    if tok["scheme"] != "nucleotide":
        sys.exit(f"{path}: the {tok['scheme']} scheme: only nucleotide tokens are mirrored here")
    vocab = tok["vocab"]
    specials = {tok[k] for k in ("pad_id", "cls_id", "sep_id") if tok.get(k) is not None}
    ids, mask = data["input_ids"], data["attention_mask"]
    n = ids.shape[0] if limit is None else min(limit, ids.shape[0])
    seqs = []
    for r in range(n):
        bases = [vocab[int(t)] for t, m in zip(ids[r], mask[r]) if m and int(t) not in specials]
        bad = set(bases) - set("ACGTN")
        if bad:
            sys.exit(f"{path}: record {r} has tokens {sorted(bad)}, not bases")
        seqs.append("".join(bases))
    return seqs


def one_hot(seq):
    x = np.zeros((4, len(seq)), dtype=np.int8)
    for i, b in enumerate(seq):
        if b in ACGT:
            x[ACGT.index(b), i] = 1
    return x


def run_ism(wrapper, seqs, batch_size, fast, **kwargs):
    """tangermeme on each group of equal length: (N, 4, W) arrays of what it returns
    (raw_outputs=True: y_hat − y0, Luminome's Δf), zero past each record's length."""
    width = max(len(s) for s in seqs)
    out = np.zeros((len(seqs), 4, width), dtype=np.float32)
    by_length = {}
    for i, s in enumerate(seqs):
        by_length.setdefault(len(s), []).append(i)
    for length, rows in by_length.items():
        X = torch.from_numpy(np.stack([one_hot(seqs[i]) for i in rows]))
        result = saturation_mutagenesis(wrapper, X, batch_size=batch_size, device="cpu",
                                        fast=fast, **kwargs)
        if kwargs.get("raw_outputs"):
            y0, y_hat = result
            result = (y_hat - y0[:, None, None, :])[..., 0]
        out[rows, :, :length] = result.numpy()
    return out


def luminome_views(ism, onehot, lengths):
    """tangermeme's two attribution outputs computed from Luminome's Δf: Δf minus its mean over
    the four bases of each position (hypothetical=True), and that times the one-hot (default)."""
    hyp = ism - ism.mean(axis=1, keepdims=True)
    for r, n in enumerate(lengths):
        hyp[r, :, n:] = 0.0
    return hyp, hyp * onehot


def substituted(seqs, width):
    """Mask (N, 4, W) of the substitutions: every base but the reference one (all four at an
    N), within each record's length."""
    m = np.zeros((len(seqs), 4, width), dtype=bool)
    for r, s in enumerate(seqs):
        m[r, :, :len(s)] = one_hot(s) == 0
    return m


def agreement(name, ours, theirs, where=None):
    d = np.abs(ours - theirs)
    a, b = (ours, theirs) if where is None else (ours[where], theirs[where])
    r = np.corrcoef(a.ravel(), b.ravel())[0, 1]
    print(f"{name}: {a.size} values, Pearson r {r:.9f}, largest |tangermeme − luminome| "
          f"{d.max():.3e} (largest |value| {np.abs(theirs).max():.3e})")
    return r, float(d.max())


def write_fixture(out_dir, batch_size):
    os.makedirs(out_dir, exist_ok=True)
    tensors = {}
    seqs = FIXTURE_SEQUENCES
    for adapter in FIXTURE_ADAPTERS:
        model, cfg, tok = load_classifier(os.path.join(ROOT, TINY.format(adapter)))
        wrapper = ExplainedOutput(model, cfg, tok, target_class(cfg, None))
        tensors[f"{adapter}.ism"] = run_ism(wrapper, seqs, batch_size, False, raw_outputs=True)
        tensors[f"{adapter}.hypothetical"] = run_ism(wrapper, seqs, batch_size, False,
                                                     hypothetical=True)
        tensors[f"{adapter}.attributions"] = run_ism(wrapper, seqs, batch_size, False)
        print(adapter, "largest |Δf|", np.abs(tensors[f"{adapter}.ism"]).max())
    width = max(len(s) for s in seqs)
    onehot = np.zeros((len(seqs), 4, width), dtype=np.float32)
    for r, s in enumerate(seqs):
        onehot[r, :, :len(s)] = one_hot(s)
    tensors["onehot"] = onehot
    tensors["length"] = np.array([len(s) for s in seqs], dtype=np.int64)
    meta = {
        "sequences": ",".join(seqs),
        "checkpoints": ",".join(TINY.format(a) for a in FIXTURE_ADAPTERS),
        "target_class": "1",
        "tangermeme": tangermeme.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "date": datetime.date.today().isoformat(),
        "command": "python3 bench/importance/ism_tangermeme.py --fixture " + out_dir,
    }
    save_file(tensors, os.path.join(out_dir, "tangermeme.safetensors"), metadata=meta)
    print(json.dumps(meta, indent=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint")
    ap.add_argument("--dataset", help="nucleotide token dataset (luminome-tokenize)")
    ap.add_argument("--sequences", help="comma-separated sequences instead of --dataset")
    ap.add_argument("--limit", type=int, help="only the first N records of --dataset")
    ap.add_argument("--target", type=int, help="label value of the explained class")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--batch-size", type=int, default=256,
                    help="tangermeme's batch_size: rows per forward pass (luminome-importance's "
                         "--ism-rows default is 256)")
    ap.add_argument("--no-fast", action="store_true",
                    help="fast=False: no fastISM attempt (tangermeme's default is fast=True, "
                         "tried for jobs of over 30 s)")
    ap.add_argument("-o", "--output", help="write the (N, 4, W) Δf array (ism) to this .npz")
    ap.add_argument("--compare", help="luminome-importance --method ism --npz of the same records")
    ap.add_argument("--attributions", action="store_true",
                    help="with --compare: also run tangermeme's default and hypothetical=True "
                         "outputs and compare them with what Luminome's Δf gives")
    ap.add_argument("--fixture", help="write the Rust test's fixture into this folder")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.fixture:
        torch.manual_seed(0)
        write_fixture(a.fixture, a.batch_size)
        return
    if not a.checkpoint or not (a.dataset or a.sequences):
        ap.error("--checkpoint and --dataset (or --sequences) are needed")

    model, cfg, tok = load_classifier(a.checkpoint)
    target = target_class(cfg, a.target)
    wrapper = ExplainedOutput(model, cfg, tok, target)
    seqs = dataset_sequences(a.dataset, a.limit) if a.dataset else a.sequences.split(",")
    fast = not a.no_fast
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ism = run_ism(wrapper, seqs, a.batch_size, fast, raw_outputs=True)
    took = time.perf_counter() - t0
    for w in caught:
        print(f"tangermeme warning: {w.message}", file=sys.stderr)
    rows = sum(1 + int((one_hot(s) == 0).sum()) for s in seqs)
    print(f"tangermeme {tangermeme.__version__}, torch {torch.__version__}, threads {a.threads}: "
          f"{len(seqs)} sequences, {rows} forward rows (fast={fast}, batch_size {a.batch_size}): "
          f"saturation_mutagenesis {took:.3f} s ({len(seqs) / took:.1f} sequences/s)")
    if a.output:
        np.savez(a.output, ism=ism, length=np.array([len(s) for s in seqs], dtype=np.int64))

    if a.compare:
        theirs = np.load(a.compare)
        lum, onehot, lengths = theirs["ism"], theirs["onehot"], theirs["length"]
        if lum.shape != ism.shape or list(lengths) != [len(s) for s in seqs]:
            sys.exit(f"{a.compare}: ism {lum.shape} for lengths {list(lengths)[:5]}…, here "
                     f"{ism.shape}: not the same records")
        subs = substituted(seqs, ism.shape[2])
        agreement("Δf, all entries (N, 4, L)", lum, ism)
        agreement("Δf, substitutions only", lum, ism, subs)
        if a.attributions:
            hyp, proj = luminome_views(lum, onehot, lengths)
            t_hyp = run_ism(wrapper, seqs, a.batch_size, fast, hypothetical=True)
            t_proj = run_ism(wrapper, seqs, a.batch_size, fast)
            agreement("hypothetical=True vs Δf − mean over ACGT", hyp, t_hyp)
            agreement("default vs one-hot × (Δf − mean over ACGT)", proj, t_proj)
            # Luminome's contrib (ref-minus-mean) = −mean over the 3 substitutions; tangermeme's
            # default at the reference base = −(sum over the 3) / 4: ¾ of it.
            agreement("default vs ¾ × contrib (--ism-score ref-minus-mean)",
                      0.75 * theirs["contrib"], t_proj)


if __name__ == "__main__":
    main()
