#!/usr/bin/env python3
"""Expected zero-shot SNV scores (masked-LM log-likelihood ratios) from the authors' Caduceus code.

Our own driver script. It writes, under tests/fixtures/caduceus/variants/:
  ref.fa, ref.fa.fai  one random 400-base sequence `chrT` (soft-masked bases 100..119, an N at 150)
  snvs.vcf            8 SNV records (one with two ALT alleles)
  expected_llr.tsv    fixture, id, pos, ref, alt, llr_fwd, llr_rc, llr for each (fixture, ALT)

Scores use the tiny checkpoints `ps_rcps_fused` and `ph_fused` made by make_fixtures.py, loaded
with from_pretrained from their folders (authors' code + the CPU patches in cpu_patches.py),
float32. For a variant at 0-based pos0, the window is the 41 reference bases pos0-20..pos0+20
(the variant sits at index 20, the reference base is kept before masking). The window and its
reverse complement are each tokenized by the checkpoint's own tokenizer (ps: GPN-style
tokenizer.json, no special tokens; ph: CaduceusTokenizer, which appends [SEP]); index 20 is
replaced by the mask id; log_softmax over the logits of the four base tokens at index 20;
llr_fwd = logp[ALT] - logp[REF], llr_rc = logp_rc[comp ALT] - logp_rc[comp REF],
llr = (llr_fwd + llr_rc) / 2.

Run (see tests/fixtures/caduceus/README.md):
  nice /work/venvs/caduceus-ref/bin/python bench/reference/caduceus/make_variant_scores.py
"""

import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_patches import DEFAULT_SRC, load_authors_package  # noqa: E402

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FIXTURE_ROOT = os.path.join(REPO_ROOT, "tools", "luminome-engine", "tests", "fixtures", "caduceus")

SEED = 2024
CHROM = "chrT"
LENGTH = 400
SOFT_MASKED = range(100, 120)  # 0-based, lower case
N_POS = 150  # 0-based
LINE_WIDTH = 60
POSITIONS = [60, 95, 112, 148, 200, 251, 300, 340]  # 1-based VCF POS
MULTI_ALT_INDEX = 4  # snv5 (POS 200) carries two ALT alleles
HALF = 20
WINDOW = 2 * HALF + 1  # 41
FIXTURES = ["ps_rcps_fused", "ph_fused"]
COMP = {"A": "T", "C": "G", "G": "C", "T": "A", "N": "N"}


def revcomp(s):
    return "".join(COMP[c] for c in reversed(s.upper()))


# ----------------------------------------------------------------------------------------------
# Reference and VCF
# ----------------------------------------------------------------------------------------------
def make_reference(rng):
    bases = [rng.choice("ACGT") for _ in range(LENGTH)]
    for i in SOFT_MASKED:
        bases[i] = bases[i].lower()
    bases[N_POS] = "N"
    return "".join(bases)


def write_fasta(seq, path):
    header = f">{CHROM}\n"
    with open(path, "w", newline="\n") as f:
        f.write(header)
        for i in range(0, len(seq), LINE_WIDTH):
            f.write(seq[i:i + LINE_WIDTH] + "\n")
    # samtools faidx: NAME LENGTH OFFSET LINEBASES LINEWIDTH
    with open(path + ".fai", "w", newline="\n") as f:
        f.write(f"{CHROM}\t{len(seq)}\t{len(header)}\t{LINE_WIDTH}\t{LINE_WIDTH + 1}\n")


def read_fasta_via_fai(path):
    """Independent re-read through the .fai (checks the index offsets)."""
    name, length, offset, lb, lw = open(path + ".fai").read().split()
    length, offset, lb, lw = int(length), int(offset), int(lb), int(lw)
    raw = open(path, "rb").read()
    out = []
    for i in range(length):
        out.append(chr(raw[offset + (i // lb) * lw + i % lb]))
    return name, "".join(out)


def make_variants(seq, rng):
    recs = []
    for k, pos in enumerate(POSITIONS):
        pos0 = pos - 1
        assert HALF <= pos0 < LENGTH - HALF and pos0 >= 25 - 1 and LENGTH - pos >= 25
        ref = seq[pos0].upper()
        assert ref in "ACGT", (pos, ref)
        others = [b for b in "ACGT" if b != ref]
        rng.shuffle(others)
        alts = sorted(others[:2]) if k == MULTI_ALT_INDEX else others[:1]
        recs.append(dict(id=f"snv{k + 1}", pos=pos, ref=ref, alts=alts))
    return recs


def write_vcf(recs, path):
    with open(path, "w", newline="\n") as f:
        f.write("##fileformat=VCFv4.2\n")
        f.write(f"##contig=<ID={CHROM},length={LENGTH}>\n")
        f.write("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
        for r in sorted(recs, key=lambda r: r["pos"]):
            f.write(f"{CHROM}\t{r['pos']}\t{r['id']}\t{r['ref']}\t{','.join(r['alts'])}\t.\tPASS\t.\n")


# ----------------------------------------------------------------------------------------------
# Scoring
# ----------------------------------------------------------------------------------------------
def load_fixture(name):
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    from caduceus.modeling_caduceus import CaduceusForMaskedLM
    from caduceus.tokenization_caduceus import CaduceusTokenizer
    folder = os.path.join(FIXTURE_ROOT, name)
    model = AutoModelForMaskedLM.from_pretrained(folder).eval()
    assert type(model) is CaduceusForMaskedLM
    if os.path.exists(os.path.join(folder, "tokenizer.json")):
        tok = AutoTokenizer.from_pretrained(folder)
        base_ids = {b: tok.convert_tokens_to_ids(b.lower()) for b in "ACGT"}
        assert base_ids == {"A": 3, "C": 4, "G": 5, "T": 6}, base_ids
        assert tok.mask_token_id == 1 and tok.unk_token_id == 2
        hand = {"A": 3, "C": 4, "G": 5, "T": 6, "N": 2}
        sep = None
    else:
        tok = CaduceusTokenizer.from_pretrained(folder)
        base_ids = {b: tok.convert_tokens_to_ids(b) for b in "ACGT"}
        assert base_ids == {"A": 7, "C": 8, "G": 9, "T": 10}, base_ids
        assert tok.mask_token_id == 3 and tok.sep_token_id == 1
        hand = {"A": 7, "C": 8, "G": 9, "T": 10, "N": 11}
        sep = 1
    return model, tok, base_ids, hand, sep


def tokenize_window(tok, bases, hand, sep):
    import torch
    ids = tok(bases)["input_ids"]
    expect = [hand[b.upper()] for b in bases] + ([sep] if sep is not None else [])
    assert ids == expect, (bases, ids, expect)
    ids = torch.tensor(ids, dtype=torch.long)
    ids[HALF] = tok.mask_token_id
    return ids


def score_fixture(name, seq, recs):
    import torch
    model, tok, base_ids, hand, sep = load_fixture(name)
    order = [base_ids[b] for b in "ACGT"]
    rows, fwd_ids, rc_ids = [], [], []
    for r in recs:
        pos0 = r["pos"] - 1
        win = seq[pos0 - HALF: pos0 + HALF + 1]
        assert len(win) == WINDOW and win[HALF].upper() == r["ref"]
        rc = revcomp(win)
        assert rc[WINDOW - 1 - HALF] == COMP[r["ref"]] and WINDOW - 1 - HALF == HALF
        fwd_ids.append(tokenize_window(tok, win, hand, sep))
        rc_ids.append(tokenize_window(tok, rc, hand, sep))
    batch = torch.stack(fwd_ids + rc_ids)
    with torch.inference_mode():
        logits = model(input_ids=batch).logits[:, HALF, :]  # [2n, V]
        logp = torch.log_softmax(logits[:, order].float(), dim=-1)  # over A,C,G,T
        # the same, one window at a time (informative: batch vs single)
        single = torch.cat([model(input_ids=batch[i:i + 1]).logits[:, HALF, :] for i in range(len(batch))])
    batch_vs_single = (single - logits).abs().max().item()
    n = len(recs)
    idx = {b: i for i, b in enumerate("ACGT")}
    max_strand_gap = 0.0
    for k, r in enumerate(recs):
        for alt in r["alts"]:
            f = (logp[k, idx[alt]] - logp[k, idx[r["ref"]]]).item()
            b = (logp[n + k, idx[COMP[alt]]] - logp[n + k, idx[COMP[r["ref"]]]]).item()
            max_strand_gap = max(max_strand_gap, abs(f - b))
            rows.append((name, r["id"], r["pos"], r["ref"], alt, f, b, (f + b) / 2))
    return rows, dict(batch_vs_single_logits_maxdiff=batch_vs_single, max_abs_llr_fwd_minus_rc=max_strand_gap,
                      rcps=bool(model.config.rcps))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--caduceus-src", default=os.environ.get("CADUCEUS_SRC", DEFAULT_SRC))
    ap.add_argument("--out", default=os.path.join(FIXTURE_ROOT, "variants"))
    args = ap.parse_args()

    import torch
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    load_authors_package(args.caduceus_src)

    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(SEED)
    seq = make_reference(rng)
    fa = os.path.join(args.out, "ref.fa")
    write_fasta(seq, fa)
    name, again = read_fasta_via_fai(fa)
    assert name == CHROM and again == seq
    recs = make_variants(seq, rng)
    write_vcf(recs, os.path.join(args.out, "snvs.vcf"))

    rows, notes = [], {}
    for fx in FIXTURES:
        r, note = score_fixture(fx, seq, recs)
        rows += r
        notes[fx] = note
        if note["rcps"]:  # RC-equivariant model: both strands must give the same score
            assert note["max_abs_llr_fwd_minus_rc"] < 1e-5, note
    with open(os.path.join(args.out, "expected_llr.tsv"), "w", newline="\n") as f:
        f.write("fixture\tid\tpos\tref\talt\tllr_fwd\tllr_rc\tllr\n")
        for fx, vid, pos, ref, alt, lf, lr, ll in rows:
            f.write(f"{fx}\t{vid}\t{pos}\t{ref}\t{alt}\t{lf:.9g}\t{lr:.9g}\t{ll:.9g}\n")
    for r in recs:
        print(r["id"], r["pos"], r["ref"], ",".join(r["alts"]), "window:", seq[r["pos"] - 1 - HALF:r["pos"] + HALF])
    for fx, note in notes.items():
        print(fx, note)
    print(f"wrote {len(rows)} rows to {os.path.join(args.out, 'expected_llr.tsv')}")


if __name__ == "__main__":
    main()
