#!/usr/bin/env python3
"""The FT-Transformer of `luminome-train tabular` in PyTorch, written as a user would (vectorised,
eager), from docs/tabular.md with Luminome's parameter names.

Two uses:

  # 1. Check a Luminome checkpoint: load its weights and schema, encode the table's rows as the
  #    schema says, compare the class probabilities with what luminome-predict wrote.
  python3 bench/tabular/torch_tabular.py --verify model/best.safetensors table.tsv pred.tsv

  # 2. Time a training step (forward with dropout, cross-entropy, backward, clip at 1, AdamW) and
  #    inference of a batch: the PyTorch side of bench/tabular/bench.sh (same model, batch and
  #    threads as tools/luminome-engine/examples/bench_tabular.rs).
  python3 bench/tabular/torch_tabular.py --bench --threads 1 [--columns 30 --batch 64 --steps 20]

The model: one token per column — numeric column j: x~_j w_j + b_j, or m_j when missing;
categorical column j: its slot's row of one shared table — after a learned [CLS] token; pre-LN
blocks x + Drop(Attn(LN x)), x + Drop(W2 Drop(GELU(W1 LN x))) with dropout also on the attention
probabilities; a final layer norm; a linear head on [CLS].

Parameter names (state_dict keys) as Luminome writes them: numeric.{weight,bias,missing} [n, d],
cls [1, d], categorical.weight, encoder.layers.{i}.{ln1,attn.qkv,attn.out,ln2,ffn.up,ffn.down}.*,
encoder.final_norm.*, head.*.
"""
import argparse
import csv
import json
import math
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

MISSING_CELLS = {"", "NA", "N/A", "NaN", "nan", "null", "NULL", "."}
# `--sdpa`: attention through F.scaled_dot_product_attention (PyTorch's fused kernel, what
# nn.TransformerEncoderLayer and most user code call) instead of softmax(QK^T/sqrt(d)) V
# written out; the same function of the inputs (within float rounding, other dropout draws).
USE_SDPA = False


class Attention(nn.Module):
    def __init__(self, d, heads, p):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.heads, self.p = heads, p

    def forward(self, x):
        b, l, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).reshape(b, l, 3, h, d // h).permute(2, 0, 3, 1, 4)
        if USE_SDPA:
            o = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0)
        else:
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // h), dim=-1)
            o = F.dropout(a, self.p, self.training) @ v
        return self.out(o.transpose(1, 2).reshape(b, l, d))


class Layer(nn.Module):
    def __init__(self, d, heads, ffn, p):
        super().__init__()
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.attn = Attention(d, heads, p)
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.ffn = nn.ModuleDict({"up": nn.Linear(d, ffn), "down": nn.Linear(ffn, d)})
        self.p = p

    def forward(self, x):
        x = x + F.dropout(self.attn(self.ln1(x)), self.p, self.training)
        f = self.ffn["down"](F.dropout(F.gelu(self.ffn["up"](self.ln2(x))), self.p, self.training))
        return x + F.dropout(f, self.p, self.training)


class Encoder(nn.Module):
    def __init__(self, d, layers, heads, ffn, p):
        super().__init__()
        self.layers = nn.ModuleList(Layer(d, heads, ffn, p) for _ in range(layers))
        self.final_norm = nn.LayerNorm(d, eps=1e-5)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.final_norm(x)


class FTTransformer(nn.Module):
    def __init__(self, n_numeric, category_slots, n_classes, d=64, layers=3, heads=4, ffn=128, p=0.1):
        super().__init__()
        self.numeric = nn.ParameterDict({k: nn.Parameter(torch.empty(n_numeric, d))
                                         for k in ("weight", "bias", "missing")}) if n_numeric else None
        if category_slots:
            self.categorical = nn.Embedding(sum(category_slots), d)
            offsets = [sum(category_slots[:j]) for j in range(len(category_slots))]
            self.register_buffer("offsets", torch.tensor(offsets), persistent=False)
        else:
            self.categorical = None
        self.cls = nn.Parameter(torch.empty(1, d))
        self.encoder = Encoder(d, layers, heads, ffn, p)
        self.head = nn.Linear(d, n_classes)
        # Luminome's initialisation (nn::init): matrices and embeddings N(0, 0.02^2), biases 0,
        # layer-norm scales 1.
        for name, t in self.named_parameters():
            with torch.no_grad():
                if t.ndim >= 2:
                    t.normal_(0.0, 0.02)
                elif "ln" in name or "norm" in name:
                    t.fill_(1.0 if name.endswith("weight") else 0.0)
                else:
                    t.zero_()

    def forward(self, x, missing, categories=None):
        """x, missing: [B, numeric columns] (standardised, 0 where missing; 1 = missing);
        categories: [B, categorical columns] slots."""
        b = x.shape[0]
        tokens = [self.cls.expand(b, 1, -1)]
        if self.numeric is not None:
            m = missing[:, :, None]
            value = x[:, :, None] * self.numeric["weight"] + self.numeric["bias"]
            tokens.append(value * (1 - m) + m * self.numeric["missing"])
        if self.categorical is not None:
            tokens.append(self.categorical(categories + self.offsets))
        h = self.encoder(torch.cat(tokens, 1))
        return self.head(h[:, 0])


def load_luminome(path):
    from safetensors import safe_open
    from safetensors.torch import load_file

    ckpt = os.path.join(path, "best.safetensors") if os.path.isdir(path) else path
    with safe_open(ckpt, "pt") as f:
        meta = json.loads(f.metadata()["luminome"])
    cfg = meta["model"]
    schema, arch = cfg["schema"], cfg["arch"]
    assert arch["type"] == "ft-transformer", arch
    assert arch.get("attention", "standard") == "standard", arch
    numeric = [c for c in schema["columns"] if c["type"] == "numeric"]
    slots = [len(c["categories"]) + 2 for c in schema["columns"] if c["type"] == "categorical"]
    model = FTTransformer(len(numeric), slots, len(schema["classes"]), arch["d_model"],
                          arch["num_layers"], arch["num_heads"], arch["ffn_dim"], arch["dropout"])
    state = load_file(ckpt)
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not missing and not unexpected, (missing, unexpected)
    return model.eval(), cfg


def read_table(path):
    delim = "\t" if path.endswith((".tsv", ".txt", ".tab")) else ","
    with open(path, newline="") as f:
        rows = list(csv.reader(f, delimiter=delim))
    return rows[0], rows[1:]


def encode(schema, header, rows):
    """The schema's encoding (docs/tabular.md): x~ = (x - mean) / sd in f64, then f32; a missing
    number 0 and its flag; categories: 0 missing, 1 unknown, 2 + index in the sorted vocabulary."""
    col = {name: i for i, name in enumerate(header)}
    num, miss, cat = [], [], []
    for r in rows:
        nr, mr, cr = [], [], []
        for c in schema["columns"]:
            cell = r[col[c["name"]]].strip()
            if c["type"] == "numeric":
                is_missing = cell in MISSING_CELLS
                nr.append(0.0 if is_missing else (float(cell) - c["mean"]) / c["sd"])
                mr.append(1.0 if is_missing else 0.0)
            else:
                vocab = c["categories"]
                cr.append(0 if cell in MISSING_CELLS else (vocab.index(cell) + 2 if cell in vocab else 1))
        num.append(nr)
        miss.append(mr)
        cat.append(cr)
    return (torch.tensor(num, dtype=torch.float64).float(), torch.tensor(miss),
            torch.tensor(cat, dtype=torch.int64) if cat and cat[0] else None)


def verify(ckpt, table, predictions):
    model, cfg = load_luminome(ckpt)
    schema = cfg["schema"]
    header, rows = read_table(table)
    x, m, c = encode(schema, header, rows)
    with torch.no_grad():
        logits = model(x, m, c).double()
    probs = torch.softmax(logits, -1)
    id_col = schema.get("id_column")
    names = [r[header.index(id_col)] for r in rows] if id_col else [f"row{i + 1}" for i in range(len(rows))]
    p_header, p_rows = read_table(predictions)
    prob_cols = [p_header.index(f"prob_{k}") for k in schema["classes"]]
    name_col = p_header.index("name")
    theirs = {r[name_col]: [float(r[j]) for j in prob_cols] for r in p_rows}
    assert len(theirs) == len(names), (len(theirs), len(names))
    t = torch.tensor([theirs[n] for n in names], dtype=torch.float64)
    diff = (probs - t).abs().max().item()
    # luminome-predict prints 6 decimals: up to 5e-7 of the difference is that rounding.
    off = int((torch.round(probs * 1e6) != torch.round(t * 1e6)).sum())
    print(f"{len(names)} rows x {len(schema['classes'])} classes: max |torch - luminome| probability = "
          f"{diff:.2e} ({off} of {t.numel()} differ once rounded to 6 decimals as printed)")
    assert diff < 1e-5, diff
    print("ok")


def bench(a):
    global USE_SDPA
    USE_SDPA = a.sdpa
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    b, n = a.batch, a.columns
    model = FTTransformer(n, [], 2)
    # The same rows as bench_tabular.rs: standardised values in [-2, 2), none missing.
    ij = torch.arange(b)[:, None] * 131 + torch.arange(n)[None, :] * 17
    X = (ij % 101).float() / 25.0 - 2.0
    M = torch.zeros(b, n)
    Y = (torch.arange(b) % 3 == 0).long()
    idx = torch.arange(b)
    # AdamW as Luminome's: weight decay on rank >= 2 parameters only (matrices, embeddings,
    # the column tokens and [CLS]), not on biases and layer-norm parameters.
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": 1e-4},
              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    model.train()
    times = []
    for step in range(a.steps + 3):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(X[idx], M[idx]), Y[idx])
        loss.item()  # the trainer's NaN check reads the loss every step
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if step >= 3:
            times.append(time.perf_counter() - t0)
    model.eval()
    inf = []
    with torch.inference_mode():
        for step in range(a.steps + 3):
            t0 = time.perf_counter()
            probs = torch.softmax(model(X[idx], M[idx]).double(), -1).tolist()
            assert len(probs) == b
            if step >= 3:
                inf.append(time.perf_counter() - t0)
    train_ms = statistics.median(times) * 1e3
    inf_ms = statistics.median(inf) * 1e3
    print(f"torch {torch.__version__} threads {a.threads} sdpa {a.sdpa} columns {n} batch {b}")
    print(f"train_step_ms median {train_ms:.2f}")
    print(f"infer_batch_ms median {inf_ms:.2f} ({b / inf_ms * 1e3:.0f} rows/s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verify", nargs=3, metavar=("CHECKPOINT", "TABLE", "PREDICTIONS"),
                    help="checkpoint file or its folder (best.safetensors), the table, luminome-predict's TSV")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--columns", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--sdpa", action="store_true", help="attention through F.scaled_dot_product_attention")
    a = ap.parse_args()
    if a.verify:
        verify(*a.verify)
    elif a.bench:
        bench(a)
    else:
        ap.error("--verify or --bench")


if __name__ == "__main__":
    main()
