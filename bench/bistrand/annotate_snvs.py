#!/usr/bin/env python3
"""The consequence class of each SNV of a CHROM POS ID REF ALT table in the C. elegans slice.

  annotate_snvs.py GENOME.fa GENES.gff.gz SNVS.tsv > annotation.tsv

Coding SNVs get synonymous / missense / nonsense / stop_lost (coding_snvs.py's transcripts, when
they agree); others by the WormBase feature that covers them, in this order: coding (transcripts
that disagree or have no clean ORF), five_prime_UTR, three_prime_UTR, exon of a non-coding RNA
(ncRNA_exon), intron (inside a transcript), intergenic.
"""
import gzip
import sys
from collections import defaultdict

from coding_snvs import coding_calls, read_fasta, unambiguous


def intervals(gff):
    by = defaultdict(list)
    with gzip.open(gff, "rt") as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            if len(c) < 9 or c[1] != "WormBase":
                continue
            kind = c[2]
            if kind in ("CDS", "five_prime_UTR", "three_prime_UTR", "exon", "mRNA", "ncRNA", "snoRNA",
                        "snRNA", "tRNA", "rRNA", "piRNA", "lincRNA", "miRNA", "pseudogenic_transcript",
                        "transcript", "nc_primary_transcript"):
                by[c[0]].append((int(c[3]), int(c[4]), kind))
    return by


def classify(feats, pos):
    kinds = {k for s, e, k in feats if s <= pos <= e}
    if "CDS" in kinds:
        return "coding_ambiguous"
    if "five_prime_UTR" in kinds:
        return "five_prime_UTR"
    if "three_prime_UTR" in kinds:
        return "three_prime_UTR"
    if "exon" in kinds:
        return "ncRNA_exon" if "mRNA" not in kinds else "exon_other"
    if kinds:
        return "intron"
    return "intergenic"


def main():
    genome = read_fasta(sys.argv[1])
    calls, _, _ = coding_calls(genome, sys.argv[2])
    feats = intervals(sys.argv[2])
    print("chrom\tpos\tid\tref\talt\tconsequence")
    with open(sys.argv[3]) as f:
        for line in f:
            c = line.split()
            if len(c) < 5 or line.startswith("#"):
                continue
            chrom, pos, vid, ref, alt = c[0], int(c[1]), c[2], c[3], c[4]
            cls = None
            known = unambiguous(calls.get((chrom, pos), {}))
            if known and alt in known:
                cls = known[alt][0]
            if cls is None:
                cls = classify(feats.get(chrom, []), pos)
            print(f"{chrom}\t{pos}\t{vid}\t{ref}\t{alt}\t{cls}")


if __name__ == "__main__":
    main()
