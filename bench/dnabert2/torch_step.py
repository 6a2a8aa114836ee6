#!/usr/bin/env python3
"""PyTorch peer of `luminome-train classify --init CHECKPOINT --adapter mean` (our own script).

The same model as Luminome trains: the authors' encoder — DNABERT-2's `bert_layers.BertModel`
(--family dnabert2, the default; its pure-PyTorch attention path, Triton off) or the Nucleotide
Transformer v2's `modeling_esm.EsmModel` (--family nt_v2, the published remote code) — imported
from --src (kept outside this repository), loaded from the same checkpoint folder, under a
masked-mean adapter + Linear(hidden, 2). A
training step on a batch of the same token dataset (rows as stored, --batch-size records drawn
with a seeded generator): forward in train mode (dropout as configured), cross-entropy, backward,
gradient-norm clipping at 1.0, AdamW (lr 3e-5, weight decay 0.01). Inference: eval-mode forward
of --infer-batch records under torch.inference_mode(). Three warm-up iterations, then the median
of --steps; f32, or bf16 autocast with --precision bf16.

    python3 bench/dnabert2/torch_step.py --src SRC --checkpoint DIR --dataset train.safetensors \
        --device cuda [--steps 20] [--batch-size 32] [--threads N]
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
from safetensors.numpy import load_file


def load_encoder(src, checkpoint):
    sys.path.insert(0, src)
    sys.modules["dnabert2.flash_attn_triton"] = None  # the authors' except-branch: no Triton
    import dnabert2.bert_layers as BL
    from dnabert2.configuration_bert import BertConfig
    assert BL.flash_attn_qkvpacked_func is None
    cfg = json.load(open(os.path.join(checkpoint, "config.json")))
    kwargs = {k: v for k, v in cfg.items() if k not in ("auto_map", "_name_or_path")}
    # The published config has no pad_token_id: transformers 4.x defaults it to None on every
    # config, newer versions (the GPU host's, 2026-11-27) leave the attribute out and the
    # authors' embeddings fail reading it. None is what the published model gets (no padding_idx).
    kwargs.setdefault("pad_token_id", None)
    config = BertConfig(**kwargs)
    encoder = BL.BertModel(config, add_pooling_layer=False)
    weights = load_file(os.path.join(checkpoint, "model.safetensors"))
    state = {k[len("bert."):]: torch.from_numpy(v) for k, v in weights.items() if k.startswith("bert.")}
    missing, unexpected = encoder.load_state_dict(state, strict=False)
    assert not missing, missing
    return encoder, config


def shim_removed_pruning_helpers():
    """The published modeling_esm.py imports two head-pruning helpers that transformers 5 removed
    (the GPU host's version): stand-ins that refuse, so the import works. Pruning is never called
    here; every other name the authors' code uses is unchanged."""
    import transformers.pytorch_utils as PU

    def removed(*_args, **_kwargs):
        raise NotImplementedError("head pruning: removed in transformers 5, unused by this benchmark")

    for name in ("find_pruneable_heads_and_indices", "prune_linear_layer"):
        if not hasattr(PU, name):
            setattr(PU, name, removed)


# Attributes every transformers 4.x config carried by default and the authors' code reads;
# transformers 5 no longer sets them unless the config file names them. The 4.x values.
V4_CONFIG_DEFAULTS = {
    "is_decoder": False, "add_cross_attention": False, "chunk_size_feed_forward": 0,
    "output_attentions": False, "output_hidden_states": False, "use_return_dict": True,
    "pruned_heads": {}, "tie_word_embeddings": True, "torchscript": False,
}


def fill_v4_config_defaults(config):
    for name, value in V4_CONFIG_DEFAULTS.items():
        try:
            getattr(config, name)
        except AttributeError:
            setattr(config, name, value)


def restore_v4_mask_helpers(cls):
    """transformers 5 dropped PreTrainedModel.get_extended_attention_mask / get_head_mask, which
    the published EsmModel.forward calls: their 4.x bodies for a 2-D padding mask, where missing."""
    def get_extended_attention_mask(self, attention_mask, input_shape, device=None, dtype=None):
        dtype = dtype or self.dtype
        extended = attention_mask[:, None, None, :].to(dtype)
        return (1.0 - extended) * torch.finfo(dtype).min

    def get_head_mask(self, head_mask, num_hidden_layers, is_attention_chunked=False):
        assert head_mask is None, "head masks are not used by this benchmark"
        return [None] * num_hidden_layers

    for name, body in (("get_extended_attention_mask", get_extended_attention_mask),
                       ("get_head_mask", get_head_mask)):
        if not hasattr(cls, name):
            setattr(cls, name, body)


def load_nt_v2(src, checkpoint):
    """The authors' EsmModel (no pooler) with the checkpoint's esm.* weights."""
    sys.path.insert(0, src)
    shim_removed_pruning_helpers()
    import ntv2.modeling_esm as M
    from ntv2.esm_config import EsmConfig
    restore_v4_mask_helpers(M.EsmModel)
    config = EsmConfig.from_pretrained(checkpoint)
    fill_v4_config_defaults(config)
    encoder = M.EsmModel(config, add_pooling_layer=False)
    weights = load_file(os.path.join(checkpoint, "model.safetensors"))
    state = {k[len("esm."):]: torch.from_numpy(v) for k, v in weights.items() if k.startswith("esm.")}
    missing, unexpected = encoder.load_state_dict(state, strict=False)
    assert not missing, missing
    return encoder, config


class MeanAdapter(torch.nn.Module):
    def __init__(self, encoder, hidden, family):
        super().__init__()
        self.encoder = encoder
        self.head = torch.nn.Linear(hidden, 2)
        self.family = family

    def forward(self, ids, mask):
        if self.family == "nt_v2":
            h = self.encoder(ids, attention_mask=mask).last_hidden_state
        else:
            h = self.encoder(ids, attention_mask=mask, output_all_encoded_layers=False)[0]
        m = mask.unsqueeze(-1).to(h.dtype)
        return self.head((h * m).sum(1) / m.sum(1).clamp(min=1e-6))


def timed(fn, steps, device):
    times = []
    for i in range(steps + 3):
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        if i >= 3:
            times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", required=True)
    ap.add_argument("--family", choices=["dnabert2", "nt_v2"], default="dnabert2")
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--infer-batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    load = load_nt_v2 if args.family == "nt_v2" else load_encoder
    encoder, config = load(args.src, args.checkpoint)
    model = MeanAdapter(encoder, config.hidden_size, args.family).to(args.device)
    data = load_file(args.dataset)
    ids = torch.from_numpy(data["input_ids"].astype(np.int64))
    mask = torch.from_numpy(data["attention_mask"].astype(np.int64))
    labels = torch.from_numpy(data["labels"].astype(np.int64))
    labels = (labels == labels.max()).long()
    gen = torch.Generator().manual_seed(1)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-5, weight_decay=0.01)
    autocast = torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.precision == "bf16")

    def batch(n):
        rows = torch.randint(0, ids.shape[0], (n,), generator=gen)
        return (ids[rows].to(args.device), mask[rows].to(args.device), labels[rows].to(args.device))

    def train_step():
        x, m, y = batch(args.batch_size)
        model.train()
        with autocast:
            loss = torch.nn.functional.cross_entropy(model(x, m), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def infer():
        x, m, _ = batch(args.infer_batch)
        model.eval()
        with torch.inference_mode(), autocast:
            model(x, m)

    step = timed(train_step, args.steps, args.device)
    inf = timed(infer, args.steps, args.device)
    peak = torch.cuda.max_memory_allocated() / 2**20 if args.device == "cuda" else float("nan")
    print(f"{args.family} pytorch {args.precision} {args.device}: rows of {ids.shape[1]} tokens; "
          f"train_step_ms median {step:.1f} (batch {args.batch_size}, {args.batch_size / step * 1000:.0f} records/s); "
          f"inference_batch_ms median {inf:.1f} (batch {args.infer_batch}, {args.infer_batch / inf * 1000:.0f} records/s); "
          f"torch peak allocated MiB {peak:.0f}; torch {torch.__version__}")


if __name__ == "__main__":
    main()
