#!/usr/bin/env python3
"""Do the top-scoring positions of luminome-importance sit on known core-promoter elements?

Reads a luminome-importance TSV of GUE prom_core_all records (70 bp; the
TSS is at 0-based position 33: the Inr 'YR' dinucleotide sits at 32-33 in ~70 % of the
promoters in test-data), takes the top-K positions of every record and reports which fraction
falls on each element, against the fraction of all positions that are on it (the rate a
position-blind score would give):

  TATA  bases of a TATA-box match TATAWAW starting at positions 0-10 (about -33 to -23)
  Inr   the initiator window -2..+4 around the TSS, positions 31-37
  CpG   the C or G of a CG dinucleotide anywhere

Tokens longer than one base (k-mers) are spread back onto their bases first: a base's score is
the mean of the scores of the tokens covering it (`start`..`end` of the TSV), so K counts bases
(K = 6 is the top two tokens of a non-overlapping 3-mer model).

Also prints where the top positions fall relative to the TSS, in 5-base bins, against the
share of positions in each bin.

Python standard library only:
    python3 bench/engine/promoter_elements.py importance.tsv [K]
"""
import collections
import re
import sys

TSS = 33
INR = range(TSS - 2, TSS + 5)


def elements(seq):
    tata = set()
    for m in re.finditer(r"(?=(TATA[AT]A[AT]))", seq):
        if m.start() <= 10:
            tata.update(range(m.start(), m.start() + 7))
    cpg = set()
    for i in range(len(seq) - 1):
        if seq[i : i + 2] == "CG":
            cpg.update((i, i + 1))
    return {"TATA": tata, "Inr": set(INR), "CpG": cpg}


def main():
    path = sys.argv[1]
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    tokens = collections.defaultdict(list)
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        col = {c: i for i, c in enumerate(header)}
        for line in f:
            x = line.rstrip("\n").split("\t")
            start, end = int(x[col["start"]]), int(x[col["end"]])
            tokens[x[col["record"]]].append((start, end, x[col["token"]], float(x[col["score"]])))
    records = {}
    for name, toks in tokens.items():
        bases, sums, counts = {}, collections.Counter(), collections.Counter()
        for start, end, token, score in toks:
            for i in range(start, end):
                bases.setdefault(i, token[i - start] if len(token) == end - start else "N")
                sums[i] += score
                counts[i] += 1
        records[name] = [(i, bases[i], sums[i] / counts[i]) for i in sorted(bases)]
    top_hits = collections.Counter()
    all_hits = collections.Counter()
    n_top = n_all = 0
    with_tata = 0
    bins, bins_all = collections.Counter(), collections.Counter()
    for rec in records.values():
        seq = "".join(t for _, t, _ in rec)
        el = elements(seq)
        with_tata += bool(el["TATA"])
        top = sorted(rec, key=lambda r: -r[2])[:k]
        for name, positions in el.items():
            top_hits[name] += sum(p in positions for p, _, _ in top)
            all_hits[name] += len(positions & {p for p, _, _ in rec})
        n_top += len(top)
        bins.update((p - TSS) // 5 for p, _, _ in top)
        bins_all.update((p - TSS) // 5 for p, _, _ in rec)
        n_all += len(rec)
    print(f"{len(records)} records, top {k} positions each; {with_tata} records have a TATA-box match at 0-10")
    print("| element | share of top positions | share of all positions | enrichment |")
    print("|---|---|---|---|")
    for name in ["TATA", "Inr", "CpG"]:
        a, b = top_hits[name] / n_top, all_hits[name] / n_all
        print(f"| {name} | {a:.3f} | {b:.3f} | {a / b if b else float('nan'):.2f}× |")
    print()
    print("| bases from the TSS | share of top positions | share of all positions | enrichment |")
    print("|---|---|---|---|")
    for b in sorted(bins_all):
        top_share, all_share = bins[b] / n_top, bins_all[b] / n_all
        print(f"| {5 * b:+d}..{5 * b + 4:+d} | {top_share:.3f} | {all_share:.3f} | {top_share / all_share:.2f}× |")


if __name__ == "__main__":
    main()
