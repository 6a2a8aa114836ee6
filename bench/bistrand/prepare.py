#!/usr/bin/env python3
"""Splits the genomes of ../shared/data/genomes for the bi-strand results (docs/results.md).

  prepare.py DATA_DIR OUT_DIR

E. coli K-12 MG1655: the first 85 % of the chromosome for training, the next 5 % for model
selection (dev), the last 10 % held out for the test. C. elegans (the first 1 % of each
chromosome): I-IV for training, V dev, X test; MtDNA is left out. Writes
OUT_DIR/{ecoli,celegans}_{train,dev,test}.fa (60 bases a line) and celegans_genome.fa (I-X,
for variant windows), and prints their sizes.
"""
import gzip
import sys
from pathlib import Path


def read_fasta(path):
    name, seq = None, []
    with gzip.open(path, "rt") as f:
        for line in f:
            line = line.rstrip()
            if line.startswith(">"):
                if name is not None:
                    yield name, "".join(seq)
                name, seq = line[1:].split()[0], []
            else:
                seq.append(line)
    if name is not None:
        yield name, "".join(seq)


def write_fasta(path, records):
    with open(path, "w") as f:
        for name, seq in records:
            f.write(f">{name}\n")
            for i in range(0, len(seq), 60):
                f.write(seq[i : i + 60] + "\n")
    print(f"{path}: {len(records)} records, {sum(len(s) for _, s in records):,} bp")


def main():
    data, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    (name, seq), = read_fasta(data / "genomes/ecoli_k12_mg1655/GCF_000005845.2_ASM584v2_genomic.fna.gz")
    dev, test = int(len(seq) * 0.85), int(len(seq) * 0.9)
    write_fasta(out / "ecoli_train.fa", [(name, seq[:dev])])
    write_fasta(out / "ecoli_dev.fa", [(f"{name}_from_{dev}", seq[dev:test])])
    write_fasta(out / "ecoli_test.fa", [(f"{name}_from_{test}", seq[test:])])
    ce = dict(read_fasta(data / "genomes/celegans_1pct/C.elegans.fa.gz"))
    write_fasta(out / "celegans_train.fa", [(c, ce[c]) for c in ["I", "II", "III", "IV"]])
    write_fasta(out / "celegans_dev.fa", [("V", ce["V"])])
    write_fasta(out / "celegans_test.fa", [("X", ce["X"])])
    write_fasta(out / "celegans_genome.fa", [(c, ce[c]) for c in ["I", "II", "III", "IV", "V", "X"]])


if __name__ == "__main__":
    main()
