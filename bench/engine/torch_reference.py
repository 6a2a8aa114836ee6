#!/usr/bin/env python3
"""Writes the PyTorch reference fixture that the Rust tests compare Luminome's forward pass,
gates and gradients against (tools/luminome-predict/tests/fixtures/torch_reference/).

For each adapter (cls, mean, max, gated) it builds a tiny classifier with random weights (every
parameter random, biases and layer-norm scales included, so no term can hide behind a zero or a
one), saves the weights as a Luminome checkpoint (`tiny_<adapter>.safetensors`: the checkpoint
layout of luminome-engine, f32 weights, `__metadata__` with the model config and tokenizer), and
records, computed in float64 from those f32 weights:

  input_ids, attention_mask       [B, L]  three records of different lengths, padded
  <adapter>.logits                [B, C]
  gated.gates                     [B, L, D]  g_i^final ⊙ m_i of the DynamicGated adapter
  <adapter>.saliency              [B, L]  gradient × input: Σ_d x_d ∂f/∂x_d on token embeddings
  <adapter>.ig                    [B, L]  integrated gradients, zero-embedding baseline
                                          on sequence tokens (specials and padding kept),
                                          32 midpoint steps

with f = logit[target] − mean_c logit[c], target = class 1 (the explained output of
luminome-importance). The Rust side needs no torch: it reads these files.

Usage (from the repository root; needs torch, numpy, safetensors):
    python3 bench/engine/torch_reference.py [output folder]
"""
import json
import os
import sys

import numpy as np
import torch
from safetensors.numpy import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_model import Classifier, model_config  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "tools/luminome-predict/tests/fixtures/torch_reference"
TARGET = 1
IG_STEPS = 32

TOKENIZER = {
    "scheme": "nucleotide",
    "vocab": ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]", "A", "C", "G", "T", "N"],
    "pad_id": 0,
    "unk_id": 4,
    "cls_id": 1,
    "sep_id": 2,
    "mask_id": 3,
    "add_cls": True,
    "add_sep": True,
    "k": None,
    "kmer_step": None,
    "hf_tokenizer_json": None,
}
SPECIAL_IDS = (0, 1, 2)


def tiny_config(adapter):
    return model_config(adapter, vocab_size=10, d_model=8, num_layers=2, num_heads=2, ffn_dim=16,
                        max_length=12, dropout=0.1, num_classes=2, layer_norm_eps=1e-5)


def randomise(model, gen):
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("norm.weight") or ".ln" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif p.dim() == 1:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.4 * torch.randn(p.shape, generator=gen))


def inputs():
    # [CLS] seq [SEP] padded to 12; lengths 10, 7 and 4 bases.
    seqs = ["ACGTTATAGC", "GGCATTA", "TTGA"]
    code = {"A": 5, "C": 6, "G": 7, "T": 8}
    ids = np.zeros((3, 12), dtype=np.int64)
    for i, s in enumerate(seqs):
        row = [1] + [code[b] for b in s] + [2]
        ids[i, : len(row)] = row
    return ids, (ids != 0).astype(np.int64)


def explained(logits):
    return logits[:, TARGET] - logits.mean(dim=1)


def saliency(model, emb, mask):
    x = emb.clone().requires_grad_(True)
    logits, _ = model.forward_from_embeddings(x, mask)
    (grad,) = torch.autograd.grad(explained(logits).sum(), x)
    return (x * grad).sum(-1).detach()


def integrated_gradients(model, emb, mask, ids):
    keep = torch.tensor(np.isin(ids, SPECIAL_IDS), dtype=emb.dtype)[:, :, None]
    base = emb * keep
    total = torch.zeros_like(emb)
    for k in range(IG_STEPS):
        a = (k + 0.5) / IG_STEPS
        x = (base + a * (emb - base)).clone().requires_grad_(True)
        logits, _ = model.forward_from_embeddings(x, mask)
        (grad,) = torch.autograd.grad(explained(logits).sum(), x)
        total += grad
    return ((emb - base) * total / IG_STEPS).sum(-1).detach()


def checkpoint_metadata(cfg):
    meta = {
        "kind": "luminome.checkpoint",
        "format_version": 1,
        "model": cfg,
        "tokenizer": TOKENIZER,
        "step": 0,
        "metrics": {},
        "sources": [],
        "tool": "bench/engine/torch_reference.py",
        "tool_version": f"torch {torch.__version__}",
        "command_line": " ".join(sys.argv),
    }
    return {"kind": "luminome.checkpoint", "format_version": "1", "luminome": json.dumps(meta)}


def main():
    os.makedirs(OUT, exist_ok=True)
    ids, mask = inputs()
    expected = {"input_ids": ids, "attention_mask": mask}
    for i, adapter in enumerate(["cls", "mean", "max", "gated"]):
        cfg = tiny_config(adapter)
        gen = torch.Generator().manual_seed(1000 + i)
        model = Classifier(cfg)
        randomise(model, gen)
        weights = {k: v.detach().float().numpy().copy() for k, v in model.state_dict().items()}
        save_file(weights, os.path.join(OUT, f"tiny_{adapter}.safetensors"), metadata=checkpoint_metadata(cfg))
        model = model.double().eval()
        t_ids, t_mask = torch.tensor(ids), torch.tensor(mask)
        emb = model.embed(t_ids).detach()
        with torch.no_grad():
            logits, gates = model.forward_from_embeddings(emb, t_mask)
        expected[f"{adapter}.logits"] = logits.float().numpy()
        if gates is not None:
            expected[f"{adapter}.gates"] = gates.float().numpy()
        expected[f"{adapter}.saliency"] = saliency(model, emb, t_mask).float().numpy()
        expected[f"{adapter}.ig"] = integrated_gradients(model, emb, t_mask, ids).float().numpy()
        print(adapter, "logits", logits.numpy().round(4).tolist(), file=sys.stderr)
    save_file(
        expected,
        os.path.join(OUT, "expected.safetensors"),
        metadata={"target_class": str(TARGET), "ig_steps": str(IG_STEPS), "torch": torch.__version__},
    )


if __name__ == "__main__":
    main()
