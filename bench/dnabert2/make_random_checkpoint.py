#!/usr/bin/env python3
"""Save a RANDOM DNABERT-2 checkpoint at the published size (DNABERT-2-117M), Hugging Face layout.

Our own script, for speed benchmarks and the GPU session only: the weights are the authors'
random initialisation (their BertForMaskedLM from the published config.json, seed 117), no
published weights are used. The published config.json and tokenizer files are copied from
--hub (a copy of the hub files kept outside this repository; tests/fixtures/dnabert2/README.md),
so the folder has exactly the published layout: config.json, model.safetensors (the decoder
weight tied to the word embeddings is left out by save_pretrained, as in a published save),
tokenizer.json, tokenizer_config.json.

  nice /work/venvs/dnabert2-ref/bin/python bench/dnabert2/make_random_checkpoint.py \
      [--out /work/bench-data/dnabert2_117m_random]
"""

import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "bench", "reference", "dnabert2"))
from make_fixtures import DEFAULT_SRC, import_authors  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default=DEFAULT_SRC, help="folder holding the authors' package dnabert2/")
    ap.add_argument("--hub", default=os.path.join(DEFAULT_SRC, "hub"), help="the published config/tokenizer files")
    ap.add_argument("--out", default="/work/bench-data/dnabert2_117m_random")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    assert not out.startswith(REPO_ROOT + os.sep), f"write checkpoints outside the repository: {out}"

    import torch
    BL, BertConfig, _ = import_authors(args.src)
    published = json.load(open(os.path.join(args.hub, "config.json")))
    torch.manual_seed(117)
    config = BertConfig(**{k: v for k, v in published.items() if k not in ("auto_map", "_name_or_path")})
    model = BL.BertForMaskedLM(config).eval()
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    # The published config.json itself (save_pretrained writes its own view of the class).
    shutil.copy(os.path.join(args.hub, "config.json"), os.path.join(out, "config.json"))
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(args.hub, f), os.path.join(out, f))
    n = sum(p.numel() for p in model.bert.parameters())
    print(json.dumps(dict(out=out, encoder_parameters=n,
                          files={f: os.path.getsize(os.path.join(out, f)) for f in sorted(os.listdir(out))})))


if __name__ == "__main__":
    main()
