#!/usr/bin/env python3
"""Generate GET region-model reference fixtures from the authors' PyTorch code.

Our own driver script. It imports `GETRegionFinetune` / `GETRegionPretrain` from the authors'
package (GET-Foundation/get_model, `get_model/model/model.py`), extracted to a folder OUTSIDE
this repository (--get-src or $GET_SRC), builds tiny random models from the authors' own hydra
model configs (`get_model/config/model/GETRegion{Finetune,Pretrain}.yaml`, sizes overridden),
runs them in eval mode on CPU and writes the fixtures under
tools/luminome-engine/tests/fixtures/get_region/. No stubs are needed: their model modules import
cleanly with omegaconf, hydra-core, torchmetrics and timm installed (see the fixtures' README).

Run (see tools/luminome-engine/tests/fixtures/get_region/README.md):
  nice /work/venvs/get-ref/bin/python bench/reference/get/make_fixtures.py --get-src /work/venvs/get-src
"""

import argparse
import json
import os
import sys

import torch

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DEFAULT_OUT = os.path.join(REPO_ROOT, "tools", "luminome-engine", "tests", "fixtures", "get_region")

# name, authors' yaml, sizes, batch, regions, seed, how the weights are written
FIXTURES = [
    ("finetune_tiny", "GETRegionFinetune",
     dict(num_motif=7, embed_dim=16, num_layers=2, num_heads=4, num_regions=12, output_dim=2), 2, 12, 11,
     "safetensors"),
    ("pretrain_tiny", "GETRegionPretrain",
     dict(num_motif=7, embed_dim=16, num_layers=2, num_heads=4, num_regions=12), 2, 12, 12,
     "safetensors"),
    # A Lightning-style checkpoint (`state_dict` with keys `model.`+name, plus the other entries
    # Lightning writes), no config.json: the loader infers the sizes, heads default to 12.
    ("finetune_ckpt", "GETRegionFinetune",
     dict(num_motif=5, embed_dim=12, num_layers=3, num_heads=12, num_regions=6, output_dim=2), 2, 6, 13,
     "ckpt"),
]


def model_cfg(get_src, yaml_name, sizes):
    """The authors' model config with the sizes overridden (interpolations resolve the rest)."""
    from omegaconf import OmegaConf
    cfg = OmegaConf.load(os.path.join(get_src, "get_model", "config", "model", f"{yaml_name}.yaml"))
    for k, v in sizes.items():
        cfg.model.cfg[k] = v
    OmegaConf.resolve(cfg)
    return cfg


def perturb(model, seed):
    """Weights with spread: the authors' init makes head_exp ~1e-5 (every output ≈ softplus(0)),
    LayerNorms identity and q/v biases zero, which would hide mistakes in those paths."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if p.dim() == 2:  # Linear weights: N(0, 1/fan_in)
                p.copy_(noise / p.shape[1] ** 0.5)
            elif name.endswith("norm1.weight") or name.endswith("norm2.weight") or name == "encoder.norm.weight":
                p.copy_(1.0 + 0.2 * noise)
            else:  # biases, q/v biases, cls and mask tokens
                p.copy_(0.3 * noise)


def build(get_src, yaml_name, sizes, seed):
    from get_model.model import model as get_models
    cfg = model_cfg(get_src, yaml_name, sizes)
    torch.manual_seed(seed)
    cls = getattr(get_models, yaml_name)
    assert cfg.model._target_ == f"get_model.model.model.{yaml_name}"
    assert cfg.model.cfg.flash_attn is False  # the pure-PyTorch Attention
    model = cls(cfg.model.cfg)
    perturb(model, seed + 1)
    model.eval()
    return model, cfg


def inputs(batch, regions, num_motif, seed, pretrain):
    """Features as GET's dataset gives them: motif scores in [0, 1], last column accessibility."""
    g = torch.Generator().manual_seed(seed + 2)
    x = torch.rand((batch, regions, num_motif), generator=g)
    x[:, :, -1] = torch.rand((batch, regions), generator=g)  # quantitative ATAC, max-normalised
    x[0, 0, :] = 0.0  # an empty region
    out = {"region_motif": x}
    if pretrain:
        mask = torch.rand((batch, regions), generator=g) < 0.4
        mask[:, 0] = True
        mask[:, 1] = False
        out["mask"] = mask
    return out


def run(model, inp, pretrain):
    """The authors' forward, and the encoder's output without the cls token (a forward hook)."""
    captured = {}
    hook = model.encoder.register_forward_hook(lambda m, a, o: captured.__setitem__("enc", o[0]))
    with torch.no_grad():
        if pretrain:
            x_masked, _, _ = model(inp["region_motif"], inp["mask"].unsqueeze(-1))
            out = {"masked": x_masked}
        else:
            out = {"exp": model(inp["region_motif"])}
    hook.remove()
    out["hidden"] = captured["enc"][:, 1:].contiguous()
    return out


def save_weights(model, cfg, sizes, folder, how, name):
    from safetensors.torch import save_file
    sd = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    if how == "safetensors":
        save_file(sd, os.path.join(folder, "model.safetensors"))
        config = {"model": cfg.model._target_.rsplit(".", 1)[1], **sizes}
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config, f, indent=2)
            f.write("\n")
    else:
        # What a Lightning checkpoint holds besides the weights (the run's hyper-parameters
        # as the omegaconf objects Lightning pickles, counters, optimizer state).
        ckpt = {
            "epoch": 3,
            "global_step": 120,
            "pytorch-lightning_version": "2.2.0",
            "state_dict": {"model." + k: v for k, v in sd.items()},
            "hyper_parameters": {"cfg": cfg},
            "optimizer_states": [{"state": {}, "param_groups": [{"lr": 1e-4}]}],
            "lr_schedulers": [],
        }
        torch.save(ckpt, os.path.join(folder, f"{name}.ckpt"))
    return sd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--get-src", default=os.environ.get("GET_SRC", "/work/venvs/get-src"))
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    sys.path.insert(0, args.get_src)
    torch.set_num_threads(1)
    summary = {}
    for name, yaml_name, sizes, batch, regions, seed, how in FIXTURES:
        pretrain = yaml_name == "GETRegionPretrain"
        model, cfg = build(args.get_src, yaml_name, sizes, seed)
        folder = os.path.join(args.out, name)
        os.makedirs(folder, exist_ok=True)
        sd = save_weights(model, cfg, sizes, folder, how, name)
        inp = inputs(batch, regions, sizes["num_motif"], seed, pretrain)
        out = run(model, inp, pretrain)
        from safetensors.torch import save_file
        save_file({k: v.to(torch.uint8) if v.dtype == torch.bool else v for k, v in inp.items()},
                  os.path.join(folder, "inputs.safetensors"))
        save_file(out, os.path.join(folder, "expected.safetensors"))
        summary[name] = {
            "tensors": {k: list(v.shape) for k, v in sd.items()},
            "outputs": {k: list(v.shape) for k, v in out.items()},
            "output_range": {k: [float(v.min()), float(v.max())] for k, v in out.items()},
        }
        print(name, json.dumps(summary[name]["outputs"]), json.dumps(summary[name]["output_range"]))
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
