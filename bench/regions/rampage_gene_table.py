#!/usr/bin/env python3
"""Per-gene RAMPAGE expression for one cell type (standard library only).

RAMPAGE is keyed by TSS peak (rPeak), not by gene. Recipe (the one in
../shared/data/hg38_chr22/rampage_hg38_tss_expression/SOURCE.txt and test-data/make_test_data.py):
sum the RPKM of the rPeaks on the gene's strand that overlap TSS +- 500 bp, the TSS being the
centre of the ABC TSS500bp window.

usage: rampage_gene_table.py TSS500bp.bed hg38-rPeaks.bed.gz QUANT.txt.gz OUT.tsv
"""
import gzip
import sys
from collections import defaultdict

tss_path, rpeaks_path, quant_path, out_path = sys.argv[1:5]
genes = []
with open(tss_path) as f:
    for line in f:
        if line.startswith("#"):
            continue
        c = line.rstrip("\n").split("\t")
        genes.append((c[0], (int(c[1]) + int(c[2])) // 2, c[3], c[5]))
chroms = {g[0] for g in genes}
rpeaks = defaultdict(list)
with gzip.open(rpeaks_path, "rt") as f:
    for line in f:
        c = line.rstrip("\n").split("\t")
        if c[0] in chroms:
            rpeaks[c[0]].append((int(c[1]), int(c[2]), c[3], c[5]))
rpkm = {}
with gzip.open(quant_path, "rt") as f:
    for line in f:
        c = line.split("\t")
        rpkm[c[0]] = float(c[1])
with open(out_path, "w") as out:
    out.write("gene\tstrand\ttss\tn_rpeaks\tRPKM_sum\n")
    seen = set()
    for chrom, tss, name, strand in genes:
        if name in seen:
            continue
        seen.add(name)
        hits = [p for p in rpeaks[chrom] if p[3] == strand and p[0] < tss + 500 and p[1] > tss - 500]
        out.write(f"{name}\t{strand}\t{tss}\t{len(hits)}\t{sum(rpkm.get(p[2], 0.0) for p in hits):.4f}\n")
