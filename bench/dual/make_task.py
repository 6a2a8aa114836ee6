#!/usr/bin/env python3
"""A genomic retrieval task on real sequence, a read-mapping analogue (docs/dual.md).

Passages are the non-overlapping WINDOW-bp windows tiling each sequence of a genome (a last
partial window, and windows with a base other than A/C/G/T, are dropped). Queries are fragments
of MIN_LEN..MAX_LEN bp drawn from inside a window, with substitutions (rate SUB_RATE, the new base
uniform among the other three) and small indels (rate INDEL_RATE per base, half insertions of
random bases, half deletions, 1 + Geometric(0.5) bp capped at 3) applied left to right; a fraction
RC_FRACTION of them is reverse-complemented. The positive passage of a query is the window it
came from. Windows are split in contiguous blocks along each sequence: the first TRAIN_FRACTION
train, the next DEV_FRACTION dev, the rest test, so no passage or fragment is shared between
splits.

Outputs (OUT/): {train,dev,test}.pairs.tsv (query_id, query, passage_id, passage, strand,
fragment_start, fragment_end, substitutions, indels; passage_id CHROM:START-END, 0-based
half-open), test.fwd.pairs.tsv / test.rc.pairs.tsv (the same test fragments and mutations, all
forward / all reverse-complemented), {dev,test}.corpus.fa (every window of the split, named by
passage_id), task.json (arguments, counts, the genome's sha256).

Only random.Random(seed) draws: the same arguments give byte-identical files.

    python3 bench/dual/make_task.py --out work/dual_task
"""
import argparse
import gzip
import hashlib
import json
import os
import random

COMP = str.maketrans("ACGT", "TGCA")
VERSION = "1"


def read_fasta(path):
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


def mutate(frag, rnd, sub_rate, indel_rate):
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
                i += n  # deletion
                continue
        b = frag[i]
        if rnd.random() < sub_rate:
            b = rnd.choice([c for c in "ACGT" if c != b])
            subs += 1
        out.append(b)
        i += 1
    return "".join(out), subs, indels


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fasta", default=os.path.join(os.path.dirname(__file__),
                    "../../../shared/data/genomes/ecoli_k12_mg1655/GCF_000005845.2_ASM584v2_genomic.fna.gz"))
    ap.add_argument("--out", required=True)
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
    a = ap.parse_args()
    assert a.min_len <= a.max_len <= a.window
    os.makedirs(a.out, exist_ok=True)
    rnd = random.Random(a.seed)
    splits = {"train": [], "dev": [], "test": []}
    for name, seq in read_fasta(a.fasta):
        wins = [(s, seq[s:s + a.window]) for s in range(0, len(seq) - a.window + 1, a.window)]
        wins = [(f"{name}:{s}-{s + a.window}", s, w) for s, w in wins if set(w) <= set("ACGT")]
        n_train = int(len(wins) * a.train_fraction)
        n_dev = int(len(wins) * a.dev_fraction)
        splits["train"] += wins[:n_train]
        splits["dev"] += wins[n_train:n_train + n_dev]
        splits["test"] += wins[n_train + n_dev:]
    header = "query_id\tquery\tpassage_id\tpassage\tstrand\tfragment_start\tfragment_end\tsubstitutions\tindels\n"
    counts = {}
    qn = 0
    for split, wins in splits.items():
        per = a.queries_per_window if split == "train" else 1
        rows = []
        for pid, start, w in wins:
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
                f.write(header)
                for qid, frag, pid, w, rc, fs, fe, subs, indels in rows:
                    rc = rc if force is None else force
                    q = frag.translate(COMP)[::-1] if rc else frag
                    f.write(f"{qid}\t{q}\t{pid}\t{w}\t{'-' if rc else '+'}\t{fs}\t{fe}\t{subs}\t{indels}\n")
        if split != "train":
            with open(os.path.join(a.out, f"{split}.corpus.fa"), "w") as f:
                for pid, _, w in wins:
                    f.write(f">{pid}\n")
                    for i in range(0, len(w), 60):
                        f.write(w[i:i + 60] + "\n")
        counts[split] = {"windows": len(wins), "queries": len(rows)}
        print(f"{split}: {len(wins)} windows, {len(rows)} queries")
    with open(a.fasta, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    args = {k: v for k, v in vars(a).items() if k not in ("out", "fasta")}
    with open(os.path.join(a.out, "task.json"), "w") as f:
        json.dump({"version": VERSION, "fasta": os.path.basename(a.fasta), "fasta_sha256": sha,
                   "arguments": args, "counts": counts}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
