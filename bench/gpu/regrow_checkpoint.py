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

Without the authors' code (make_random_checkpoint.py needs their package and mamba_ssm):

    regrow_checkpoint.py grow FIXTURE_DIR DEST_DIR D_MODEL N_LAYER D_STATE
                                                  # a random checkpoint at a published size in
                                                  # the layout of a tiny Caduceus fixture
                                                  # (ps_rcps_fused: PlantCaduceus' architecture):
                                                  # its layer 0's tensor names repeated N_LAYER
                                                  # times, shapes from the sizes, values drawn as
                                                  # Mamba initialises them (A_log = log 1..d_state,
                                                  # dt bias = softplus^-1 of dt in [1e-3, 1e-1],
                                                  # D = 1, linear layers uniform +-1/sqrt(fan_in))
                                                  # with the fixture's perturbation of each kind

For speed and CUDA-against-CPU checks only: the weights are random either way.
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


def grown_shape(kind, d_model, d_inner, d_state, dt_rank, vocab):
    return {"embedding.weight": [vocab, d_model], "A_log": [d_inner, d_state], "D": [d_inner],
            "conv1d.bias": [d_inner], "conv1d.weight": [d_inner, 1, 4],
            "dt_proj.bias": [d_inner], "dt_proj.weight": [d_inner, dt_rank],
            "in_proj.weight": [2 * d_inner, d_model], "out_proj.weight": [d_model, d_inner],
            "x_proj.weight": [dt_rank + 2 * d_state, d_inner], "norm.weight": [d_model],
            "norm_f.weight": [d_model]}[kind]


def grown_values(kind, shape, rng):
    n = int(np.prod(shape))
    if kind == "A_log":
        a = np.log(np.tile(np.arange(1, shape[1] + 1, dtype=np.float64), (shape[0], 1)))
        return (a + rng.normal(0, 0.05, shape)).ravel()
    if kind == "dt_proj.bias":
        dt = np.exp(rng.uniform(np.log(1e-3), np.log(1e-1), n))
        return dt + np.log(-np.expm1(-dt))
    if kind in ("D", "norm.weight", "norm_f.weight"):
        return 1 + rng.normal(0, 0.1, n)
    if kind == "embedding.weight":
        return rng.normal(0, 0.5, n)
    fan_in = 4 if kind.startswith("conv1d") else shape[1]  # conv1d: depthwise, kernel 4
    bound = 1 / np.sqrt(fan_in)
    return rng.uniform(-bound, bound, n)


def grow(fixture, dst, d_model, n_layer, d_state):
    d_model, n_layer, d_state = int(d_model), int(n_layer), int(d_state)
    d_inner, dt_rank = 2 * d_model, -(-d_model // 16)
    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    meta, tensors = read_safetensors(Path(fixture) / "model.safetensors")
    out, rng = {}, np.random.default_rng(20)
    for layer in range(n_layer):
        for name, (dtype, shape, a) in tensors.items():
            if ".layers." in name and ".layers.0." not in name:
                continue
            if ".layers." not in name and layer > 0:
                continue
            grown = name.replace(".layers.0.", f".layers.{layer}.")
            if dtype == "I64":  # the complement maps: vocabulary-sized, kept
                out[grown] = (dtype, shape, a)
                continue
            kind = next(k for k in ("embedding.weight", "A_log", "D", "conv1d.bias", "conv1d.weight",
                                    "dt_proj.bias", "dt_proj.weight", "in_proj.weight",
                                    "out_proj.weight", "x_proj.weight", "norm_f.weight",
                                    "norm.weight") if name.endswith("." + k))
            shape = grown_shape(kind, d_model, d_inner, d_state, dt_rank, shape[0])
            out[grown] = (dtype, shape, grown_values(kind, shape, rng))
    copy_side_files(fixture, dst)
    cfg = json.loads((Path(fixture) / "config.json").read_text())
    cfg.update(d_model=d_model, n_layer=n_layer)
    cfg["ssm_cfg"]["d_state"] = d_state
    (dst / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (dst / "expected.safetensors").unlink(missing_ok=True)
    write_safetensors(dst / "model.safetensors", meta, out)
    n = sum(int(np.prod(s)) for name, (d, s, _) in out.items() if d != "I64")
    print(f"{dst}: {len(out)} tensors, {n:,} parameters")


if __name__ == "__main__":
    modes = {"shrink": (shrink, 4), "regrow": (regrow, 4), "grow": (grow, 7)}
    if len(sys.argv) < 2 or sys.argv[1] not in modes or len(sys.argv) != modes[sys.argv[1]][1]:
        sys.exit(__doc__)
    modes[sys.argv[1]][0](*sys.argv[2:])
