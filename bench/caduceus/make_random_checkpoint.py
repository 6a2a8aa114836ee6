#!/usr/bin/env python3
"""Save a RANDOM Caduceus checkpoint at a published PlantCaduceus size (Hugging Face layout).

Our own script, for speed benchmarks only (the weights are random; no published weights are
used). Architecture as the PlantCaduceus checkpoints: CaduceusForMaskedLM, rcps, bidirectional
(add, weight tie), fused_add_norm, RMSNorm, residual_in_fp32 false, ssm_cfg d_state 16 / d_conv 4 /
expand 2 / dt_rank auto, GPN-style 7-token vocabulary padded to 8, complement map a<->t c<->g.
The tokenizer files and complement_map are copied from the `ps_rcps_fused` test fixture.
Parameters are perturbed exactly as make_fixtures.py does (cpu_patches.perturb), so the outputs
are not trivial.

Sizes (PlantCaduceus README: model size / embedding size):
  l20: d_model 384, 20 M    l24: d_model 512, 40 M    l28: d_model 768, 128 M    l32: d_model 1024, 225 M
n_layer is the number in the name; `--count-only` prints the parameter counts that confirm it.

  /work/venvs/caduceus-ref/bin/python bench/caduceus/make_random_checkpoint.py --count-only
  nice /work/venvs/caduceus-ref/bin/python bench/caduceus/make_random_checkpoint.py --size l20 \
      [--out /work/bench-data/plantcad_l20_random]
"""

import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "bench", "reference", "caduceus"))
from cpu_patches import DEFAULT_SRC, load_authors_package, perturb  # noqa: E402

PS_FIXTURE = os.path.join(REPO_ROOT, "tools", "luminome-engine", "tests", "fixtures", "caduceus", "ps_rcps_fused")
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]

# name -> (d_model, n_layer, published parameter count in millions)
SIZES = {"l20": (384, 20, 20), "l24": (512, 24, 40), "l28": (768, 28, 128), "l32": (1024, 32, 225)}
SEEDS = {"l20": 2020, "l24": 2024, "l28": 2028, "l32": 2032}


def make_config(d_model, n_layer):
    from caduceus.configuration_caduceus import CaduceusConfig
    ps_cfg = json.load(open(os.path.join(PS_FIXTURE, "config.json")))
    cmap = {int(k): int(v) for k, v in ps_cfg["complement_map"].items()}
    assert cmap == {0: 0, 1: 1, 2: 2, 3: 6, 4: 5, 5: 4, 6: 3, 7: 7}, cmap
    return CaduceusConfig(
        d_model=d_model, n_layer=n_layer, vocab_size=8, pad_vocab_size_multiple=8,
        ssm_cfg=dict(d_state=16, d_conv=4, expand=2, dt_rank="auto"),
        rms_norm=True, norm_epsilon=1e-5, residual_in_fp32=False, fused_add_norm=True,
        bidirectional=True, bidirectional_strategy="add", bidirectional_weight_tie=True,
        rcps=True, complement_map=cmap, pad_token_id=0)


def count_params(model):
    # model.parameters() yields each shared (tied) tensor once
    return sum(p.numel() for p in model.parameters())


def count_table():
    """Parameter counts for every published size: per_layer from 1- and 2-layer models."""
    import torch
    from caduceus.modeling_caduceus import CaduceusForMaskedLM
    rows = {}
    for name, (d, n_layer, published_m) in SIZES.items():
        torch.manual_seed(0)
        c1 = count_params(CaduceusForMaskedLM(make_config(d, 1)))
        c2 = count_params(CaduceusForMaskedLM(make_config(d, 2)))
        per_layer, base = c2 - c1, c1 - (c2 - c1)
        best = min(range(1, 400), key=lambda n: abs(base + n * per_layer - published_m * 1e6))
        rows[name] = dict(d_model=d, n_layer=n_layer, params=base + n_layer * per_layer,
                          per_layer=per_layer, base=base, published_millions=published_m,
                          n_layer_closest_to_published=best)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=sorted(SIZES), default="l20")
    ap.add_argument("--out", default=None, help="default /work/bench-data/plantcad_<size>_random (outside the repo)")
    ap.add_argument("--caduceus-src", default=os.environ.get("CADUCEUS_SRC", DEFAULT_SRC))
    ap.add_argument("--count-only", action="store_true", help="print parameter counts for all sizes and exit")
    args = ap.parse_args()

    import torch
    load_authors_package(args.caduceus_src)
    from caduceus.modeling_caduceus import CaduceusForMaskedLM
    from transformers import AutoModelForMaskedLM

    if args.count_only:
        for name, row in count_table().items():
            print(json.dumps(dict(size=name, **row)))
        return

    out = os.path.abspath(args.out or f"/work/bench-data/plantcad_{args.size}_random")
    assert not out.startswith(REPO_ROOT + os.sep), f"write checkpoints outside the repository: {out}"
    os.makedirs(out, exist_ok=True)

    d, n_layer, published_m = SIZES[args.size]
    seed = SEEDS[args.size]
    torch.manual_seed(seed)
    model = CaduceusForMaskedLM(make_config(d, n_layer))
    perturb(model, torch.Generator().manual_seed(seed + 1))
    model.tie_weights()
    assert model.lm_head.weight is model.get_input_embeddings().weight
    model.eval()
    n_params = count_params(model)
    model.save_pretrained(out, safe_serialization=True)
    for f in TOKENIZER_FILES:
        shutil.copy(os.path.join(PS_FIXTURE, f), os.path.join(out, f))

    # reload check from the folder alone, and a tiny forward for finiteness
    again, info = AutoModelForMaskedLM.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    ids = torch.randint(3, 7, (1, 64), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        a = model(input_ids=ids).logits
        b = again.eval()(input_ids=ids).logits
    assert torch.isfinite(a).all() and torch.equal(a, b)
    summary = dict(size=args.size, out=out, d_model=d, n_layer=n_layer, params=n_params,
                   published_millions=published_m, seed=seed, logits_absmax=a.abs().max().item(),
                   files={f: os.path.getsize(os.path.join(out, f)) for f in sorted(os.listdir(out))})
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
