#!/usr/bin/env python3
"""Every possible SNV at coding positions of the C. elegans slice, with its consequence.

  coding_snvs.py GENOME.fa.gz GENES.gff.gz OUT_PREFIX [--chroms X] [--positions N] [--seed S]

Transcripts are the CDS features of each WormBase transcript (Parent=Transcript:...), joined in
transcription order (reverse-complemented on '-'), the first segment's phase skipped. Only
transcripts whose translation starts with M, ends with a stop and has no other stop are used.
A position covered by several transcripts is kept when every one gives each alternative base the
same consequence (synonymous, missense, nonsense; a stop codon changed to another is
stop_retained, a stop to an amino acid stop_lost). N positions (default all) are sampled with the
seed among the kept positions on the chosen chromosomes.

Writes OUT_PREFIX.tsv (headerless CHROM POS ID REF ALT with the three ALT alleles of a position
comma-separated: one multi-allelic record, one window) and OUT_PREFIX.annotation.tsv (chrom, pos,
ref, alt, consequence, codon position 1-3, gene).
"""
import argparse
import gzip
import random
from collections import defaultdict

BASES = "TCAG"
AMINO = "FFLLSSSSYY**CC*WLLLLPPPPHHQQRRRRIIIMTTTTNNKKSSRRVVVVAAAADDEEGGGG"
CODE = {a + b + c: AMINO[16 * i + 4 * j + k] for i, a in enumerate(BASES) for j, b in enumerate(BASES) for k, c in enumerate(BASES)}
COMP = str.maketrans("ACGTN", "TGCAN")


def read_fasta(path):
    seqs, name = {}, None
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        for line in f:
            if line.startswith(">"):
                name = line[1:].split()[0]
                seqs[name] = []
            else:
                seqs[name].append(line.strip().upper())
    return {k: "".join(v) for k, v in seqs.items()}


def read_cds(path):
    tx = defaultdict(list)
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith("#"):
                continue
            c = line.rstrip("\n").split("\t")
            if len(c) < 9 or c[2] != "CDS" or c[1] != "WormBase":
                continue
            attrs = dict(kv.split("=", 1) for kv in c[8].split(";") if "=" in kv)
            parent = attrs.get("Parent", "")
            gene = attrs.get("locus", attrs.get("Name", parent))
            tx[parent].append((c[0], int(c[3]), int(c[4]), c[6], 0 if c[7] == "." else int(c[7]), gene))
    return tx


def consequence(ref_aa, alt_aa):
    if ref_aa == "*":
        return "stop_retained" if alt_aa == "*" else "stop_lost"
    if alt_aa == "*":
        return "nonsense"
    return "synonymous" if ref_aa == alt_aa else "missense"


def coding_calls(genome, gff):
    """(chrom, pos1) -> {alt: {(consequence, codon position, gene)}} over the clean transcripts;
    and how many transcripts were used and left out."""
    calls = defaultdict(lambda: defaultdict(set))
    used = skipped = 0
    for parent, segs in read_cds(gff).items():
        chrom, strand = segs[0][0], segs[0][3]
        if chrom not in genome or any(s[0] != chrom or s[3] != strand for s in segs):
            continue
        segs.sort(key=lambda s: s[1], reverse=(strand == "-"))
        positions = []  # genomic 1-based positions in transcription order
        for _, start, end, _, _, _ in segs:
            rng = range(start, end + 1) if strand == "+" else range(end, start - 1, -1)
            positions.extend(rng)
        positions = positions[segs[0][4]:]
        positions = positions[: len(positions) // 3 * 3]
        seq = "".join(genome[chrom][p - 1] for p in positions)
        if strand == "-":
            seq = seq.translate(COMP)
        protein = "".join(CODE.get(seq[i : i + 3], "X") for i in range(0, len(seq), 3))
        if not protein or protein[0] != "M" or protein[-1] != "*" or "*" in protein[:-1] or "X" in protein:
            skipped += 1
            continue
        used += 1
        gene = segs[0][5]
        for i, p in enumerate(positions):
            codon_start = i - i % 3
            codon = seq[codon_start : codon_start + 3]
            for alt in "ACGT":
                strand_alt = alt.translate(COMP) if strand == "-" else alt
                if strand_alt == seq[i]:
                    continue
                mutated = codon[: i % 3] + strand_alt + codon[i % 3 + 1 :]
                calls[(chrom, p)][alt].add((consequence(CODE[codon], CODE[mutated]), i % 3 + 1, gene))
    return calls, used, skipped


def unambiguous(alts):
    """The one (consequence, codon position, gene) of each ALT when every transcript agrees."""
    if len(alts) != 3 or any(len({(c, cp) for c, cp, _ in v}) != 1 for v in alts.values()):
        return None
    return {alt: sorted(v)[0] for alt, v in alts.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("genome")
    ap.add_argument("gff")
    ap.add_argument("out")
    ap.add_argument("--chroms", default="")
    ap.add_argument("--positions", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    genome = read_fasta(a.genome)
    chroms = set(a.chroms.split(",")) if a.chroms else set(genome)
    calls, used, skipped = coding_calls(genome, a.gff)
    kept = sorted(k for k, v in calls.items() if k[0] in chroms and unambiguous(v))
    if a.positions and a.positions < len(kept):
        kept = sorted(random.Random(a.seed).sample(kept, a.positions))
    with open(a.out + ".tsv", "w") as t, open(a.out + ".annotation.tsv", "w") as n:
        n.write("chrom\tpos\tref\talt\tconsequence\tcodon_position\tgene\n")
        for chrom, p in kept:
            ref = genome[chrom][p - 1]
            alts = unambiguous(calls[(chrom, p)])
            t.write(f"{chrom}\t{p}\t{chrom}:{p}\t{ref}\t{','.join(sorted(alts))}\n")
            for alt, (c, cp, gene) in sorted(alts.items()):
                n.write(f"{chrom}\t{p}\t{ref}\t{alt}\t{c}\t{cp}\t{gene}\n")
    print(f"{used} transcripts used, {skipped} left out (no clean ORF); {len(kept)} positions, {3 * len(kept)} SNVs written")


if __name__ == "__main__":
    main()
