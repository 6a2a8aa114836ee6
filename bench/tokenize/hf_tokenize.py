"""The tokenizing benchmark's peer: HuggingFace `tokenizers` (Python) on the same sequences.

Reads a (gzip/BGZF) FASTA, cuts every record into non-overlapping windows of WINDOW bases (as
`luminome-tokenize --overflow window --window WINDOW` does), tokenizes them with encode_batch and
stacks the ids into a numpy array, so the job matches Luminome's: parse, tokenize, hold ids.

    python3 bench/tokenize/hf_tokenize.py FASTA char|6mer [WINDOW]

char: BPE over A,C,G,T,N with no merges (one token per base). 6mer: DNABERT-style overlapping
6-mers joined by spaces, through a WordLevel model over all 4096 6-mers.
"""

import gzip
import itertools
import sys

import numpy as np
from tokenizers import Tokenizer, models, pre_tokenizers

path, scheme = sys.argv[1], sys.argv[2]
window = int(sys.argv[3]) if len(sys.argv) > 3 else 512

specials = ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"]
if scheme == "char":
    vocab = {t: i for i, t in enumerate(specials + list("ACGTN"))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="[UNK]"))
else:
    kmers = ["".join(p) for p in itertools.product("ACGT", repeat=6)]
    vocab = {t: i for i, t in enumerate(specials + kmers)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()


def records(p):
    opener = gzip.open if open(p, "rb").read(2) == b"\x1f\x8b" else open
    name, parts = None, []
    with opener(p, "rt") as f:
        for line in f:
            if line.startswith(">"):
                if name is not None:
                    yield name, "".join(parts)
                name, parts = line[1:].split()[0], []
            else:
                parts.append(line.strip())
    if name is not None:
        yield name, "".join(parts)


total_bases = 0
arrays = []
for name, seq in records(path):
    seq = seq.upper()
    total_bases += len(seq)
    chunks = [seq[i : i + window] for i in range(0, len(seq), window)]
    if scheme != "char":
        chunks = [" ".join(c[j : j + 6] for j in range(len(c) - 5)) for c in chunks]
    for start in range(0, len(chunks), 4096):
        enc = tok.encode_batch(chunks[start : start + 4096])
        width = max(len(e.ids) for e in enc)
        arrays.append(np.array([e.ids + [0] * (width - len(e.ids)) for e in enc], dtype=np.uint16))
rows = sum(a.shape[0] for a in arrays)
print(f"{total_bases} bases, {rows} windows", file=sys.stderr)
