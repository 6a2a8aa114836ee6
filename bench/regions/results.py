#!/usr/bin/env python3
"""Real-data results for docs/results.md from a luminome-regions run (numpy + safetensors).

usage: results.py X.safetensors        -> genes/regions, expression vs TSS-region accessibility
       results.py --shuffle REFERENCE.fa REGIONS.tsv OUT.fa SEED
                                       -> a copy of the reference whose region sequences are
                                          shuffled (mononucleotide, within each region)
       results.py --ctcf REAL.regions.tsv SHUFFLED.regions.tsv COLUMN
                                       -> CTCF hits in real vs shuffled region sequences
"""
import csv
import gzip
import json
import random
import sys

import numpy as np


def pearson(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    return float(np.corrcoef(x, y)[0, 1])


def spearman(x, y):
    rx = np.argsort(np.argsort(x)).astype(float)
    ry = np.argsort(np.argsort(y)).astype(float)
    return pearson(rx, ry)


def summary(path):
    from safetensors.numpy import load_file
    from safetensors import safe_open

    d = load_file(path)
    with safe_open(path, "np") as f:
        meta = f.metadata()
    lum = json.loads(meta["luminome"])
    samples_path = path[: -len(".safetensors")] + ".samples.tsv"
    rows = list(csv.DictReader(open(samples_path), delimiter="\t"))
    feats, mask, tss = d["features"], d["region_mask"], d["tss_index"]
    print(f"samples {feats.shape[0]}  N {feats.shape[1]}  features {feats.shape[2]}"
          f"  genes {len({r['gene'] for r in rows})}  regions {lum['regions_total']}")
    print(f"mean regions used {mask.sum(1).mean():.1f}  full windows {(mask.sum(1) == mask.shape[1]).mean():.3f}"
          f"  genes with a TSS region {(tss >= 0).mean():.3f}")
    expr = d["expression"]
    for ct in lum["cell_types"]:
        idx = [i for i, r in enumerate(rows) if r["cell_type"] == ct]
        acc = np.array([feats[i, tss[i], -1] if tss[i] >= 0 else 0.0 for i in idx])
        e = expr[idx]
        has = tss[idx] >= 0
        print(f"{ct}: n={len(idx)}  Pearson(expr, TSS-region acc, 0 if none)={pearson(e, acc):.3f}"
              f"  Spearman={spearman(e, acc):.3f}  |  TSS in a region: n={has.sum()}"
              f" Pearson={pearson(e[has], acc[has]):.3f}")


def read_fasta(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    seqs, name, parts = {}, None, []
    with opener(path, "rt") as f:
        for line in f:
            if line.startswith(">"):
                if name:
                    seqs[name] = "".join(parts)
                name, parts = line[1:].split()[0], []
            else:
                parts.append(line.strip())
    if name:
        seqs[name] = "".join(parts)
    return seqs


def shuffle(ref, regions, out, seed):
    rng = random.Random(int(seed))
    seqs = {k: list(v) for k, v in read_fasta(ref).items()}
    with open(regions) as f:
        next(f)
        for line in f:
            _, chrom, s, e = line.split("\t", 4)[:4]
            part = seqs[chrom][int(s):int(e)]
            rng.shuffle(part)
            seqs[chrom][int(s):int(e)] = part
    with open(out, "w") as f:
        for k, v in seqs.items():
            f.write(f">{k}\n")
            s = "".join(v)
            for i in range(0, len(s), 60):
                f.write(s[i:i + 60] + "\n")


def ctcf(real, shuffled, column):
    def load(p):
        rows = list(csv.DictReader(open(p), delimiter="\t"))
        return np.array([float(r[column]) for r in rows]), sum(int(r["end"]) - int(r["start"]) for r in rows)
    a, bp = load(real)
    b, _ = load(shuffled)
    print(f"{column}: regions {len(a)} ({bp / 1e6:.2f} Mbp)  with a hit: real {(a > 0).mean():.4f}"
          f" shuffled {(b > 0).mean():.4f}  (x{(a > 0).mean() / max((b > 0).mean(), 1e-12):.2f})"
          f"  summed score: real {a.sum():.0f} shuffled {b.sum():.0f}")


if __name__ == "__main__":
    if sys.argv[1] == "--shuffle":
        shuffle(*sys.argv[2:6])
    elif sys.argv[1] == "--ctcf":
        ctcf(*sys.argv[2:5])
    else:
        summary(sys.argv[1])
