#!/usr/bin/env python3
"""PyTorch side of the prediction-throughput benchmark (docs/benchmarks.md, "Prediction
throughput"): what `luminome-predict --checkpoint CK --dataset DS` does, in PyTorch.

Loads a Luminome classifier checkpoint into bench/engine/torch_model.py's Classifier (the same
parameter names, so `load_state_dict(strict=True)`), reads the token dataset, runs eval-mode
forward passes under torch.inference_mode() in batches of --batch-size (luminome-predict's
default, 64), and writes each record's class probabilities. Prints the forward time and the
sequences per second; with --compare PREDICTIONS.tsv (luminome-predict's output for the same
checkpoint and dataset) it also prints the largest probability difference.

    python3 bench/engine/torch_predict.py --checkpoint run/best.safetensors \\
        --dataset test.safetensors --threads 1 -o torch_preds.tsv [--compare preds.tsv]
"""
import argparse
import csv
import json
import os
import sys
import time

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_model import Classifier  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--compare", help="luminome-predict's predictions TSV for the same inputs")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    with safe_open(a.checkpoint, "pt") as handle:
        meta = json.loads(handle.metadata()["luminome"])
        weights = {k: handle.get_tensor(k) for k in handle.keys()}
    model = Classifier(meta["model"])
    model.load_state_dict(weights, strict=True)
    model.eval()

    data = load_file(a.dataset)
    ids = torch.from_numpy(data["input_ids"].astype(np.int64))
    mask = torch.from_numpy(data["attention_mask"].astype(np.float32))
    n = ids.shape[0]

    t0 = time.perf_counter()
    probs = []
    with torch.inference_mode():
        for s in range(0, n, a.batch_size):
            logits, _ = model(ids[s:s + a.batch_size], mask[s:s + a.batch_size])
            probs.append(torch.softmax(logits, -1))
    probs = torch.cat(probs).numpy()
    forward_s = time.perf_counter() - t0

    with open(a.output, "w") as out:
        out.write("record\t" + "\t".join(f"prob_{c}" for c in meta["model"]["label_values"]) + "\n")
        for i, row in enumerate(probs):
            out.write(f"{i}\t" + "\t".join(f"{p:.6g}" for p in row) + "\n")
    print(f"torch {torch.__version__} threads {a.threads}: {n} sequences, forward {forward_s:.3f} s "
          f"({n / forward_s:.0f} sequences/s)")

    if a.compare:
        with open(a.compare) as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        cols = [f"prob_{c}" for c in meta["model"]["label_values"]]
        theirs = np.array([[float(r[c]) for c in cols] for r in rows])
        print(f"largest |torch - luminome| probability over {len(rows)} records: "
              f"{np.abs(theirs - probs).max():.2e}")


if __name__ == "__main__":
    main()
