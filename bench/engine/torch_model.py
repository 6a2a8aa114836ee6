"""The Luminome sequence classifier (pre-LN transformer encoder + one of four adapters) in
PyTorch, written independently from the Rust engine but with the same parameter names, so a
Luminome checkpoint's safetensors loads with `load_state_dict` and vice versa.

Used by torch_reference.py (the forward/gradient fixture for the Rust tests) and
torch_bench.py (the PyTorch side of docs/benchmarks.md).

Parameter names (state_dict keys):
  encoder.tok_emb.weight [V, D], encoder.pos_emb.weight [max_length, D] (learned positions)
  encoder.layers.{i}.{ln1,ln2}.{weight,bias}
  encoder.layers.{i}.attn.qkv.{weight [3D, D], bias}   (q, k, v stacked in this order)
  encoder.layers.{i}.attn.out.{weight, bias}
  encoder.layers.{i}.ffn.up.{weight [F, D], bias}, ffn.down.{weight [D, F], bias}
  encoder.final_norm.{weight,bias}
  adapter.head.{weight [C, D], bias}                    (every adapter)
  adapter.gate.{weight [D, 2D], bias}, adapter.query.*, adapter.key.*, adapter.norm.*  (gated)

The dilated residual CNN (`--backbone cnn`) is written the way a PyTorch user would write it, with
nn.Conv1d (channels first, padding "same"); its weights are [out, in, k] where Luminome stores
[out, k·in] tap-major, i.e. luminome = torch.permute(0, 2, 1).reshape(out, k·in):
  cnn.first.{weight, bias}, cnn.layers.{i}.{weight, bias}, cnn.final_norm.{weight, bias}
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

MASK_BIAS = -1e9


class SelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.num_heads = num_heads
        # Dropout on the attention probabilities when training, as the Rust engine (BERT's
        # attention_probs_dropout) applies it.
        self.dropout = dropout

    def forward(self, x, bias):
        b, l, d = x.shape
        h = self.num_heads
        qkv = self.qkv(x).reshape(b, l, 3, h, d // h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        # bias: [B, 1, 1, L] additive (0 kept, -1e9 padding); SDPA scales by 1/sqrt(Dh).
        p = self.dropout if self.training else 0.0
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=p)
        return self.out(ctx.transpose(1, 2).reshape(b, l, d))


class FeedForward(nn.Module):
    def __init__(self, d_model, ffn_dim):
        super().__init__()
        self.up = nn.Linear(d_model, ffn_dim)
        self.down = nn.Linear(ffn_dim, d_model)

    def forward(self, x, dropout, training):
        h = F.gelu(self.up(x))  # exact (erf) GELU
        return self.down(F.dropout(h, dropout, training))


class EncoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, eps = cfg["d_model"], cfg["layer_norm_eps"]
        self.ln1 = nn.LayerNorm(d, eps=eps)
        self.attn = SelfAttention(d, cfg["num_heads"], cfg["dropout"])
        self.ln2 = nn.LayerNorm(d, eps=eps)
        self.ffn = FeedForward(d, cfg["ffn_dim"])
        self.dropout = cfg["dropout"]

    def forward(self, x, bias):
        p, t = self.dropout, self.training
        x = x + F.dropout(self.attn(self.ln1(x), bias), p, t)
        return x + F.dropout(self.ffn(self.ln2(x), p, t), p, t)


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        assert cfg["position"] == "learned", "only learned positions are mirrored here"
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["d_model"])
        self.pos_emb = nn.Embedding(cfg["max_length"], cfg["d_model"])
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg["num_layers"]))
        self.final_norm = nn.LayerNorm(cfg["d_model"], eps=cfg["layer_norm_eps"])
        self.dropout = cfg["dropout"]

    def forward_from_embeddings(self, emb, mask):
        l = emb.shape[1]
        x = emb + self.pos_emb.weight[:l]
        x = F.dropout(x, self.dropout, self.training)
        bias = ((mask.to(emb.dtype) - 1.0) * -MASK_BIAS)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, bias)
        return self.final_norm(x)


class LinearHead(nn.Module):
    """LinearCLS / LinearMeanPool / LinearMaxPool."""

    def __init__(self, kind, d_model, num_classes):
        super().__init__()
        self.kind = kind
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, h, mask):
        m = mask.to(h.dtype)[:, :, None]
        if self.kind == "cls":
            pooled = h[:, 0]
        elif self.kind == "mean":
            pooled = (h * m).sum(1) / (m.sum(1) + 1e-9)
        else:
            pooled = (h + (m - 1.0) * -MASK_BIAS).max(1).values
        return self.head(pooled), None


class DynamicGated(nn.Module):
    """The adapters spec, §2 (docs/engine.md): g_base = σ(W_g [h_CLS; h_i]), α_i = σ(s q_CLSᵀ k_i),
    g_final = g_base ⊙ α, z = Σ g_final ⊙ h_i ⊙ m_i (m_0 = 0 for CLS), y = W LayerNorm(z).
    s: the checkpoint's gate_score_scale (1/√D in new models; 1, the spec's, when absent)."""

    def __init__(self, d_model, num_classes, eps, score_scale=1.0):
        super().__init__()
        self.score_scale = score_scale
        self.gate = nn.Linear(2 * d_model, d_model)
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, h, mask):
        b, l, d = h.shape
        h_cls = h[:, 0]
        pair = torch.cat([h_cls[:, None, :].expand(b, l, d), h], dim=-1)
        g_base = torch.sigmoid(self.gate(pair))
        score = (self.key(h) * self.query(h_cls)[:, None, :]).sum(-1, keepdim=True)
        alpha = torch.sigmoid(score * self.score_scale)
        m = mask.to(h.dtype).clone()
        m[:, 0] = 0.0
        gates = g_base * alpha * m[:, :, None]
        z = (gates * h).sum(1)
        return self.head(self.norm(z)), gates


class DilatedResidualCnn(nn.Module):
    """One-hot bases -> Conv1d(first_kernel) + ReLU, then blocks h + Dropout(ReLU(Conv1d(k,
    dilation 2^i)(h))), padding held at zero before every convolution, final LayerNorm."""

    def __init__(self, cfg):
        super().__init__()
        self.vocab_size = cfg["vocab_size"]
        c = cfg["channels"]
        self.first = nn.Conv1d(self.vocab_size, c, cfg["first_kernel"], padding="same")
        self.layers = nn.ModuleList(
            nn.Conv1d(c, c, cfg["kernel"], dilation=2 ** i, padding="same")
            for i in range(cfg["num_layers"])
        )
        self.final_norm = nn.LayerNorm(c, eps=cfg["layer_norm_eps"])
        self.dropout = cfg["dropout"]
        # One ReLU module per use (no parameters): tangermeme's DeepLIFT hooks attach to modules
        # and keep each one's input and output (bench/importance/deeplift_tangermeme.py).
        self.relus = nn.ModuleList(nn.ReLU() for _ in range(cfg["num_layers"] + 1))

    def embed(self, ids):
        return F.one_hot(ids, self.vocab_size).float()

    def forward_from_embeddings(self, x, mask):
        m = mask.unsqueeze(1)  # [B, 1, L]
        x = x.transpose(1, 2) * m
        h = self.relus[0](self.first(x)) * m
        for conv, relu in zip(self.layers, self.relus[1:]):
            h = h + F.dropout(relu(conv(h)), self.dropout, self.training) * m
        return self.final_norm(h.transpose(1, 2))


class Classifier(nn.Module):
    def __init__(self, model_cfg):
        super().__init__()
        if "cnn" in model_cfg:
            enc = model_cfg["cnn"]
            self.cnn = DilatedResidualCnn(enc)
            width = enc["channels"]
        else:
            enc = model_cfg["encoder"]
            self.encoder = Encoder(enc)
            width = enc["d_model"]
        kind = model_cfg["adapter"]
        c = model_cfg["num_classes"]
        if kind == "gated":
            self.adapter = DynamicGated(width, c, enc["layer_norm_eps"],
                                        model_cfg.get("gate_score_scale", 1.0))
        else:
            self.adapter = LinearHead(kind, width, c)

    def backbone(self):
        return self.cnn if hasattr(self, "cnn") else self.encoder

    def embed(self, ids):
        if hasattr(self, "cnn"):
            return self.cnn.embed(ids)
        return self.encoder.tok_emb(ids)

    def forward_from_embeddings(self, emb, mask):
        return self.adapter(self.backbone().forward_from_embeddings(emb, mask), mask)

    def forward(self, ids, mask):
        """Returns (logits [B, C], gates [B, L, D] or None)."""
        return self.forward_from_embeddings(self.embed(ids), mask)


def cnn_config(adapter, vocab_size=10, channels=128, num_layers=7, kernel=3, first_kernel=15,
               max_length=72, dropout=0.1, num_classes=2, layer_norm_eps=1e-5):
    """A Luminome classifier `ModelConfig` with the dilated residual CNN backbone."""
    return {
        "kind": "classifier",
        "cnn": {
            "vocab_size": vocab_size,
            "channels": channels,
            "first_kernel": first_kernel,
            "kernel": kernel,
            "num_layers": num_layers,
            "dropout": dropout,
            "max_length": max_length,
            "layer_norm_eps": layer_norm_eps,
            "pad_id": 0,
        },
        "adapter": adapter,
        "num_classes": num_classes,
        "label_values": list(range(num_classes)),
    }


def model_config(adapter, vocab_size=10, d_model=128, num_layers=4, num_heads=4, ffn_dim=512,
                 max_length=72, dropout=0.1, num_classes=2, layer_norm_eps=1e-5):
    """A Luminome `ModelConfig` (classifier) as the checkpoint metadata stores it."""
    return {
        "kind": "classifier",
        "encoder": {
            "vocab_size": vocab_size,
            "d_model": d_model,
            "num_layers": num_layers,
            "num_heads": num_heads,
            "ffn_dim": ffn_dim,
            "dropout": dropout,
            "max_length": max_length,
            "position": "learned",
            "layer_norm_eps": layer_norm_eps,
            "pad_id": 0,
        },
        "adapter": adapter,
        "num_classes": num_classes,
        "label_values": list(range(num_classes)),
    }

