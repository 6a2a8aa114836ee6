"""The valid inputs every fuzz case starts from (the corpus's `_base/` folder).

Text inputs are cut from test-data (small, so each case runs in about a second with debug
binaries) or derived from it (GTF/GFF3 from the TSS table, TRANSFAC/HOMER from the JASPAR file,
a fragments file from the peaks, a headed VCF from the headerless SNV table, ...). Token, pair,
retrieval and region datasets and one checkpoint per model family are then made by running the
tools on them with tiny settings (as in workflows/snakemake/.test/config/config.yaml, smaller still).

Everything runs with the base folder as working directory, relative paths and argv[0] set to the
tool's bare name, so the bytes do not depend on where the corpus or the binaries live.
"""

from __future__ import annotations

import gzip
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from mutators import bgzf_bytes, gzip_bytes

REPO = Path(__file__).resolve().parents[2]
TD = REPO / "test-data"
BIGWIG = REPO / "tools/luminome-regions/tests/data/acc.K562.slice.bw"

TOOLS = ["luminome-tokenize", "luminome-mask-pairs", "luminome-regions", "luminome-train",
         "luminome-predict", "luminome-importance"]

# Tiny model settings for the checkpoints (the numbers they give mean nothing).
TINY_SEQ = ["--d-model", "16", "--layers", "1", "--heads", "2", "--ffn", "32"]
TINY_RUN = ["--batch-size", "8", "--steps", "3", "--eval-every", "3", "--warmup", "1",
            "--seed", "1", "--threads", "1", "-q"]


def find_bins(bin_dir: str | None) -> dict[str, str]:
    """Tool name -> executable: from `bin_dir`, else target/debug, else PATH."""
    dirs = [Path(bin_dir)] if bin_dir else [REPO / "target/debug"]
    out = {}
    for t in TOOLS:
        for d in dirs:
            p = d / t
            if p.is_file() and os.access(p, os.X_OK):
                out[t] = str(p.resolve())
                break
        else:
            w = None if bin_dir else shutil.which(t)
            if not w:
                raise SystemExit(f"fuzz: {t} not found in {dirs[0]}" + ("" if bin_dir else " or on PATH"))
            out[t] = w
    return out


def run_tool(bins: dict[str, str], cwd: Path, argv: list[str]):
    """Runs a tool (argv[0] its bare name) in cwd; raises with its stderr when it fails."""
    r = subprocess.run(argv, executable=bins[argv[0]], cwd=cwd, capture_output=True, text=True,
                       env={**os.environ, "RUST_BACKTRACE": "0"})
    if r.returncode != 0:
        raise SystemExit(f"fuzz: building the base inputs failed: {' '.join(argv)}\n{r.stderr[-3000:]}")


def _fasta(records: list[tuple[str, str]], width: int) -> str:
    out = []
    for name, seq in records:
        out.append(f">{name}\n")
        out.extend(seq[i:i + width] + "\n" for i in range(0, len(seq), width))
    return "".join(out)


def _read_fasta(path: Path) -> list[tuple[str, str]]:
    recs, name, seq = [], None, []
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            if name is not None:
                recs.append((name, "".join(seq)))
            name, seq = line[1:], []
        else:
            seq.append(line.strip())
    if name is not None:
        recs.append((name, "".join(seq)))
    return recs


def _head(path: Path, n: int) -> str:
    return "".join(path.read_text().splitlines(keepends=True)[:n])


def _jaspar_motifs(path: Path) -> list[tuple[str, str, list[list[float]]]]:
    """(id, name, rows per position [A, C, G, T] counts)."""
    motifs, cur = [], None
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            acc, _, name = line[1:].partition("\t")
            cur = [acc.strip(), name.strip(), {}]
            motifs.append(cur)
        elif line.strip() and cur is not None:
            base = line.strip()[0]
            nums = line[line.index("[") + 1: line.index("]")].split()
            cur[2][base] = [float(x) for x in nums]
    out = []
    for acc, name, cols in motifs:
        w = len(cols["A"])
        out.append((acc, name, [[cols[b][i] for b in "ACGT"] for i in range(w)]))
    return out


def write_text_inputs(base: Path):
    w = lambda name, text: (base / name).write_text(text)
    wb = lambda name, data: (base / name).write_bytes(data)

    # Sequence tables (GUE core promoters): both labels occur in each cut.
    w("prom_train.csv", _head(TD / "gue_prom_core_all/train.csv", 161))
    w("prom_dev.csv", _head(TD / "gue_prom_core_all/dev.csv", 41))
    w("prom_test.csv", _head(TD / "gue_prom_core_all/test.csv", 41))
    # One FASTA per class (tokenize's several inputs, --label and --split): 30 records each.
    w("prom_pos.fa", _head(TD / "gue_prom_core_all/promoters.fa", 60))
    w("prom_neg.fa", _head(TD / "gue_prom_core_all/non_promoters.fa", 60))

    # FASTA / FASTQ, plain, gzip and BGZF.
    name, seq = _read_fasta(TD / "ecoli/ecoli_50kb.fa")[0]
    ecoli = _fasta([(name, seq[:6000])], 80)
    w("ecoli.fa", ecoli)
    wb("ecoli.fa.gz", gzip_bytes(ecoli.encode()))
    wb("ecoli_bgzf.fa.gz", bgzf_bytes(ecoli.encode(), block=2000))
    fq = gzip.decompress((TD / "ecoli/reads.fastq.gz").read_bytes()).decode().splitlines(keepends=True)
    fastq = "".join(fq[: 4 * 24])
    w("reads.fastq", fastq)
    wb("reads.fastq.gz", gzip_bytes(fastq.encode()))
    shutil.copy(TD / "chr22_slice/chr22_slice.fa", base / "chr22_slice.fa")
    shutil.copy(TD / "chr22_slice/chr22_slice.fa.fai", base / "chr22_slice.fa.fai")

    # Intervals and tracks on the chr22 slice.
    for f in ["intervals.bed", "peaks.narrowPeak", "genes_tss.bed", "acc.K562.bedgraph",
              "acc.GM12878.bedgraph"]:
        shutil.copy(TD / "chr22_slice" / f, base / f)
    shutil.copy(BIGWIG, base / "acc.K562.bw")
    # ISM's --positions: 20 bases inside each of the first three intervals.
    core = []
    for line in (TD / "chr22_slice/intervals.bed").read_text().splitlines():
        f = line.split("\t")
        if line.startswith(("#", "track", "browser")) or len(f) < 3:
            continue
        core.append(f"{f[0]}\t{int(f[1]) + 10}\t{int(f[1]) + 30}\n")
        if len(core) == 3:
            break
    w("tss_core.bed", "".join(core))

    # GTF and GFF3 with the same genes (5' ends at the TSS of the ABC table's 500-bp windows).
    gtf, gff = [], ["##gff-version 3\n"]
    for line in (TD / "chr22_slice/genes_tss.bed").read_text().splitlines():
        if line.startswith("#"):
            continue
        chrom, s, e, gname, _, strand, ens, gtype = line.split("\t")
        tss = int(s) + 250
        lo, hi = (tss + 1, tss + 3000) if strand == "+" else (tss - 2999, tss + 1)
        gtf.append(f'{chrom}\tfuzz\tgene\t{lo}\t{hi}\t.\t{strand}\t.\tgene_id "{ens}"; '
                   f'gene_name "{gname}"; gene_type "{gtype}";\n')
        gtf.append(f'{chrom}\tfuzz\ttranscript\t{lo}\t{hi}\t.\t{strand}\t.\tgene_id "{ens}"; '
                   f'transcript_id "{ens}.t1"; gene_name "{gname}";\n')
        gff.append(f"{chrom}\tfuzz\tgene\t{lo}\t{hi}\t.\t{strand}\t.\tID=gene:{ens};Name={gname};"
                   f"biotype={gtype}\n")
    w("genes.gtf", "".join(gtf))
    w("genes.gff3", "".join(gff))

    # A 10x-style fragments file for K562 (chrom start end barcode count), inside the peaks.
    rng = random.Random(0)
    frags = []
    for line in (TD / "chr22_slice/peaks.narrowPeak").read_text().splitlines():
        f = line.split("\t")
        s, e = int(f[1]), int(f[2])
        for _ in range(rng.randint(1, 4)):
            a = rng.randrange(s, max(s + 1, e - 60))
            frags.append((a, a + rng.randint(40, 300), f"BC{rng.randrange(50):03d}-1", rng.randint(1, 3)))
    frags.sort()
    w("fragments.K562.tsv", "".join(f"chr22_slice\t{a}\t{b}\t{bc}\t{c}\n" for a, b, bc, c in frags))

    # Expression: two per-cell-type tables and one matrix with a column per cell type.
    shutil.copy(TD / "expression/k562_tpm_slice.tsv", base / "k562_tpm.tsv")
    shutil.copy(TD / "expression/gm12878_rampage_slice.tsv", base / "gm12878_rampage.tsv")
    k = dict(l.split("\t") for l in (TD / "expression/k562_tpm_slice.tsv").read_text().splitlines())
    g = {l.split("\t")[0]: l.split("\t")[-1] for l in
         (TD / "expression/gm12878_rampage_slice.tsv").read_text().splitlines()[1:]}
    w("expr_matrix.tsv", "gene\tK562\tGM12878\n" + "".join(f"{n}\t{k[n]}\t{g[n]}\n" for n in k))

    # Motif databases: MEME and JASPAR as shipped, TRANSFAC and HOMER converted from JASPAR.
    shutil.copy(TD / "motifs/jaspar_small.meme", base / "jaspar_small.meme")
    shutil.copy(TD / "motifs/jaspar_small.jaspar", base / "jaspar_small.jaspar")
    shutil.copy(TD / "motifs/vierstra_small.meme", base / "vierstra_small.meme")
    shutil.copy(TD / "motifs/vierstra_small_clusters.csv", base / "vierstra_clusters.csv")
    tf, homer = [], []
    for acc, name, rows in _jaspar_motifs(TD / "motifs/jaspar_small.jaspar")[:8]:
        tf.append(f"AC  {acc}\nXX\nID  {name}\nXX\nP0      A      C      G      T\n")
        cons = ""
        for i, r in enumerate(rows, 1):
            c = "ACGT"[max(range(4), key=lambda j: r[j])]
            cons += c
            tf.append(f"{i:02d}  {r[0]:g}  {r[1]:g}  {r[2]:g}  {r[3]:g}  {c}\n")
        tf.append("XX\n//\n")
        homer.append(f">{cons}\t{acc}/{name}\t{len(rows) * 0.8:.3f}\n")
        for r in rows:
            s = sum(r)
            homer.append("\t".join(f"{x / s:.3f}" for x in r) + "\n")
    w("motifs.transfac", "".join(tf))
    w("motifs.homer", "".join(homer))

    # C. elegans: two 3-kb records, the SNVs inside them (headerless table, headed VCF, BGZF VCF),
    # and paired haplotypes (two files, and one interleaved file).
    recs = [(n, s[:3000]) for n, s in _read_fasta(TD / "celegans/celegans_small.fa")]
    w("cel.fa", _fasta(recs, 60))
    w("cel.sizes", "".join(f"{n.split()[0]}\t{len(s)}\n" for n, s in recs))
    w("chr22.sizes", "chr22_slice\t200000\n")
    snv = [l for l in (TD / "celegans/celegans_small.snv.vcf").read_text().splitlines()
           if int(l.split("\t")[1]) <= 3000]
    w("snv.tsv", "".join(l + "\n" for l in snv))
    vcf = ["##fileformat=VCFv4.2\n"]
    vcf += [f"##contig=<ID={n.split()[0]},length={len(s)}>\n" for n, s in recs]
    vcf.append('##INFO=<ID=DP,Number=1,Type=Integer,Description="Depth">\n')
    vcf.append("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
    for i, l in enumerate(snv):
        c, p, vid, ref, alt = l.split("\t")
        vcf.append(f"{c}\t{p}\t{vid}\t{ref}\t{alt}\t50\tPASS\tDP={10 + i}\n")
    w("snv.vcf", "".join(vcf))
    wb("snv.vcf.gz", bgzf_bytes("".join(vcf).encode()))
    hap_a = [(n.split()[0] + "_hap", s[:400]) for n, s in recs]
    rng = random.Random(1)
    hap_b = []
    for n, s in hap_a:
        b = list(s)
        for _ in range(8):
            i = rng.randrange(len(b))
            b[i] = rng.choice("ACGT")
        hap_b.append((n, "".join(b)))
    w("hapA.fa", _fasta(hap_a, 60))
    w("hapB.fa", _fasta(hap_b, 60))
    inter = []
    for (n, a), (_, b) in zip(hap_a, hap_b):
        inter += [(n + "/1", a), (n + "/2", b)]
    w("paired.fa", _fasta(inter, 60))

    # Retrieval pairs (DNA) and the corpus that holds every test positive.
    w("train.pairs.tsv", _head(TD / "retrieval/train.pairs.tsv", 41))
    w("dev.pairs.tsv", _head(TD / "retrieval/dev.pairs.tsv", 11))
    w("test.pairs.tsv", _head(TD / "retrieval/test.pairs.tsv", 11))
    shutil.copy(TD / "retrieval/test.corpus.fa", base / "corpus.fa")

    # Tabular: 80 samples of the breast-cancer table (both diagnoses).
    rows = (TD / "tabular/breast_cancer.tsv").read_text().splitlines(keepends=True)
    w("bc.tsv", rows[0] + "".join(rows[1:81]))

    shutil.copy(TD / "tokenizers/dna_bpe_256.json", base / "tokenizer.json")


def _keep_ckpt(base: Path, run: str, name: str, with_state: bool = False):
    shutil.copy(base / run / "best.safetensors", base / f"{name}.safetensors")
    if with_state:
        shutil.copy(base / run / "last.safetensors", base / f"{name}_last.safetensors")
        shutil.copy(base / run / "last.state.safetensors", base / f"{name}_last.state.safetensors")


def build_base(base: Path, bins: dict[str, str], log=print):
    """Writes every base input into `base` (which must be empty or absent)."""
    base.mkdir(parents=True, exist_ok=True)
    write_text_inputs(base)
    r = lambda *argv: run_tool(bins, base, list(argv))
    q = ["--threads", "1", "-q"]
    log("fuzz: base token datasets")
    for s in ["prom_train", "prom_dev", "prom_test"]:
        r("luminome-tokenize", f"{s}.csv", "--max-length", "72", "-o", f"{s}.safetensors", *q)
    r("luminome-tokenize", "prom_train.csv", "--scheme", "kmer", "-k", "3", "--max-length", "72",
      "-o", "prom_k3.safetensors", *q)
    r("luminome-tokenize", "intervals.bed", "--reference", "chr22_slice.fa", "--max-length", "72",
      "--overflow", "window", "-o", "tss.safetensors", *q)
    for s in ["train", "dev", "test"]:
        r("luminome-tokenize", f"{s}.pairs.tsv", "--format", "pairs", "--scheme", "kmer", "-k", "3",
          "-o", f"{s}_pairs.safetensors", *q)
    r("luminome-tokenize", "corpus.fa", "--like", "train_pairs.safetensors", "-o",
      "corpus.safetensors", *q)
    log("fuzz: base pair datasets")
    r("luminome-mask-pairs", "--fasta", "cel.fa", "--window", "64", "--seed", "1", "-o",
      "cel_pairs.safetensors", *q)
    r("luminome-mask-pairs", "--reference", "cel.fa", "--variants", "snv.vcf", "--keep-info", "DP",
      "--window", "64", "-o", "snv_pairs.safetensors", *q)
    log("fuzz: base region datasets")
    r("luminome-regions", "--reference", "chr22_slice.fa", "--peaks", "peaks.narrowPeak",
      "--accessibility", "K562=acc.K562.bedgraph", "--accessibility", "GM12878=acc.GM12878.bedgraph",
      "--motifs", "jaspar_small.meme", "--genes", "genes_tss.bed", "--bed-tss", "center",
      "--expression", "K562=k562_tpm.tsv", "--expression", "GM12878=gm12878_rampage.tsv",
      "--window", "200000", "--n-regions", "24", "-o", "genes.safetensors", "--threads", "1")
    for i in (1, 2):  # the parts of a sharded regions run (luminome-regions --gather)
        r("luminome-regions", "--reference", "chr22_slice.fa", "--peaks", "peaks.narrowPeak",
          "--accessibility", "K562=acc.K562.bedgraph", "--accessibility", "GM12878=acc.GM12878.bedgraph",
          "--motifs", "jaspar_small.meme", "--genes", "genes_tss.bed", "--bed-tss", "center",
          "--window", "200000", "--n-regions", "24", "--scan-chunk-bp", "3000",
          "--shard", f"{i}/2", "-o", f"regions.p{i}.part.safetensors", *q)
    r("luminome-regions", "--reference", "chr22_slice.fa", "--reuse-regions", "genes.regions.tsv",
      "--tile-step", "20000", "--window", "200000", "--n-regions", "24", "-o", "tiles.safetensors",
      "--threads", "1")
    log("fuzz: base checkpoints (tiny models)")
    tr = ["--train", "prom_train.safetensors", "--dev", "prom_dev.safetensors"]
    r("luminome-train", "mlm", *tr, "-o", "run_mlm", *TINY_SEQ, "--eval-records", "32", *TINY_RUN)
    _keep_ckpt(base, "run_mlm", "mlm")
    r("luminome-train", "classify", "--adapter", "gated", "--init", "mlm.safetensors", *tr,
      "-o", "run_gated", *TINY_SEQ, "--no-kmer-floor", *TINY_RUN)
    _keep_ckpt(base, "run_gated", "gated", with_state=True)
    r("luminome-train", "classify", "--adapter", "gated", "--init", "mlm.safetensors", *tr,
      "-o", "pause", *TINY_SEQ, "--no-kmer-floor", *TINY_RUN[:2], "--steps", "4", "--eval-every", "2",
      "--stop-after-steps", "2", *TINY_RUN[6:])
    for f in ["best.config.json", "last.config.json"]:
        (base / "pause" / f).unlink()
    r("luminome-train", "classify", "--adapter", "mean", "--backbone", "cnn", "--cnn-channels", "8",
      "--cnn-layers", "2", *tr, "-o", "run_cnn", "--no-kmer-floor", *TINY_RUN)
    _keep_ckpt(base, "run_cnn", "cnn")
    r("luminome-train", "bag-of-tokens", *tr, "-o", "run_bot", "--no-kmer-floor", *TINY_RUN)
    _keep_ckpt(base, "run_bot", "bot")
    r("luminome-train", "kmer-linear", *tr, "-o", "run_kl", "--k", "3", "--threads", "1", "-q")
    _keep_ckpt(base, "run_kl", "kl")
    r("luminome-train", "bistrand", "--train", "cel_pairs.safetensors", "-o", "run_bis",
      "--d-model", "8", "--layers", "1", "--cross-heads", "2", *TINY_RUN)
    _keep_ckpt(base, "run_bis", "bis")
    for i in (1, 2):  # the parts of a sharded variant run (luminome-predict --gather)
        r("luminome-predict", "--checkpoint", "bis.safetensors", "--dataset", "snv_pairs.safetensors",
          "--shard", f"{i}/2", "--batch-size", "4", "-o", f"snv.p{i}.part.safetensors", *q)
    r("luminome-train", "region-pretrain", "--train", "tiles.safetensors", "--preset", "tiny",
      "--holdout", "genes", "--blocks", "3", "-o", "run_rp", *TINY_RUN)
    _keep_ckpt(base, "run_rp", "rp")
    r("luminome-train", "expression", "--train", "genes.safetensors", "--init", "rp.safetensors",
      "--head", "attention-pool", "--holdout", "genes", "--blocks", "3", "-o", "run_expr", *TINY_RUN)
    _keep_ckpt(base, "run_expr", "expr")
    for i in (1, 2):  # the parts of a sharded expression importance run (--gather)
        r("luminome-importance", "--checkpoint", "expr.safetensors", "--dataset", "genes.safetensors",
          "--method", "pooling", "--batch-size", "4", "--shard", f"{i}/2",
          "-o", f"pool.p{i}.part.safetensors", *q)
    r("luminome-train", "tabular", "--train", "bc.tsv", "--label", "diagnosis", "--id", "sample",
      "--classes", "benign,malignant", "--d-model", "16", "--layers", "1", "--heads", "2",
      "--steps", "3", "--threshold", "youden", "--seed", "1", "-o", "run_tab", "--threads", "1", "-q")
    _keep_ckpt(base, "run_tab", "tab")
    r("luminome-train", "dual", "--train", "train_pairs.safetensors", "--dev", "dev_pairs.safetensors",
      "-o", "run_dual", "--shared-encoder", "--attention", "genetic", *TINY_SEQ, *TINY_RUN)
    _keep_ckpt(base, "run_dual", "dual")
    for d in base.glob("run_*"):
        shutil.rmtree(d)
