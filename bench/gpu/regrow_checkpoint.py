#!/usr/bin/env python3
"""A random checkpoint small enough to travel to the GPU host, regrown there at its full size.

The GPU session (bench/gpu/run_gpu.sh, stage "caduceus") scores SNVs with a random checkpoint in
PlantCaduceus_l20's published layout (bench/caduceus/make_random_checkpoint.py: 80 MB of f32,
more than the 64 MiB a run may carry). Speed does not depend on the weights' values, but the
CUDA-against-CPU comparison of the scores wants weights like the real ones, so:

    regrow_checkpoint.py shrink SRC_DIR OUT_DIR   # here: every tensor under 100,000 elements
                                                  # kept exactly (A_log, D, conv, x/dt projections,
                                                  # norms, embeddings), the large ones (in/out
                                                  # projections) written as name, shape, mean, sd
    regrow_checkpoint.py regrow OUT_DIR DEST_DIR  # on the GPU host: the large ones drawn from a
                                                  # seeded normal of that mean and sd (numpy)

DEST_DIR gets model.safetensors (tensor names, order, dtypes and shapes of SRC_DIR's) and the
config and tokenizer files. Only numpy is needed; the same OUT_DIR regrows the same bytes.
"""
import json
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

LARGE = 100_000
DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        body = f.read()
    meta = header.pop("__metadata__", None)
    tensors = {}
    for name, info in header.items():
        start, end = info["data_offsets"]
        a = np.frombuffer(body[start:end], dtype=DTYPES[info["dtype"]])
        tensors[name] = (info["dtype"], info["shape"], a)
    return meta, tensors


def write_safetensors(path, meta, tensors):
    header, offset, blobs = {}, 0, []
    if meta is not None:
        header["__metadata__"] = meta
    for name, (dtype, shape, a) in tensors.items():
        b = np.ascontiguousarray(a, dtype=DTYPES[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)
    tmp.replace(path)


def copy_side_files(src, dst):
    for p in sorted(Path(src).iterdir()):
        if p.name != "model.safetensors" and p.is_file():
            shutil.copy(p, Path(dst) / p.name)


def shrink(src, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    meta, tensors = read_safetensors(Path(src) / "model.safetensors")
    kept, large = {}, []
    for name, (dtype, shape, a) in tensors.items():
        if a.size >= LARGE and dtype in ("F32", "F16"):
            x = a.astype(np.float64)
            large.append({"name": name, "dtype": dtype, "shape": shape,
                          "mean": float(x.mean()), "sd": float(x.std())})
            kept[name] = None
        else:
            kept[name] = (dtype, shape, a)
    write_safetensors(out / "kept.safetensors", meta,
                      {k: v for k, v in kept.items() if v is not None})
    order = list(tensors)
    (out / "regrow.json").write_text(json.dumps({"order": order, "large": large}, indent=1))
    copy_side_files(src, out)


def regrow(out, dst):
    out, dst = Path(out), Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    meta, kept = read_safetensors(out / "kept.safetensors")
    plan = json.loads((out / "regrow.json").read_text())
    drawn = {}
    for i, t in enumerate(plan["large"]):
        rng = np.random.default_rng(1000 + i)
        a = rng.normal(t["mean"], t["sd"], size=int(np.prod(t["shape"]))).astype(np.float32)
        drawn[t["name"]] = (t["dtype"], t["shape"], a)
    tensors = {name: kept[name] if name in kept else drawn[name] for name in plan["order"]}
    for p in sorted(out.iterdir()):
        if p.is_file() and p.name not in ("kept.safetensors", "regrow.json"):
            shutil.copy(p, dst / p.name)
    write_safetensors(dst / "model.safetensors", meta, tensors)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("shrink", "regrow"):
        sys.exit(__doc__)
    {"shrink": shrink, "regrow": regrow}[sys.argv[1]](sys.argv[2], sys.argv[3])
