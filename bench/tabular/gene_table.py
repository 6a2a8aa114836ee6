"""A per-gene feature table made by the suite itself, for luminome-train tabular: is each chr22
protein-coding gene expressed in K562, from its regulatory neighbourhood?

    python bench/tabular/gene_table.py GENES.safetensors OUT.tsv [N_MOTIFS]

GENES.safetensors is a luminome-regions dataset with one cell type (`bench/tabular/run.sh
k562-genes` makes it: K562 accessibility, Vierstra motif clusters, ENCODE RAMPAGE expression,
log1p). Columns:

  gene                  the id column
  strand                categorical (+ / -)
  n_regions             accessible regions in the 2 Mbp window
  window_accessibility  summed logCPM accessibility of those regions
  tss_accessibility     logCPM accessibility of the region holding the TSS; NA when none does
  tss_<motif cluster>   the TSS region's motif score for the N_MOTIFS clusters (default 50; 0
                        = all 282) whose TSS-region scores vary most across genes (label-free:
                        the labels play no part in the choice); NA when no region holds the TSS.
                        50 keeps the transformer's 56 tokens per gene affordable on a CPU core.
  expressed             yes when RAMPAGE RPKM (summed rPeaks at TSS +- 500 bp) > 1, else no

The label never enters the features or the choice of columns; missing values are real (129 of 418 TSSs lie in no peak).
"""

import csv
import json
import sys

import numpy as np
from safetensors import safe_open


def main(dataset, out, n_motifs="50"):
    f = safe_open(dataset, "np")
    meta = json.loads(f.metadata()["luminome"])
    names = meta["feature_names"]
    feats = f.get_tensor("features")
    mask = f.get_tensor("region_mask").astype(bool)
    tss = f.get_tensor("tss_index")
    strand = f.get_tensor("strand")
    samples_table = dataset[: -len(".safetensors")] + ".samples.tsv"
    with open(samples_table) as fh:
        samples = list(csv.DictReader(fh, delimiter="\t"))
    assert len(samples) == feats.shape[0]
    has_tss = tss >= 0
    tss_motifs = feats[np.flatnonzero(has_tss), tss[has_tss], :-1]
    order = np.argsort(-tss_motifs.var(axis=0), kind="stable")
    keep = np.sort(order[: int(n_motifs)] if int(n_motifs) > 0 else order)
    motif_cols = ["tss_" + names[k].replace("/", "_") for k in keep]
    header = ["gene", "strand", "n_regions", "window_accessibility", "tss_accessibility"]
    header += motif_cols + ["expressed"]
    with open(out, "w") as w:
        w.write("\t".join(header) + "\n")
        for s, row in enumerate(samples):
            if row["expression"] == "NA":
                continue
            expressed = "yes" if np.expm1(float(row["expression"])) > 1.0 else "no"
            acc = feats[s, mask[s], -1]
            cells = [row["gene"], "+" if strand[s] > 0 else "-", str(int(mask[s].sum())),
                     f"{acc.sum():.5g}"]
            if tss[s] >= 0:
                v = feats[s, tss[s]]
                cells += [f"{v[-1]:.5g}"] + [f"{v[k]:.5g}" for k in keep]
            else:
                cells += ["NA"] * (1 + len(motif_cols))
            w.write("\t".join(cells + [expressed]) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
