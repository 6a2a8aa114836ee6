#!/usr/bin/env python3
"""The Luminome dual encoder in PyTorch, with standard or genetic attention, written from
specs/genetic-attention-dual-encoder.md (not from the Rust code) with Luminome's parameter names.

Two uses:

  # 1. Check a Luminome checkpoint: load its weights, embed the queries and passages of a pairs
  #    dataset, compare with the embeddings luminome-predict wrote (--embeddings).
  python3 bench/dual/torch_dual.py --verify dual/best.safetensors pairs.safetensors emb.safetensors

  # 2. Time a training step (forward, InfoNCE, backward, clip, AdamW) and embedding throughput,
  #    the PyTorch side of bench/dual/bench.sh (same model, batch and threads as the Rust example
  #    tools/luminome-engine/examples/bench_dual.rs).
  python3 bench/dual/torch_dual.py --bench --threads 1 --attention genetic

Parameter names (state_dict keys) as Luminome writes them: encoder.* (--shared-encoder) or
query_encoder.* and passage_encoder.*, each tok_emb.weight, pos_emb.weight,
layers.{i}.{ln1,attn.qkv,attn.out,ln2,ffn.up,ffn.down}.*, final_norm.*.
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

MASK_BIAS = -1e9
# `--sdpa`: attention through F.scaled_dot_product_attention (PyTorch's fused kernel, what
# nn.TransformerEncoderLayer and most user code call) instead of softmax(QK^T/sqrt(d) + bias) V
# written out; the same function of the inputs (within float rounding).
USE_SDPA = False


class Attention(nn.Module):
    def __init__(self, d, heads, kind, dropout=0.0):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.heads = heads
        self.kind = kind
        # Dropout on the attention probabilities, as Luminome's attention (training only).
        self.p = dropout

    def forward(self, x, mask):
        b, l, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).reshape(b, l, 3, h, d // h).permute(2, 0, 3, 1, 4)
        if self.kind != "standard":
            # Spec section 4: V_norm = sigmoid(V); Phi_g = mean over the (unmasked) positions;
            # gamma_g = (sum_s (Phi_g + 0.5) / (Phi_s + 0.5))^-1; V_genetic = V * gamma.
            m = mask.to(v.dtype)[:, None, :, None]  # [B, 1, L, 1]
            phi = (torch.sigmoid(v) * m).sum(2, keepdim=True) / m.sum(2, keepdim=True).clamp(min=1)
            ratio = (phi + 0.5).unsqueeze(-1) / (phi + 0.5).unsqueeze(-2)  # [..., g, s]
            gamma = 1.0 / ratio.sum(-1)
            if self.kind == "genetic-scaled":
                gamma = gamma * (d // h)
            v = v * gamma
        bias = ((mask.to(x.dtype) - 1.0) * -MASK_BIAS)[:, None, None, :]
        drop = self.p if self.training else 0.0
        if USE_SDPA:
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=drop)
            return self.out(o.transpose(1, 2).reshape(b, l, d))
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // h) + bias, dim=-1)
        p = F.dropout(p, drop, self.training)
        return self.out((p @ v).transpose(1, 2).reshape(b, l, d))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, eps = cfg["d_model"], cfg["layer_norm_eps"]
        self.ln1 = nn.LayerNorm(d, eps=eps)
        self.attn = Attention(d, cfg["num_heads"], cfg.get("attention", "standard"), cfg["dropout"])
        self.ln2 = nn.LayerNorm(d, eps=eps)
        self.ffn = nn.ModuleDict({"up": nn.Linear(d, cfg["ffn_dim"]), "down": nn.Linear(cfg["ffn_dim"], d)})
        self.p = cfg["dropout"]

    def forward(self, x, mask):
        x = x + F.dropout(self.attn(self.ln1(x), mask), self.p, self.training)
        f = self.ffn["down"](F.dropout(F.gelu(self.ffn["up"](self.ln2(x))), self.p, self.training))
        return x + F.dropout(f, self.p, self.training)


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        assert cfg["position"] == "learned"
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["d_model"])
        self.pos_emb = nn.Embedding(cfg["max_length"], cfg["d_model"])
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg["num_layers"]))
        self.final_norm = nn.LayerNorm(cfg["d_model"], eps=cfg["layer_norm_eps"])
        self.p = cfg["dropout"]

    def forward(self, ids, mask):
        x = self.tok_emb(ids) + self.pos_emb.weight[: ids.shape[1]]
        x = F.dropout(x, self.p, self.training)
        for layer in self.layers:
            x = layer(x, mask)
        return self.final_norm(x)


class DualEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        enc = cfg["encoder"]
        self.shared = cfg["shared"]
        self.temperature = cfg["temperature"]
        if self.shared:
            self.encoder = Encoder(enc)
        else:
            self.query_encoder = Encoder(enc)
            self.passage_encoder = Encoder(enc)

    def embed(self, side, ids, mask):
        enc = self.encoder if self.shared else (self.query_encoder if side == "query" else self.passage_encoder)
        h = enc(ids, mask)
        m = mask.to(h.dtype)[:, :, None]
        pooled = (h * m).sum(1) / (m.sum(1) + 1e-9)  # spec: mean over the attention mask
        return F.normalize(pooled, dim=-1)

    def loss(self, q_ids, q_mask, p_ids, p_mask):
        q = self.embed("query", q_ids, q_mask)
        p = self.embed("passage", p_ids, p_mask)
        return F.cross_entropy(q @ p.T / self.temperature, torch.arange(q.shape[0]))


def load_luminome(ckpt):
    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(ckpt, "pt") as f:
        meta = json.loads(f.metadata()["luminome"])
    model = DualEncoder(meta["model"])
    state = load_file(ckpt)
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not missing and not unexpected, (missing, unexpected)
    return model.eval()


def verify(ckpt, pairs, emb):
    from safetensors.numpy import load_file

    model = load_luminome(ckpt)
    d = load_file(pairs)
    e = load_file(emb)
    worst = 0.0
    for side in ("query", "passage"):
        ids = torch.tensor(d[f"{side}_ids"].astype("int64"))
        mask = torch.tensor(d[f"{side}_mask"].astype("float32"))
        groups = d[f"{side}_group"]
        # luminome-predict writes one embedding per distinct query/passage, in order of first
        # appearance (no --corpus).
        first = sorted({int(g): i for i, g in reversed(list(enumerate(groups)))}.items())
        rows = [i for _, i in first]
        with torch.no_grad():
            mine = model.embed(side, ids[rows], mask[rows]).numpy()
        theirs = e[side]
        assert mine.shape == theirs.shape, (side, mine.shape, theirs.shape)
        diff = float(abs(mine - theirs).max())
        worst = max(worst, diff)
        print(f"{side}: {len(rows)} embeddings, max |torch - luminome| = {diff:.2e}")
    assert worst < 1e-4, worst
    print("ok")


def bench(a):
    global USE_SDPA
    USE_SDPA = a.sdpa
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    enc = {
        "vocab_size": 4101, "d_model": a.d_model, "num_layers": a.layers, "num_heads": a.heads,
        "ffn_dim": a.ffn, "dropout": 0.1, "max_length": max(a.query_len, a.passage_len),
        "position": "learned", "layer_norm_eps": 1e-5, "attention": a.attention,
    }
    model = DualEncoder({"encoder": enc, "shared": a.shared, "temperature": 0.05})
    b = a.batch
    # The same token pattern as bench_dual.rs: [CLS], k-mer ids, [SEP], no padding.
    def ids(length, salt):
        return torch.tensor([[1 if j == 0 else 2 if j == length - 1 else 5 + (i * 131 + j * 17 + salt) % 4096
                              for j in range(length)] for i in range(b)])
    q_ids, p_ids = ids(a.query_len, 0), ids(a.passage_len, 7)
    q_mask, p_mask = torch.ones(b, a.query_len), torch.ones(b, a.passage_len)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    model.train()
    times = []
    for step in range(a.steps + 3):
        t0 = time.perf_counter()
        loss = model.loss(q_ids, q_mask, p_ids, p_mask)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step >= 3:
            times.append(time.perf_counter() - t0)
    model.eval()
    inf = []
    with torch.inference_mode():
        for _ in range(a.steps + 3):
            t0 = time.perf_counter()
            model.embed("passage", p_ids, p_mask).tolist()
            inf.append(time.perf_counter() - t0)
    train_ms = statistics.median(times) * 1e3
    inf_ms = statistics.median(inf[3:]) * 1e3
    print(f"torch {torch.__version__} threads {a.threads} attention {a.attention} sdpa {a.sdpa}")
    print(f"train_step_ms median {train_ms:.1f}")
    print(f"embed_batch_ms median {inf_ms:.1f} ({b / inf_ms * 1e3:.0f} passages/s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verify", nargs=3, metavar=("CHECKPOINT", "PAIRS", "EMBEDDINGS"))
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--attention", default="standard", choices=["standard", "genetic", "genetic-scaled"])
    ap.add_argument("--sdpa", action="store_true", help="attention through F.scaled_dot_product_attention")
    ap.add_argument("--shared", action="store_true", default=True)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=256)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--query-len", type=int, default=122)
    ap.add_argument("--passage-len", type=int, default=497)
    a = ap.parse_args()
    if a.verify:
        verify(*a.verify)
    elif a.bench:
        bench(a)
    else:
        ap.error("--verify or --bench")


if __name__ == "__main__":
    main()
