#!/usr/bin/env python3
"""A genomic retrieval task on real sequence, a read-mapping analogue (docs/dual.md, README.md here).

Passages are the non-overlapping WINDOW-bp windows tiling each sequence of a genome from position
0 (a last partial window, and windows holding any base other than A/C/G/T after upper-casing,
are dropped). Queries are fragments drawn from the true genome fully inside a window: length
uniform in MIN_LEN..MAX_LEN, start uniform among the positions that keep the fragment inside the
window. Each fragment is then mutated left to right: at each base an indel starts with
probability INDEL_RATE (half insertions of random bases before the base, half deletions of the
base and the next ones; length 1 + Geometric(0.5) capped at 3, i.e. 1/2/3 bp with probability
1/2, 1/4, 1/4); a base that is not deleted is substituted with probability SUB_RATE (the new base
uniform among the other three; inserted bases are not substituted). Finally a fraction
RC_FRACTION of the queries (train, dev and the mixed test file) is reverse-complemented. A
query's positive passage is the window its fragment came from; fragment_start/fragment_end are
the genome coordinates of the fragment before mutation (so its length after mutation can differ
by a few bp).

Windows are split in contiguous blocks along each sequence: the first int(n * TRAIN_FRACTION)
train, the next int(n * DEV_FRACTION) dev, the rest test, so no window or fragment position is
shared between splits (repeated sequence, e.g. the seven rRNA operons of E. coli, can still be
shared). Train has QUERIES_PER_WINDOW queries per window, dev and test one.

Outputs (OUT/):
  {train,dev,test}.pairs.tsv   query_id, query, passage_id, passage, strand, fragment_start,
                               fragment_end, substitutions, indels. passage_id = CHROM:START-END
                               (0-based half-open); strand '-' = query reverse-complemented;
                               query ids q000001... are unique across the three splits.
  test.fwd.pairs.tsv           the test fragments (same ids, mutations) all forward
  test.rc.pairs.tsv            ... all reverse-complemented
  {dev,test}.corpus.fa         every window of the split (the corpus to rank), named by passage_id,
                               60 bases a line, in genome order
  {dev,test}.corpus.bed        the same windows: chrom, start, end, name
  task.json                    arguments, counts per split, genome file name and sha256 (of the
                               file's bytes as stored, e.g. gzip-compressed), script version

Reproducibility: every random draw comes from one random.Random(SEED), in a fixed order (splits
train, dev, test; windows in genome order; per query: length, offset, mutations, strand), so the
same arguments and genome give byte-identical files. VERSION changes whenever that order or the
format of an output changes (the BED files added after version 1 changed no other byte).

    python3 bench/dual/make_task.py --out /tmp/dualtask          # E. coli from ../shared/data
"""
import argparse
import gzip
import hashlib
import json
import os
import random

COMP = str.maketrans("ACGT", "TGCA")
VERSION = "1"
DEFAULT_FASTA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                             "data", "genomes", "ecoli_k12_mg1655",
                             "GCF_000005845.2_ASM584v2_genomic.fna.gz")
HEADER = ("query_id\tquery\tpassage_id\tpassage\tstrand\tfragment_start\tfragment_end"
          "\tsubstitutions\tindels\n")


def read_fasta(path):
    """[(name, SEQUENCE)] in file order; the name is the header up to the first whitespace."""
    opener = gzip.open if path.endswith(".gz") else open
    records, name, chunks = [], None, []
    with opener(path, "rt") as f:
        for line in f:
            if line.startswith(">"):
                if name is not None:
                    records.append((name, "".join(chunks).upper()))
                name, chunks = line[1:].split()[0], []
            else:
                chunks.append(line.strip())
    if name is not None:
        records.append((name, "".join(chunks).upper()))
    return records


def revcomp(s):
    return s.translate(COMP)[::-1]


def mutate(frag, rnd, sub_rate, indel_rate):
    """(mutated, substitutions, indel events); see the module docstring for the model."""
    out, subs, indels, i = [], 0, 0, 0
    while i < len(frag):
        if rnd.random() < indel_rate:
            n = 1
            while n < 3 and rnd.random() < 0.5:
                n += 1
            indels += 1
            if rnd.random() < 0.5:
                out.extend(rnd.choice("ACGT") for _ in range(n))  # insertion before this base
            else:
                i += n  # deletion of this base and the next n - 1
                continue
        b = frag[i]
        if rnd.random() < sub_rate:
            b = rnd.choice([c for c in "ACGT" if c != b])
            subs += 1
        out.append(b)
        i += 1
    return "".join(out), subs, indels


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fasta", default=DEFAULT_FASTA, help="genome FASTA, plain or .gz "
                    "(default: E. coli K-12 MG1655 under ../shared/data)")
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--window", type=int, default=500)
    ap.add_argument("--min-len", type=int, default=100)
    ap.add_argument("--max-len", type=int, default=150)
    ap.add_argument("--sub-rate", type=float, default=0.01)
    ap.add_argument("--indel-rate", type=float, default=0.002)
    ap.add_argument("--rc-fraction", type=float, default=0.5)
    ap.add_argument("--train-fraction", type=float, default=0.8)
    ap.add_argument("--dev-fraction", type=float, default=0.1)
    ap.add_argument("--queries-per-window", type=int, default=2, help="training split (dev/test: 1)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if not 1 <= a.min_len <= a.max_len <= a.window:
        ap.error("need 1 <= --min-len <= --max-len <= --window")
    for name in ("sub_rate", "indel_rate", "rc_fraction", "train_fraction", "dev_fraction"):
        if not 0.0 <= getattr(a, name) <= 1.0:
            ap.error(f"--{name.replace('_', '-')} must be in [0, 1]")
    if a.train_fraction + a.dev_fraction > 1.0:
        ap.error("--train-fraction + --dev-fraction must be <= 1")
    if a.queries_per_window < 1:
        ap.error("--queries-per-window must be >= 1")
    return a


def split_windows(records, a):
    """{'train'|'dev'|'test': [(passage_id, chrom, start, sequence)]} in genome order."""
    splits = {"train": [], "dev": [], "test": []}
    for name, seq in records:
        wins = [(f"{name}:{s}-{s + a.window}", name, s, seq[s:s + a.window])
                for s in range(0, len(seq) - a.window + 1, a.window)]
        wins = [w for w in wins if set(w[3]) <= set("ACGT")]
        n_train = int(len(wins) * a.train_fraction)
        n_dev = int(len(wins) * a.dev_fraction)
        splits["train"] += wins[:n_train]
        splits["dev"] += wins[n_train:n_train + n_dev]
        splits["test"] += wins[n_train + n_dev:]
    return splits


def main(argv=None):
    a = parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    rnd = random.Random(a.seed)
    splits = split_windows(read_fasta(a.fasta), a)
    counts, qn = {}, 0
    for split, wins in splits.items():
        per = a.queries_per_window if split == "train" else 1
        rows = []
        for pid, _chrom, start, w in wins:
            for _ in range(per):
                qn += 1
                length = rnd.randint(a.min_len, a.max_len)
                off = rnd.randint(0, a.window - length)
                frag, subs, indels = mutate(w[off:off + length], rnd, a.sub_rate, a.indel_rate)
                rc = rnd.random() < a.rc_fraction
                rows.append((f"q{qn:06d}", frag, pid, w, rc, start + off, start + off + length, subs, indels))
        variants = {"": None}
        if split == "test":
            variants.update({".fwd": False, ".rc": True})
        for suffix, force in variants.items():
            with open(os.path.join(a.out, f"{split}{suffix}.pairs.tsv"), "w") as f:
                f.write(HEADER)
                for qid, frag, pid, w, rc, fs, fe, subs, indels in rows:
                    rc = rc if force is None else force
                    q = revcomp(frag) if rc else frag
                    f.write(f"{qid}\t{q}\t{pid}\t{w}\t{'-' if rc else '+'}\t{fs}\t{fe}\t{subs}\t{indels}\n")
        if split != "train":
            with open(os.path.join(a.out, f"{split}.corpus.fa"), "w") as f:
                for pid, _, _, w in wins:
                    f.write(f">{pid}\n")
                    for i in range(0, len(w), 60):
                        f.write(w[i:i + 60] + "\n")
            with open(os.path.join(a.out, f"{split}.corpus.bed"), "w") as f:
                for pid, chrom, start, w in wins:
                    f.write(f"{chrom}\t{start}\t{start + len(w)}\t{pid}\n")
        counts[split] = {"windows": len(wins), "queries": len(rows)}
        n = max(len(rows), 1)
        span = f"{wins[0][0]} .. {wins[-1][0]}" if wins else "-"
        print(f"{split}: {len(wins)} windows, {len(rows)} queries ({span}); "
              f"mean length {sum(len(r[1]) for r in rows) / n:.1f} bp, "
              f"{sum(r[7] for r in rows) / n:.2f} substitutions and {sum(r[8] for r in rows) / n:.2f} "
              f"indels a query, {sum(r[4] for r in rows) / n:.3f} reverse-complemented")
    with open(a.fasta, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    args = {k: v for k, v in vars(a).items() if k not in ("out", "fasta")}
    with open(os.path.join(a.out, "task.json"), "w") as f:
        json.dump({"version": VERSION, "fasta": os.path.basename(a.fasta), "fasta_sha256": sha,
                   "arguments": args, "counts": counts}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
