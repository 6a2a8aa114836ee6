#!/usr/bin/env python3
"""Regenerate Luminome's small test-data subsets from the shared public datasets.

Usage (from anywhere):
    python3 test-data/make_test_data.py [SHARED_DATA_DIR]

SHARED_DATA_DIR defaults to <repo root>/../shared/data (i.e. /work/shared/data when the
repo is /work/main).  Output goes next to this script (test-data/).  Only the Python
standard library is needed, plus pyBigWig for the two accessibility bedGraphs (they are
skipped with a warning if pyBigWig cannot be imported).  Output is deterministic: running
it twice gives byte-identical files (gzip files are written with mtime=0 and no name).

See test-data/README.md for what each file is.
"""
import csv
import gzip
import io
import os
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "..", "shared", "data"))
OUT = HERE

# ---------------------------------------------------------------- parameters
GUE_ROWS = {"train": 2000, "dev": 500, "test": 500}

SLICE_CHROM = "chr22"
SLICE_START = 37_800_000          # 0-based; chr22_slice position 0 == chr22:37,800,001 (1-based)
SLICE_LEN = 200_000
SLICE_END = SLICE_START + SLICE_LEN
SLICE_NAME = "chr22_slice"
N_INTERVALS = 8

CELEGANS_RECORDS = 2
CELEGANS_LEN = 20_000
ECOLI_LEN = 50_000
N_READS, READ_LEN, READ_STEP = 200, 150, 200

JASPAR_IDS = [
    "MA0002.3",  # Runx1
    "MA0028.3",  # ELK1
    "MA0035.5",  # GATA1
    "MA0050.4",  # Irf1
    "MA0058.4",  # MAX
    "MA0062.4",  # GABPA
    "MA0079.5",  # SP1
    "MA0080.7",  # Spi1 (SPI1/PU.1)
    "MA0095.4",  # Yy1
    "MA0099.4",  # FOS::JUN
    "MA0106.3",  # TP53
    "MA0108.3",  # TBP
    "MA0138.3",  # REST
    "MA0139.2",  # CTCF
    "MA0140.3",  # GATA1::TAL1
    "MA0147.4",  # MYC
    "MA0466.4",  # CEBPB
    "MA0493.3",  # KLF1
    "MA0506.3",  # Nrf1
    "MA0841.2",  # NFE2
]
VIERSTRA_CLUSTERS = [
    "CTCF", "GATA", "SPI", "YY1", "NRF1", "TATA", "KLF/SP/1", "P53-like/1", "REST/NRSF", "ZNF143",
]


def p(*parts):
    return os.path.join(DATA, *parts)


def o(*parts):
    path = os.path.join(OUT, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def write_text(path, text):
    with open(path, "w", newline="\n") as f:
        f.write(text)


def write_gz(path, text):
    """Deterministic gzip (mtime=0, no embedded file name)."""
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as g:
            g.write(text.encode())


def wrap(seq, width):
    return "".join(seq[i:i + width] + "\n" for i in range(0, len(seq), width))


def read_fasta(path):
    """Yield (header_line_without_>, sequence) from a (possibly gzip/BGZF) FASTA."""
    opener = gzip.open if path.endswith(".gz") else open
    header, chunks = None, []
    with opener(path, "rt") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith(">"):
                if header is not None:
                    yield header, "".join(chunks)
                header, chunks = line[1:], []
            else:
                chunks.append(line)
    if header is not None:
        yield header, "".join(chunks)


def inside(start, end):
    return start >= SLICE_START and end <= SLICE_END


# ---------------------------------------------------------------- 1. GUE
def make_gue():
    src = p("gue", "prom", "prom_core_all")
    for split, n in GUE_ROWS.items():
        with open(os.path.join(src, f"{split}.csv")) as f:
            lines = [next(f) for _ in range(n + 1)]
        assert lines[0] == "sequence,label\n", lines[0]
        labels = {ln.rstrip("\n").rsplit(",", 1)[1] for ln in lines[1:]}
        assert labels == {"0", "1"}, (split, labels)
        write_text(o("gue_prom_core_all", f"{split}.csv"), "".join(lines))
        c1 = sum(ln.rstrip("\n").endswith(",1") for ln in lines[1:])
        print(f"gue {split}: {n} rows, label1={c1} label0={n - c1}")
        if split == "train":
            write_gue_fasta(lines[1:])


def write_gue_fasta(rows):
    """The train rows again as two FASTA files, one per class: how labelled sequences often
    arrive (README "Start here": luminome-tokenize promoters.fa non_promoters.fa --label 1,0 --split)."""
    by_label = {"1": [], "0": []}
    for i, ln in enumerate(rows, start=1):
        seq, label = ln.rstrip("\n").rsplit(",", 1)
        by_label[label].append(f">train_row{i}\n{seq}\n")
    write_text(o("gue_prom_core_all", "promoters.fa"), "".join(by_label["1"]))
    write_text(o("gue_prom_core_all", "non_promoters.fa"), "".join(by_label["0"]))


# ---------------------------------------------------------------- 2-5. chr22 slice
def make_chr22():
    name, seq = next(read_fasta(p("hg38_chr22", "chr22.fa.gz")))
    assert name.split()[0] == SLICE_CHROM
    sub = seq[SLICE_START:SLICE_END]
    assert len(sub) == SLICE_LEN and "N" not in sub.upper()
    header = f">{SLICE_NAME}\n"
    write_text(o("chr22_slice", "chr22_slice.fa"), header + wrap(sub, 60))
    write_text(o("chr22_slice", "chr22_slice.fa.fai"),
               f"{SLICE_NAME}\t{SLICE_LEN}\t{len(header)}\t60\t61\n")
    print(f"chr22_slice: {SLICE_CHROM}:{SLICE_START}-{SLICE_END} lowercase={sum(c.islower() for c in sub)}")

    # narrowPeak: rows fully inside, shifted; col 10 (summit offset from start) is relative -> unchanged
    out = []
    with open(p("atac_expression", "abc_k562_chr22", "macs2_peaks.narrowPeak")) as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            s, e = int(c[1]), int(c[2])
            if c[0] == SLICE_CHROM and inside(s, e):
                c[0], c[1], c[2] = SLICE_NAME, str(s - SLICE_START), str(e - SLICE_START)
                out.append("\t".join(c) + "\n")
    write_text(o("chr22_slice", "peaks.narrowPeak"), "".join(out))
    print(f"peaks inside slice: {len(out)}")

    # gene TSS table (500 bp windows centred on the TSS); keep header + all 8 columns
    tss_path = p("hg38_chr22", "abc_hg38_gene_tss",
                 "RefSeqCurated.170308.bed.CollapsedGeneBounds.chr22.hg38.TSS500bp.bed")
    hdr, genes = None, []
    with open(tss_path) as f:
        for line in f:
            if line.startswith("#"):
                hdr = line
                continue
            c = line.rstrip("\n").split("\t")
            s, e = int(c[1]), int(c[2])
            if c[0] == SLICE_CHROM and inside(s, e):
                c[0], c[1], c[2] = SLICE_NAME, str(s - SLICE_START), str(e - SLICE_START)
                genes.append(c)
    genes.sort(key=lambda c: (int(c[1]), c[3]))
    write_text(o("chr22_slice", "genes_tss.bed"), hdr + "".join("\t".join(c) + "\n" for c in genes))
    print(f"genes inside slice: {len(genes)}: " + ", ".join(f"{c[3]}({c[5]})" for c in genes))

    # intervals.bed: 8 BED6 rows from the TSS table, keeping every '-' gene so both strands are present
    minus = [c for c in genes if c[5] == "-"]
    plus = [c for c in genes if c[5] == "+"]
    chosen = minus + plus[: N_INTERVALS - len(minus)]
    chosen.sort(key=lambda c: int(c[1]))
    assert len(chosen) == N_INTERVALS and {c[5] for c in chosen} == {"+", "-"}
    write_text(o("chr22_slice", "intervals.bed"), "".join("\t".join(c[:6]) + "\n" for c in chosen))
    write_text(o("chr22_slice", "bad_past_end.bed"),
               f"{SLICE_NAME}\t{SLICE_LEN - 200}\t{SLICE_LEN + 300}\tpast_end\t0\t+\n")
    write_text(o("chr22_slice", "bad_unknown_chrom.bed"),
               "chrUn_nonexistent\t1000\t1500\tunknown_chrom\t0\t+\n")
    return genes


def make_bedgraphs():
    try:
        import pyBigWig
    except Exception as exc:  # noqa: BLE001
        print(f"WARNING: pyBigWig not importable ({exc}); skipping acc.*.bedgraph")
        return
    for cell in ("K562", "GM12878"):
        bw = pyBigWig.open(p("hg38_chr22", f"acc.{cell}.chr22.bw"))
        ivs = bw.intervals(SLICE_CHROM, SLICE_START, SLICE_END) or ()
        bw.close()
        lines = []
        for s, e, v in ivs:
            s, e = max(s, SLICE_START), min(e, SLICE_END)  # clip intervals straddling the edges
            if e <= s:
                continue
            val = str(int(v)) if float(v).is_integer() else repr(float(v))
            lines.append(f"{SLICE_NAME}\t{s - SLICE_START}\t{e - SLICE_START}\t{val}\n")
        write_text(o("chr22_slice", f"acc.{cell}.bedgraph"), "".join(lines))
        print(f"acc.{cell}.bedgraph: {len(lines)} intervals")


# ---------------------------------------------------------------- 9. expression
def make_expression(genes):
    names = {c[3] for c in genes}
    rows, found = [], set()
    with open(p("hg38_chr22", "k562_tpm_encode", "K562.ENCFF934YBO.TPM.txt")) as f:
        for line in f:
            sym = line.split("\t", 1)[0]
            if sym in names:
                rows.append(line)
                found.add(sym)
    write_text(o("expression", "k562_tpm_slice.tsv"), "".join(rows))
    print(f"k562 TPM rows: {len(rows)}; genes without a row: {sorted(names - found)}")

    # RAMPAGE: rPeaks fully inside the slice (BED9, re-coordinated), their GM12878 quantification rows
    # (original 5 headerless columns), and a derived per-gene table: sum of RPKM over rPeaks overlapping
    # TSS +-500 bp on the same strand (the recipe in rampage_hg38_tss_expression/SOURCE.txt).
    rdir = p("hg38_chr22", "rampage_hg38_tss_expression")
    rpeaks = []
    with gzip.open(os.path.join(rdir, "hg38-rPeaks.bed.gz"), "rt") as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            if c[0] == SLICE_CHROM and inside(int(c[1]), int(c[2])):
                c[0] = SLICE_NAME
                for k in (1, 2, 6, 7):
                    c[k] = str(int(c[k]) - SLICE_START)
                rpeaks.append(c)
    write_text(o("expression", "rampage_rpeaks_slice.bed"), "".join("\t".join(c) + "\n" for c in rpeaks))
    ids = {c[3] for c in rpeaks}
    quant = {}
    with gzip.open(os.path.join(rdir, "ENCSR000AEI.txt.gz"), "rt") as f:  # GM12878
        for line in f:
            rid = line.split("\t", 1)[0]
            if rid in ids:
                quant[rid] = line
    write_text(o("expression", "gm12878_rampage_rpeaks_slice.txt"), "".join(quant[c[3]] for c in rpeaks))
    out = ["gene\tstrand\ttss_slice\tn_rpeaks\trpeak_ids\tRPKM_sum\n"]
    for g in genes:
        tss = int(g[1]) + 250  # centre of the 500 bp window
        hits = [c for c in rpeaks if c[5] == g[5] and int(c[1]) < tss + 500 and int(c[2]) > tss - 500]
        rpkm = sum(float(quant[c[3]].split("\t")[1]) for c in hits)
        out.append(f"{g[3]}\t{g[5]}\t{tss}\t{len(hits)}\t{','.join(c[3] for c in hits) or '.'}\t{rpkm:.4f}\n")
    write_text(o("expression", "gm12878_rampage_slice.tsv"), "".join(out))
    print(f"RAMPAGE rPeaks inside slice: {len(rpeaks)}; genes with >=1 rPeak: "
          f"{sum(1 for ln in out[1:] if ln.split(chr(9))[3] != '0')}/{len(genes)}")


# ---------------------------------------------------------------- 6. C. elegans
def make_celegans():
    recs = []
    for i, (hdr, seq) in enumerate(read_fasta(p("genomes", "celegans_1pct", "C.elegans.fa.gz"))):
        if i == CELEGANS_RECORDS:
            break
        recs.append((hdr.split()[0], seq[:CELEGANS_LEN]))
    # header keeps the record name; the source's "1..N" range description is rewritten for the cut
    write_text(o("celegans", "celegans_small.fa"),
               "".join(f">{n} 1..{len(s)}\n" + wrap(s, 60) for n, s in recs))
    seqs = dict(recs)
    rows, mism = [], 0
    with gzip.open(p("genomes", "celegans_1pct", "C.elegans.vcf.gz"), "rt") as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            if c[0] in seqs and 1 <= int(c[1]) <= len(seqs[c[0]]):
                rows.append(line)
                mism += seqs[c[0]][int(c[1]) - 1].upper() != c[3].upper()
    write_text(o("celegans", "celegans_small.snv.vcf"), "".join(rows))
    print(f"celegans: {[(n, len(s)) for n, s in recs]}, SNVs: {len(rows)}, REF mismatches: {mism}")


# ---------------------------------------------------------------- 7. E. coli
def make_ecoli():
    d = p("genomes", "ecoli_k12_mg1655")
    fna = os.path.join(d, "GCF_000005845.2_ASM584v2_genomic.fna.gz")
    with gzip.open(fna, "rt") as f:
        width = len([next(f) for _ in range(2)][1].rstrip("\n"))  # keep the source line width (80)
    hdr, seq = next(read_fasta(fna))
    sub = seq[:ECOLI_LEN]
    text = f">{hdr}\n" + wrap(sub, width)
    write_text(o("ecoli", "ecoli_50kb.fa"), text)
    write_gz(o("ecoli", "ecoli_50kb.fa.gz"), text)
    fq = []
    for i in range(N_READS):
        pos = READ_STEP * i
        r = sub[pos:pos + READ_LEN]
        assert len(r) == READ_LEN
        fq.append(f"@ecoli_read_{i} pos={pos}\n{r}\n+\n{'I' * READ_LEN}\n")
    write_gz(o("ecoli", "reads.fastq.gz"), "".join(fq))
    print(f"ecoli: {hdr!r}, {len(sub)} bp, line width {width}, {N_READS} reads")


# ---------------------------------------------------------------- 8. motifs
def make_motifs():
    d = p("motifs", "jaspar2024")
    want = set(JASPAR_IDS)
    # MEME: preamble (up to the first MOTIF line) + the verbatim MOTIF blocks
    with open(os.path.join(d, "JASPAR2024_CORE_vertebrates_non-redundant_pfms.meme")) as f:
        text = f.read()
    pre, *blocks = text.split("\nMOTIF ")
    kept = [b for b in blocks if b.split()[0] in want]
    meme = pre + "".join("\nMOTIF " + b for b in kept)
    if not meme.endswith("\n"):
        meme += "\n"
    write_text(o("motifs", "jaspar_small.meme"), meme)
    # JASPAR: '>' header + 4 rows per motif, verbatim
    with open(os.path.join(d, "JASPAR2024_CORE_vertebrates_non-redundant_pfms.jaspar")) as f:
        text = f.read()
    jblocks = [">" + b for b in text.split(">")[1:]]
    jkept = [b for b in jblocks if b[1:].split()[0] in want]
    write_text(o("motifs", "jaspar_small.jaspar"), "".join(jkept))
    assert len(kept) == len(jkept) == len(want), (len(kept), len(jkept))
    print(f"jaspar: {len(kept)} motifs: " + ", ".join(b.split()[1] for b in kept))

    d = p("motifs", "vierstra_v1.0")
    clusters = set(VIERSTRA_CLUSTERS)
    with open(os.path.join(d, "vierstra_v1.0_motif_annotations.csv"), newline="") as f:
        lines = f.read().splitlines(keepends=True)
    rows = list(csv.reader(io.StringIO("".join(lines))))
    name_col = rows[0].index("Name")
    motif_col = rows[0].index("Motif")
    keep = [lines[0]] + [ln for ln, r in zip(lines[1:], rows[1:]) if r[name_col] in clusters]
    members = {r[motif_col] for r in rows[1:] if r[name_col] in clusters}
    write_text(o("motifs", "vierstra_small_clusters.csv"), "".join(keep))
    with open(os.path.join(d, "vierstra_v1.0_motifs_2174_from_GET_NrMotifV1.meme")) as f:
        text = f.read()
    pre, *blocks = text.split("\nMOTIF ")
    kept = [b for b in blocks if b.split()[0] in members]
    per = defaultdict(int)
    for b in kept:
        per[b.split("\n", 1)[0].split()[1]] += 1
    assert len(kept) == len(members) == len(keep) - 1
    meme = pre + "".join("\nMOTIF " + b for b in kept)
    if not meme.endswith("\n"):
        meme += "\n"
    write_text(o("motifs", "vierstra_small.meme"), meme)
    print(f"vierstra: {len(kept)} member motifs in {len(per)} clusters: {dict(per)}")


def main():
    if not os.path.isdir(DATA):
        sys.exit(f"shared data dir not found: {DATA}")
    make_gue()
    genes = make_chr22()
    make_bedgraphs()
    make_expression(genes)
    make_celegans()
    make_ecoli()
    make_motifs()


if __name__ == "__main__":
    main()
