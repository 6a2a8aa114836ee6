#!/usr/bin/env python3
"""Save a RANDOM Nucleotide Transformer v2 checkpoint at a published size, Hugging Face layout.

Our own script, for speed benchmarks only: the weights are the authors' random initialisation
(their EsmForMaskedLM from the published config.json of nucleotide-transformer-v2-50m-multi-species,
seed 50), no published weights are used. The published config.json and tokenizer files are copied
from --hub (copies kept outside this repository; tests/fixtures/nt_v2/README.md), so the folder
has exactly the published layout: config.json (no model_type, as published), model.safetensors
(names esm.* and lm_head.*), vocab.txt, tokenizer_config.json, special_tokens_map.json.

  nice /work/venvs/dnabert2-ref/bin/python bench/nt_v2/make_random_checkpoint.py \
      [--out /work/bench-data/nt_v2_50m_random]
"""

import argparse
import os
import shutil
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "bench", "reference", "nt_v2"))
from make_fixtures import DEFAULT_SRC, TOKENIZER_FILES, import_authors  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default=DEFAULT_SRC, help="folder holding the authors' package ntv2/")
    ap.add_argument("--hub", default=os.path.join(DEFAULT_SRC, "hub"), help="the published config/tokenizer files")
    ap.add_argument("--out", default="/work/bench-data/nt_v2_50m_random")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    assert not out.startswith(REPO_ROOT + os.sep), f"write checkpoints outside the repository: {out}"

    import torch
    M, EsmConfig, _ = import_authors(args.src, args.hub)
    config = EsmConfig.from_pretrained(args.hub)
    torch.manual_seed(50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = M.EsmForMaskedLM(config).eval()
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    # The published files, not save_pretrained's (which adds model_type and a newer version).
    for f in ("config.json",) + TOKENIZER_FILES:
        shutil.copyfile(os.path.join(args.hub, f), os.path.join(out, f))
    n = sum(p.numel() for p in model.esm.parameters())
    print(f"{out}: encoder parameters {n:,}; total {sum(p.numel() for p in model.parameters()):,}")


if __name__ == "__main__":
    main()
