#!/usr/bin/env python3
"""FIMO (pymemesuite) on the same regions, motifs and threshold as luminome-regions.

Reads the regions from a luminome-regions `*.regions.tsv` (0-based half-open), their sequence
from the reference FASTA (plain or gzip/BGZF), and the motifs from a MEME file; scores every
motif on both strands with p < THRESHOLD (FIMO's default pseudocount 0.1, uniform background
from the MEME file) and prints the time spent scanning, the rates and the number of hits.
Optionally writes the first N motifs to a MEME file, so that both tools can scan the same subset.

usage: fimo_bench.py REFERENCE.fa REGIONS.tsv MOTIFS.meme [--motifs N] [--threshold 1e-4]
       fimo_bench.py --subset MOTIFS.meme N OUT.meme
"""
import argparse
import gzip
import sys
import time


def subset(src, n, out):
    text = open(src).read()
    head, *blocks = text.split("\nMOTIF ")
    with open(out, "w") as f:
        f.write(head + "".join("\nMOTIF " + b for b in blocks[:n]))


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


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--subset":
        subset(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("regions")
    ap.add_argument("motifs")
    ap.add_argument("--motifs-limit", type=int, default=0)
    ap.add_argument("--threshold", type=float, default=1e-4)
    a = ap.parse_args()
    from pymemesuite.common import MotifFile, Sequence
    from pymemesuite.fimo import FIMO

    genome = read_fasta(a.reference)
    sequences, bases = [], 0
    with open(a.regions) as f:
        next(f)
        for line in f:
            _, chrom, s, e = line.split("\t", 4)[:4]
            seq = genome[chrom][int(s):int(e)].upper()
            bases += len(seq)
            sequences.append(Sequence(seq, name=f"{chrom}:{s}-{e}".encode()))
    motif_file = MotifFile(a.motifs)
    motifs = list(motif_file)
    if a.motifs_limit:
        motifs = motifs[: a.motifs_limit]
    background = motif_file.background
    fimo = FIMO(both_strands=True, threshold=a.threshold)
    hits = 0
    t0 = time.perf_counter()
    for m in motifs:
        pattern = fimo.score_motif(m, sequences, background)
        hits += len(pattern.matched_elements)
    t = time.perf_counter() - t0
    n = len(motifs)
    print(f"regions\t{len(sequences)}\nbases\t{bases}\nmotifs\t{n}")
    print(f"fimo_s\t{t:.3f}\tfimo_hits\t{hits}\tmbp_motifs_per_s\t{bases / 1e6 * n / t:.2f}"
          f"\tregions_motifs_per_s\t{len(sequences) * n / t:.0f}")


if __name__ == "__main__":
    main()
