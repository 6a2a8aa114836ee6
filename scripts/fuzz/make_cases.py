#!/usr/bin/env python3
"""Generates the fuzz corpus: malformed variants of every input format the tools read.

    python3 scripts/fuzz/make_cases.py --seed 1 --out fuzz-corpus [--limit 150] [--bin target/debug]

Writes OUT/_base/ (the valid inputs, made from test-data and by running the tools with tiny
settings) and one folder per case, OUT/<case-id>/, holding the case's damaged input files under
in/ and a case.json:

    id           case id: <tool>.<template>.<input or "cli">.<mutation>
    tool         the binary
    template     the valid command the case was derived from
    argv         the command, with {in:NAME} / {out:NAME} placeholders (run_cases.py resolves them
                 to in/NAME and out/NAME in a scratch folder)
    inputs       every input file (NAME under in/); those in `mutated` come from the case folder,
                 the others from _base/
    mutated      the damaged input(s)
    outputs      the final output paths (under out/, or in/ when a case writes beside its inputs)
    allowed_leftovers  globs (relative to the scratch folder) that may remain after a failure
    culprit      the file (or flag) an error message should name
    flag         for command-line cases: the offending flag
    expect       refuse | either (the damage may leave a valid input) | equal (a neutral change:
                 if accepted, the outputs must equal the unmodified run's)
    setup        extra scratch setup: mkdirs, hardlinks, symlinks
    notes        what was done

The same seed gives the same corpus (byte for byte); --limit picks a stratified sample (every
tool and template represented) without changing the cases it keeps.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mutators as M  # noqa: E402
from base import REPO, build_base, find_bins  # noqa: E402

PH = re.compile(r"\{(in|out):([^}]+)\}")
MARKER = ".luminome-fuzz-corpus"

# ---------------------------------------------------------------------------------- templates


@dataclass
class Template:
    id: str
    argv: list[str]
    slots: dict[str, str]                      # input name -> kind (what gets damaged)
    extra_outputs: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)
    flags: dict[str, list[str]] = field(default_factory=dict)   # flag -> bad values
    equal_outputs: bool = True                  # outputs comparable with the unmodified run
    extra_inputs: list[str] = field(default_factory=list)
    may_change: list[str] = field(default_factory=list)     # inputs it may rewrite by design
    outputs_override: list[str] | None = None

    @property
    def tool(self) -> str:
        return self.argv[0]

    def inputs(self, base: Path) -> list[str]:
        names = []
        for a in self.argv:
            for kind, name in PH.findall(a):
                if kind == "in" and name not in names:
                    names.append(name)
        names = [n for n in names if not (base / n).is_dir()]
        names += [e for e in self.extra_inputs if e not in names]
        for n in list(names):
            for side in sidecars(n):
                if (base / side).exists() and side not in names:
                    names.append(side)
        return names

    def outputs(self) -> list[str]:
        if self.outputs_override is not None:
            return list(self.outputs_override)
        outs = []
        for a in self.argv:
            for kind, name in PH.findall(a):
                if kind == "out":
                    # train's -o is a run folder: its final output is best.safetensors
                    outs.append(f"out/{name}/best.safetensors" if self.tool == "luminome-train"
                                else "out/" + name)
        return outs + ["out/" + e for e in self.extra_outputs]


def sidecars(name: str) -> list[str]:
    if name.endswith(".safetensors"):
        stem = name[: -len(".safetensors")]
        return [stem + ".index.tsv", stem + ".samples.tsv", stem + ".regions.tsv",
                stem + ".state.safetensors"]
    if name.endswith(".fa"):
        return [name + ".fai"]
    return []


Q = ["--threads", "1"]
QQ = Q + ["-q"]
TINY_SEQ = ["--d-model", "16", "--layers", "1", "--heads", "2", "--ffn", "32"]
TINY_RUN = ["--batch-size", "8", "--steps", "2", "--eval-every", "2", "--warmup", "1",
            "--seed", "1"] + QQ
TRAIN_ALLOWED = ["out/trainrun", "out/trainrun/last.safetensors", "out/trainrun/last.config.json",
                 "out/trainrun/last.state.safetensors", "out/trainrun/metrics.tsv"]
BAD_SIZE = ["0", "-1", "18446744073709551615", "18446744073709551616", "abc"]
BAD_FRAC = ["-0.1", "1.5", "nan", "inf"]


def templates() -> list[Template]:
    T = Template
    tok_out = ["-o", "{out:ds.safetensors}"]
    t = [
        # ------------------------------------------------------------------ luminome-tokenize
        T("csv", ["luminome-tokenize", "{in:prom_train.csv}", "--max-length", "72", *tok_out, *QQ],
          {"prom_train.csv": "csv"}, ["ds.index.tsv"],
          flags={"--max-length": ["0", "1", "2", "18446744073709551615", "4294967296", "-1"],
                 "--threads": ["0", "-1"], "--shard-records": ["0", "18446744073709551615"],
                 "--overflow error --max-length": ["3"], "--scheme kmer -k": ["0", "9", "255"]}),
        T("fasta", ["luminome-tokenize", "{in:ecoli.fa}", "--overflow", "window", "--window", "128",
                    "--stride", "64", "--soft-mask", *tok_out, *QQ],
          {"ecoli.fa": "fasta"}, ["ds.index.tsv"],
          flags={"--window": ["0", "18446744073709551615", "4294967296"],
                 "--stride": ["0", "18446744073709551615"], "--max-n": BAD_FRAC,
                 "--label": ["-1", "99999999999999999999", "x"]}),
        T("split", ["luminome-tokenize", "{in:prom_pos.fa}", "{in:prom_neg.fa}", "--label", "1,0",
                    "--split", "0.8,0.1,0.1", "--max-length", "72", *tok_out, *QQ],
          {"prom_pos.fa": "fasta", "prom_neg.fa": "fasta"},
          outputs_override=[f"out/ds.{s}.{e}" for s in ("train", "dev", "test")
                            for e in ("safetensors", "index.tsv")],
          flags={"--split": ["0.5,0.6", "1,0", "0.999,0.0005,0.0005", "x", "-0.1,1.1"],
                 "--label": ["1,0,2", "x"], "--seed": ["-1", "18446744073709551616"]}),
        T("fagz", ["luminome-tokenize", "{in:ecoli.fa.gz}", "--scheme", "kmer", "-k", "3",
                   "--overflow", "window", "--window", "120", *tok_out, *QQ],
          {"ecoli.fa.gz": "gz"}, ["ds.index.tsv"]),
        T("bgzf", ["luminome-tokenize", "{in:ecoli_bgzf.fa.gz}", "--overflow", "window",
                   "--window", "128", *tok_out, *QQ],
          {"ecoli_bgzf.fa.gz": "bgzf"}, ["ds.index.tsv"]),
        T("fastq", ["luminome-tokenize", "{in:reads.fastq}", "--max-length", "160", *tok_out, *QQ],
          {"reads.fastq": "fastq"}, ["ds.index.tsv"]),
        T("fqgz", ["luminome-tokenize", "{in:reads.fastq.gz}", "--scheme", "kmer", "-k", "6",
                   "--kmer-mode", "non-overlapping", *tok_out, *QQ],
          {"reads.fastq.gz": "gz"}, ["ds.index.tsv"]),
        T("bed", ["luminome-tokenize", "{in:intervals.bed}", "--reference", "{in:chr22_slice.fa}",
                  "--width", "200", "--rc", "both", *tok_out, *QQ],
          {"intervals.bed": "bed", "chr22_slice.fa": "reference", "chr22_slice.fa.fai": "fai"},
          ["ds.index.tsv"],
          flags={"--width": ["0", "18446744073709551615", "4294967296"],
                 "--flank": ["18446744073709551615", "9223372036854775807", "-5"]}),
        T("peak", ["luminome-tokenize", "{in:peaks.narrowPeak}", "--reference", "{in:chr22_slice.fa}",
                   "--width", "100", "--max-length", "102", *tok_out, *QQ],
          {"peaks.narrowPeak": "narrowpeak"}, ["ds.index.tsv"]),
        T("pairs", ["luminome-tokenize", "{in:train.pairs.tsv}", "--format", "pairs", "--scheme",
                    "kmer", "-k", "3", *tok_out, *QQ],
          {"train.pairs.tsv": "pairs_tsv"}, ["ds.index.tsv"],
          flags={"--max-length": ["0", "1", "18446744073709551615"]}),
        T("hf", ["luminome-tokenize", "{in:prom_dev.csv}", "--scheme", "hf", "--tokenizer",
                 "{in:tokenizer.json}", *tok_out, *QQ],
          {"tokenizer.json": "json"}, ["ds.index.tsv"]),
        T("like", ["luminome-tokenize", "{in:prom_dev.csv}", "--like", "{in:mlm.safetensors}",
                   *tok_out, *QQ],
          {"mlm.safetensors": "checkpoint"}, ["ds.index.tsv"]),
        T("likepairs", ["luminome-tokenize", "{in:corpus.fa}", "--like",
                        "{in:train_pairs.safetensors}", *tok_out, *QQ],
          {"train_pairs.safetensors": "dataset", "corpus.fa": "fasta"}, ["ds.index.tsv"]),
        # ------------------------------------------------------------------ luminome-mask-pairs
        T("fasta", ["luminome-mask-pairs", "--fasta", "{in:cel.fa}", "--window", "64",
                    "-o", "{out:p.safetensors}", *QQ],
          {"cel.fa": "fasta"}, ["p.index.tsv"],
          flags={"--window": ["0", "1", "18446744073709551615", "4294967296"],
                 "--stride": ["0", "18446744073709551615"],
                 "--mask-fraction": BAD_FRAC + ["0"], "--max-n-fraction": ["nan", "-1"],
                 "--seed": ["18446744073709551616", "-1"], "--threads": ["0"]}),
        T("snvtable", ["luminome-mask-pairs", "--reference", "{in:cel.fa}", "--variants",
                       "{in:snv.tsv}", "--window", "64", "-o", "{out:p.safetensors}", *QQ],
          {"snv.tsv": "snvtable", "cel.fa": "reference"}, ["p.index.tsv"],
          flags={"--window": ["0", "1", "18446744073709551615"],
                 "--mask random --mask-fraction": ["1.5", "nan"]}),
        T("vcf", ["luminome-mask-pairs", "--reference", "{in:cel.fa}", "--variants", "{in:snv.vcf}",
                  "--keep-info", "DP", "--pairing", "alleles", "--window", "64",
                  "-o", "{out:p.safetensors}", *QQ],
          {"snv.vcf": "vcf"}, ["p.index.tsv"],
          flags={"--keep-info": ["NOPE", ""]}),
        T("vcfgz", ["luminome-mask-pairs", "--reference", "{in:cel.fa}", "--variants",
                    "{in:snv.vcf.gz}", "--window", "64", "-o", "{out:p.safetensors}", *QQ],
          {"snv.vcf.gz": "bgzf"}, ["p.index.tsv"]),
        T("ab", ["luminome-mask-pairs", "--fasta-a", "{in:hapA.fa}", "--fasta-b", "{in:hapB.fa}",
                 "--window", "64", "-o", "{out:p.safetensors}", *QQ],
          {"hapA.fa": "fasta", "hapB.fa": "fasta"}, ["p.index.tsv"]),
        T("paired", ["luminome-mask-pairs", "--paired", "{in:paired.fa}", "--window", "64",
                     "-o", "{out:p.safetensors}", *QQ],
          {"paired.fa": "fasta"}, ["p.index.tsv"]),
    ]
    # ---------------------------------------------------------------------- luminome-regions
    reg_common = ["--reference", "{in:chr22_slice.fa}", "--window", "200000", "--n-regions", "24",
                  "-o", "{out:r.safetensors}", *Q]
    reg_out = ["r.samples.tsv", "r.regions.tsv"]
    peaks = ["--peaks", "{in:peaks.narrowPeak}"]
    acc2 = ["--accessibility", "K562={in:acc.K562.bedgraph}",
            "--accessibility", "GM12878={in:acc.GM12878.bedgraph}"]
    genes = ["--genes", "{in:genes_tss.bed}", "--bed-tss", "center"]
    expr1 = ["--expression", "K562={in:k562_tpm.tsv}"]
    expr2 = expr1 + ["--expression", "GM12878={in:gm12878_rampage.tsv}"]
    R = "luminome-regions"
    t += [
        T("main", [R, *reg_common, *peaks, *acc2, "--motifs", "{in:vierstra_small.meme}",
                   "--motif-clusters", "{in:vierstra_clusters.csv}", *genes, *expr2],
          {"chr22_slice.fa": "reference", "chr22_slice.fa.fai": "fai", "peaks.narrowPeak": "narrowpeak",
           "acc.K562.bedgraph": "bedgraph", "vierstra_small.meme": "meme",
           "vierstra_clusters.csv": "clusters", "genes_tss.bed": "genes_bed",
           "k562_tpm.tsv": "expr_noheader", "gm12878_rampage.tsv": "expr_header"}, reg_out,
          flags={"--window": ["0", "18446744073709551615"],
                 "--n-regions": ["0", "18446744073709551615", "100000000"],
                 "--pvalue": ["0", "1.5", "nan", "-1"], "--score-threshold": ["nan", "inf"],
                 "--pseudocount": ["-1", "nan"], "--max-region-width": ["0"],
                 "--merge-gap": ["18446744073709551615"], "--threads": ["0"],
                 "--expression-gene-column": ["0", "99"], "--expression-value-column": ["0", "99"]}),
        T("bigwig", [R, *reg_common, *peaks, "--accessibility", "K562=bigwig:{in:acc.K562.bw}",
                     "--motifs", "{in:jaspar_small.meme}", *genes, *expr1],
          {"acc.K562.bw": "bigwig"}, reg_out),
        T("bwcall", [R, *reg_common, "--accessibility", "K562=bigwig:{in:acc.K562.bw}",
                     "--motifs", "{in:jaspar_small.meme}", *genes, *expr1],
          {"acc.K562.bw": "bigwig"}, reg_out,
          flags={"--call-fold": ["nan", "-1", "0", "inf"], "--call-min-width": ["0"],
                 "--call-merge-gap": ["18446744073709551615"]}),
        T("gtf", [R, *reg_common, *peaks, "--accessibility", "K562={in:acc.K562.bedgraph}",
                  "--motifs", "{in:jaspar_small.meme}", "--genes", "{in:genes.gtf}", *expr1],
          {"genes.gtf": "gtf"}, reg_out),
        T("gff3", [R, *reg_common, *peaks, "--accessibility", "K562={in:acc.K562.bedgraph}",
                   "--motifs", "{in:jaspar_small.meme}", "--genes", "{in:genes.gff3}", *expr1],
          {"genes.gff3": "gff3"}, reg_out),
        T("jaspar", [R, *reg_common, *peaks, "--accessibility", "K562={in:acc.K562.bedgraph}",
                     "--motifs", "{in:jaspar_small.jaspar}", *genes, *expr1],
          {"jaspar_small.jaspar": "jaspar"}, reg_out),
        T("transfac", [R, *reg_common, *peaks, "--accessibility", "K562={in:acc.K562.bedgraph}",
                       "--motifs", "{in:motifs.transfac}", *genes, *expr1],
          {"motifs.transfac": "transfac"}, reg_out),
        T("homer", [R, *reg_common, *peaks, "--accessibility", "K562={in:acc.K562.bedgraph}",
                    "--motifs", "{in:motifs.homer}", *genes, *expr1],
          {"motifs.homer": "homer"}, reg_out),
        T("frag", [R, *reg_common, *peaks, "--accessibility", "K562=fragments:{in:fragments.K562.tsv}",
                   "--motifs", "{in:jaspar_small.meme}", *genes, *expr1],
          {"fragments.K562.tsv": "fragments"}, reg_out),
        T("reuse", [R, *reg_common, "--reuse-regions", "{in:genes.regions.tsv}", "--tile-step", "20000"],
          {"genes.regions.tsv": "regions_tsv"}, reg_out,
          flags={"--tile-step": ["0", "1", "18446744073709551615"]}),
        T("matrix", [R, *reg_common, *peaks, *acc2, "--motifs", "{in:jaspar_small.meme}", *genes,
                     "--expression-matrix", "{in:expr_matrix.tsv}"],
          {"expr_matrix.tsv": "expr_matrix"}, reg_out),
        T("gather", [R, *reg_common, *peaks, *acc2, "--motifs", "{in:jaspar_small.meme}", *genes,
                     "--scan-chunk-bp", "3000", "--gather", "{in:regions.p1.part.safetensors}",
                     "{in:regions.p2.part.safetensors}"],
          {"regions.p1.part.safetensors": "dataset", "regions.p2.part.safetensors": "dataset"},
          reg_out, flags={"--scan-chunk-bp": ["0", "2999"], "--shard": ["0/2", "3/2", "x"]}),
    ]
    # ---------------------------------------------------------------------- luminome-train
    TR = "luminome-train"
    prom = ["--train", "{in:prom_train.safetensors}", "--dev", "{in:prom_dev.safetensors}"]
    run = ["-o", "{out:trainrun}"]
    gen_flags = {"--batch-size": ["0", "18446744073709551615"], "--steps": ["0"],
                 "--lr": ["nan", "-1", "inf"], "--eval-every": ["0"], "--grad-accum": ["0"],
                 "--clip-norm": ["nan", "-1"], "--weight-decay": ["nan"],
                 "--min-lr-ratio": ["2", "-1"], "--warmup": ["18446744073709551615"]}
    seq_flags = {"--d-model": ["0", "3", "18446744073709551615", "1048576"], "--heads": ["0", "3"],
                 "--layers": ["0", "100000"], "--ffn": ["0", "4294967296"],
                 "--dropout": ["1.5", "-0.1", "nan", "1"], "--max-length": ["0", "1", "8"]}
    t += [
        T("mlm", [TR, "mlm", *prom, *run, *TINY_SEQ, "--eval-records", "32", *TINY_RUN],
          {"prom_train.safetensors": "dataset", "prom_dev.safetensors": "dataset"},
          allowed=TRAIN_ALLOWED, equal_outputs=False,
          flags={**gen_flags, **seq_flags, "--mask-prob": ["0", "1.5", "nan"],
                 "--eval-records": ["0"], "--position": ["nope"]}),
        T("gated", [TR, "classify", "--adapter", "gated", "--init", "{in:mlm.safetensors}", *prom,
                    *run, *TINY_SEQ, "--no-kmer-floor", *TINY_RUN],
          {"mlm.safetensors": "checkpoint", "prom_train.safetensors": "dataset"},
          allowed=TRAIN_ALLOWED, equal_outputs=False,
          flags={"--classes": ["0", "1", "18446744073709551615"], "--d-model": ["32"],
                 "--metric": ["nope"]}),
        T("cnn", [TR, "classify", "--adapter", "mean", "--backbone", "cnn", "--cnn-channels", "8",
                  "--cnn-layers", "2", *prom, *run, "--no-kmer-floor", *TINY_RUN],
          {"prom_dev.safetensors": "dataset"}, allowed=TRAIN_ALLOWED, equal_outputs=False,
          flags={"--cnn-kernel": ["0", "2", "18446744073709551615"], "--cnn-layers": ["0", "64", "70"],
                 "--cnn-channels": ["0", "4294967296"], "--cnn-first-kernel": ["0", "4"],
                 "--floor-k": ["0", "99"]}),
        T("bot", [TR, "bag-of-tokens", *prom, *run, "--no-kmer-floor", *TINY_RUN],
          {"prom_train.safetensors": "dataset"}, allowed=TRAIN_ALLOWED, equal_outputs=False),
        T("kl", [TR, "kmer-linear", *prom, *run, "--k", "3", *QQ],
          {"prom_train.safetensors": "dataset", "prom_dev.safetensors": "dataset"},
          allowed=TRAIN_ALLOWED, equal_outputs=False,
          flags={"--k": ["0", "9", "20", "5-1", "1-99"], "--l2": ["-1", "nan", "0"],
                 "--max-iter": ["0"], "--tol": ["nan", "-1"]}),
        T("bistrand", [TR, "bistrand", "--train", "{in:cel_pairs.safetensors}", *run, "--d-model", "8",
                       "--layers", "1", "--cross-heads", "2", *TINY_RUN],
          {"cel_pairs.safetensors": "dataset"},
          allowed=TRAIN_ALLOWED, equal_outputs=False,
          flags={"--d-state": ["0", "4294967296"], "--expand": ["0"], "--d-conv": ["0"],
                 "--dt-rank": ["0"], "--cross-heads": ["0", "3"], "--max-length": ["0"],
                 "--d-model": ["0", "18446744073709551615"]}),
        T("rpre", [TR, "region-pretrain", "--train", "{in:tiles.safetensors}", "--preset", "tiny",
                   "--holdout", "genes", "--blocks", "3", *run, *TINY_RUN],
          {"tiles.safetensors": "dataset", "tiles.samples.tsv": "samples_tsv"},
          allowed=TRAIN_ALLOWED, equal_outputs=False,
          flags={"--mask-fraction": ["0", "1", "1.5", "nan"], "--blocks": ["0", "1", "100000"],
                 "--test-block": ["99"], "--dev-block": ["0"]}),
        T("expr", [TR, "expression", "--train", "{in:genes.safetensors}", "--init", "{in:rp.safetensors}",
                   "--head", "attention-pool", "--holdout", "genes", "--blocks", "3", *run, *TINY_RUN],
          {"genes.safetensors": "dataset", "rp.safetensors": "checkpoint",
           "genes.samples.tsv": "samples_tsv"},
          allowed=TRAIN_ALLOWED, equal_outputs=False,
          flags={"--blocks": ["0", "100000"], "--mlp-hidden": ["0"],
                 "--holdout cell-type --test-cell-type": ["Nope"]}),
        T("tab", [TR, "tabular", "--train", "{in:bc.tsv}", "--label", "diagnosis", "--id", "sample",
                  "--classes", "benign,malignant", "--d-model", "16", "--layers", "1", "--heads", "2",
                  "--steps", "2", "--seed", "1", *run, *QQ],
          {"bc.tsv": "tabular"}, allowed=TRAIN_ALLOWED, equal_outputs=False,
          flags={"--folds": ["0", "1", "1000"], "--val-fraction": ["0", "1", "nan"],
                 "--classes": ["benign", "a,b", ","], "--label": ["nope"], "--id": ["nope"],
                 "--categorical": ["nope"], "--d-model": ["0", "3"]}),
        T("tabcv", [TR, "tabular", "--train", "{in:bc.tsv}", "--label", "diagnosis", "--id", "sample",
                    "--classes", "benign,malignant", "--model", "mlp", "--folds", "2", "--steps", "2",
                    "--seed", "1", *run, *QQ],
          {"bc.tsv": "tabular"}, allowed=TRAIN_ALLOWED + ["out/trainrun/fold-*", "out/trainrun/fold-*/*",
                                                           "out/trainrun/cv_*"],
          equal_outputs=False, flags={"--hidden": ["0"], "--folds": ["81"]}),
        T("dual", [TR, "dual", "--train", "{in:train_pairs.safetensors}", "--dev",
                   "{in:dev_pairs.safetensors}", *run, "--shared-encoder", *TINY_SEQ, *TINY_RUN],
          {"train_pairs.safetensors": "dataset"},
          allowed=TRAIN_ALLOWED, equal_outputs=False,
          flags={"--temperature": ["0", "-1", "nan", "inf"], "--batch-size": ["1"]}),
        # a run paused by --stop-after-steps, resumed in place (its folder is the output, by design)
        T("resume", [TR, "classify", "--adapter", "gated", *prom, "-o", "{in:pause}", *TINY_SEQ,
                     "--no-kmer-floor", "--resume", "{in:pause/last.safetensors}", *QQ],
          {"pause/last.state.safetensors": "state", "pause/last.safetensors": "checkpoint"},
          extra_inputs=["pause/best.safetensors", "pause/metrics.tsv"],
          may_change=["in/pause/*"], outputs_override=[], equal_outputs=False),
        # the same, continued into a new folder
        T("resume_new_dir", [TR, "classify", "--adapter", "gated", *prom, *run, *TINY_SEQ,
                             "--no-kmer-floor", "--resume", "{in:pause/last.safetensors}", *QQ],
          {}, extra_inputs=["pause/best.safetensors", "pause/metrics.tsv"],
          allowed=TRAIN_ALLOWED, equal_outputs=False),
    ]
    # ---------------------------------------------------------------------- luminome-predict
    P = "luminome-predict"
    t += [
        T("cls", [P, "--checkpoint", "{in:gated.safetensors}", "--dataset", "{in:prom_test.safetensors}",
                  "-o", "{out:pred.tsv}", "--metrics", "{out:metrics.tsv}", *QQ],
          {"gated.safetensors": "checkpoint", "prom_test.safetensors": "dataset",
           "prom_test.index.tsv": "index"},
          flags={"--batch-size": ["0", "18446744073709551615"], "--threads": ["0"],
                 "--device": ["cuda:99", "metal", "gpu"], "--subset": ["test"],
                 "--in-batch-size": ["0"]}),
        T("cnn", [P, "--checkpoint", "{in:cnn.safetensors}", "--dataset", "{in:prom_test.safetensors}",
                  "-o", "{out:pred.tsv}", *QQ], {"cnn.safetensors": "checkpoint"}),
        T("bot", [P, "--checkpoint", "{in:bot.safetensors}", "--dataset", "{in:prom_test.safetensors}",
                  "-o", "{out:pred.tsv}", *QQ], {"bot.safetensors": "checkpoint"}),
        T("kl", [P, "--checkpoint", "{in:kl.safetensors}", "--dataset", "{in:prom_test.safetensors}",
                 "-o", "{out:pred.tsv}", *QQ], {"kl.safetensors": "checkpoint"}),
        T("var", [P, "--checkpoint", "{in:bis.safetensors}", "--dataset", "{in:snv_pairs.safetensors}",
                  "--variants", "{in:snv.vcf}", "-o", "{out:snv.tsv}", "--vcf", "{out:snv.vcf.gz}",
                  "--bedgraph", "{out:snv.bedgraph}", *QQ],
          {"bis.safetensors": "checkpoint", "snv_pairs.safetensors": "dataset",
           "snv_pairs.index.tsv": "index", "snv.vcf": "vcf"}),
        T("varbw", [P, "--checkpoint", "{in:bis.safetensors}", "--dataset", "{in:snv_pairs.safetensors}",
                    "--variants", "{in:snv.vcf}", "-o", "{out:snv.tsv}", "--bedgraph", "{out:snv.bw}",
                    "--chrom-sizes", "{in:cel.sizes}", *QQ],
          {"cel.sizes": "chrom_sizes"}),
        T("gather", [P, "--checkpoint", "{in:bis.safetensors}", "--dataset", "{in:snv_pairs.safetensors}",
                     "--variants", "{in:snv.vcf}", "--batch-size", "4", "--gather",
                     "{in:snv.p1.part.safetensors}", "{in:snv.p2.part.safetensors}", "-o", "{out:snv.tsv}",
                     "--vcf", "{out:snv.vcf.gz}", "--bedgraph", "{out:snv.bedgraph}", *QQ],
          {"snv.p1.part.safetensors": "dataset", "snv.p2.part.safetensors": "dataset"},
          flags={"--batch-size": ["8", "0"], "--shard": ["0/2", "3/2", "1/0", "x"]}),
        T("expr", [P, "--checkpoint", "{in:expr.safetensors}", "--dataset", "{in:genes.safetensors}",
                   "--subset", "test", "-o", "{out:expr.tsv}", "--metrics", "{out:metrics.tsv}", *QQ],
          {"expr.safetensors": "checkpoint", "genes.safetensors": "dataset",
           "genes.samples.tsv": "samples_tsv"}),
        T("tab", [P, "--checkpoint", "{in:tab.safetensors}", "--dataset", "{in:bc.tsv}",
                  "-o", "{out:pred.tsv}", *QQ],
          {"tab.safetensors": "checkpoint", "bc.tsv": "tabular"}),
        T("dual", [P, "--checkpoint", "{in:dual.safetensors}", "--dataset", "{in:test_pairs.safetensors}",
                   "--corpus", "{in:corpus.safetensors}", "--in-batch-size", "4", "-o", "{out:ranks.tsv}",
                   "--metrics", "{out:metrics.tsv}", "--embeddings", "{out:emb.safetensors}", *QQ],
          {"dual.safetensors": "checkpoint", "test_pairs.safetensors": "dataset",
           "corpus.safetensors": "dataset", "corpus.index.tsv": "index"}, ["emb.index.tsv"],
          flags={"--in-batch-size": ["0", "1", "18446744073709551615"], "--side": ["nope"]}),
    ]
    # ---------------------------------------------------------------------- luminome-importance
    I = "luminome-importance"
    t += [
        T("gates", [I, "--checkpoint", "{in:gated.safetensors}", "--dataset", "{in:prom_test.safetensors}",
                    "--method", "gates", "-o", "{out:g.tsv}", "--npz", "{out:g.npz}", *QQ],
          {"gated.safetensors": "checkpoint", "prom_test.safetensors": "dataset"},
          flags={"--records": ["0", "18446744073709551615"], "--batch-size": ["0"],
                 "--only-label": ["7", "-1"], "--method": ["attention", "pooling"]}),
        T("ig", [I, "--checkpoint", "{in:gated.safetensors}", "--dataset", "{in:tss.safetensors}",
                 "--method", "ig", "--ig-steps", "4", "-o", "{out:ig.tsv}", "--bedgraph", "{out:ig.bedgraph}",
                 *QQ],
          {"tss.safetensors": "dataset", "tss.index.tsv": "index"},
          flags={"--ig-steps": ["0", "18446744073709551615"], "--target": ["99", "-1"]}),
        T("igbw", [I, "--checkpoint", "{in:gated.safetensors}", "--dataset", "{in:tss.safetensors}",
                   "--method", "saliency", "-o", "{out:s.tsv}", "--bedgraph", "{out:s.bw}",
                   "--chrom-sizes", "{in:chr22.sizes}", *QQ],
          {"chr22.sizes": "chrom_sizes"}),
        T("cnn", [I, "--checkpoint", "{in:cnn.safetensors}", "--dataset", "{in:prom_test.safetensors}",
                  "--method", "saliency", "--records", "10", "-o", "{out:s.tsv}", "--npz", "{out:s.npz}", *QQ],
          {"cnn.safetensors": "checkpoint"}, flags={"--method": ["gates"]}),
        T("ism", [I, "--checkpoint", "{in:gated.safetensors}", "--dataset", "{in:tss.safetensors}",
                  "--method", "ism", "--records", "4", "--positions", "{in:tss_core.bed}",
                  "-o", "{out:ism.tsv}", "--npz", "{out:ism.npz}", "--bedgraph", "{out:ism.bedgraph}",
                  *QQ],
          {"tss.safetensors": "dataset", "tss.index.tsv": "index", "tss_core.bed": "bed"},
          flags={"--ism-rows": ["0", "18446744073709551615"], "--records": ["0"],
                 "--ism-score": ["nope"]}),
        T("dls", [I, "--checkpoint", "{in:cnn.safetensors}", "--dataset", "{in:prom_test.safetensors}",
                  "--method", "deepliftshap", "--records", "3", "--shuffles", "4",
                  "-o", "{out:dls.tsv}", "--npz", "{out:dls.npz}", "--bedgraph", "{out:dls.bedgraph}",
                  *QQ],
          {"cnn.safetensors": "checkpoint", "prom_test.safetensors": "dataset"},
          flags={"--shuffles": ["0", "18446744073709551615"], "--seed": ["-1"],
                 "--records": ["0"]}),
        T("expr", [I, "--checkpoint", "{in:expr.safetensors}", "--dataset", "{in:genes.safetensors}",
                   "--method", "pooling", "-o", "{out:pool.tsv}", "--bedgraph", "{out:pool.bedgraph}",
                   "--npz", "{out:pool.npz}", *QQ],
          {"expr.safetensors": "checkpoint", "genes.safetensors": "dataset",
           "genes.regions.tsv": "regions_tsv"},
          flags={"--top": ["0", "18446744073709551615"], "--method": ["gates", "attention"]}),
        T("exprgather", [I, "--checkpoint", "{in:expr.safetensors}", "--dataset", "{in:genes.safetensors}",
                         "--method", "pooling", "--batch-size", "4", "-o", "{out:pool.tsv}",
                         "--bedgraph", "{out:pool.bedgraph}", "--npz", "{out:pool.npz}", "--gather",
                         "{in:pool.p1.part.safetensors}", "{in:pool.p2.part.safetensors}", *QQ],
          {"pool.p1.part.safetensors": "dataset", "pool.p2.part.safetensors": "dataset"},
          flags={"--batch-size": ["8", "0"], "--method": ["saliency"]}),
        T("tab", [I, "--checkpoint", "{in:tab.safetensors}", "--dataset", "{in:bc.tsv}",
                  "--method", "attention", "--records", "20", "--top", "5", "-o", "{out:imp.tsv}",
                  "--ranking", "{out:rank.tsv}", *QQ],
          {"tab.safetensors": "checkpoint", "bc.tsv": "tabular"},
          flags={"--target": ["nope", "benign,malignant"], "--top": ["0"], "--method": ["gates"]}),
    ]
    for x in t:
        x.id = {"luminome-tokenize": "tokenize", "luminome-mask-pairs": "mask-pairs",
                "luminome-regions": "regions", "luminome-train": "train",
                "luminome-predict": "predict", "luminome-importance": "importance"}[x.tool] + "." + x.id
    return t


# ---------------------------------------------------------------------------------- mutations

TEXT_GENERIC = list(M.TEXT_MUTATORS)
KIND_FORMAT = {
    "csv": "csv", "pairs_tsv": "tsv-table", "tabular": "tsv-table", "expr_header": "tsv-table",
    "expr_noheader": "tsv", "expr_matrix": "tsv-table", "clusters": "csv", "regions_tsv": "tsv-table",
    "samples_tsv": "tsv-table", "index": "tsv-table", "fasta": "fasta", "reference": "fasta",
    "fastq": "fastq", "gz": "gzip", "bgzf": "bgzf", "bed": "bed", "narrowpeak": "narrowPeak",
    "genes_bed": "bed", "bedgraph": "bedGraph", "fragments": "fragments", "gtf": "gtf", "gff3": "gff3",
    "meme": "meme", "jaspar": "jaspar", "transfac": "transfac", "homer": "homer", "vcf": "vcf",
    "snvtable": "vcf-table", "fai": "fai", "json": "tokenizer-json", "bigwig": "bigwig",
    "dataset": "safetensors", "checkpoint": "safetensors", "state": "safetensors",
    "metrics_tsv": "tsv-table", "chrom_sizes": "chrom.sizes",
}
BED_KINDS = {"bed", "narrowpeak", "genes_bed", "bedgraph", "fragments"}
# chrom.sizes: two columns, damaged like a BED's first two (the length in column 2)


def _motif_specific(kind: str):
    out = []
    if kind == "meme":
        out.append(("meme_w_mismatch", lambda d, r: (re.sub(rb"w= \d+", b"w= 999", d, count=1),
                                                     "first motif declares w= 999"), "refuse"))
        out.append(("meme_alength", lambda d, r: (re.sub(rb"alength= 4", b"alength= 20", d, count=1),
                                                  "first motif declares alength= 20"), "refuse"))
        out.append(("meme_neg_prob", lambda d, r: (re.sub(rb"0\.(\d+)", rb"-0.\1", d, count=7),
                                                   "first probabilities negative"), "refuse"))
        out.append(("meme_no_rows", lambda d, r: (re.sub(rb"(letter-probability matrix[^\n]*\n)(?:[ \t]*[0-9.]+[^\n]*\n)+",
                                                         rb"\1", d, count=1), "first matrix has no rows"), "refuse"))
    if kind == "jaspar":
        out.append(("jaspar_ragged", lambda d, r: (d.replace(b" ]", b" 5 ]", 1), "first A row one count longer"), "refuse"))
        out.append(("jaspar_no_bracket", lambda d, r: (d.replace(b"[", b"", 1), "first '[' removed"), "either"))
    if kind == "transfac":
        out.append(("transfac_no_p0", lambda d, r: (re.sub(rb"P0[^\n]*\n", b"", d, count=1), "first P0 line removed"), "either"))
        out.append(("transfac_no_end", lambda d, r: (d.replace(b"//\n", b"", 1), "first '//' removed"), "either"))
    if kind == "homer":
        out.append(("homer_5cols", lambda d, r: (re.sub(rb"\n([0-9.]+\t)", rb"\n0.1\t\1", d, count=1), "a row of 5 numbers"), "refuse"))
        out.append(("homer_no_tabs", lambda d, r: (d.replace(b"\t", b" "), "spaces instead of tabs"), "either"))
    return out


def _vcf_specific(kind: str):
    def col(d, rng, c, value, note):
        ls = M.lines_of(d)
        idx = [i for i, l in enumerate(ls) if l.strip() and not l.startswith(b"#")]
        if not idx:
            return d, "no data line"
        i = rng.choice(idx)
        f = ls[i].rstrip(b"\r\n").split(b"\t")
        if c < len(f):
            f[c] = value
        ls[i] = b"\t".join(f) + b"\n"
        return M.join(ls), f"line {i + 1}: {note}"
    out = [
        ("vcf_pos_zero", lambda d, r: col(d, r, 1, b"0", "POS 0"), "refuse"),
        ("vcf_pos_huge", lambda d, r: col(d, r, 1, b"18446744073709551615", "POS 2^64-1"), "refuse"),
        ("vcf_pos_past_contig", lambda d, r: col(d, r, 1, b"2999999", "POS past the contig end"), "either"),
        ("vcf_indel", lambda d, r: col(d, r, 3, b"ACGTACGT", "REF an 8-base allele (indel)"), "either"),
        ("vcf_symbolic", lambda d, r: col(d, r, 4, b"<DEL>", "ALT <DEL>"), "either"),
        ("vcf_multiallelic", lambda d, r: col(d, r, 4, b"A,C,G", "ALT A,C,G"), "either"),
        ("vcf_alt_bad", lambda d, r: col(d, r, 4, b"Z", "ALT 'Z'"), "refuse"),
        ("vcf_chrom_unknown", lambda d, r: col(d, r, 0, b"chrNope", "unknown CHROM"), "either"),
        ("vcf_ref_dot", lambda d, r: col(d, r, 3, b".", "REF '.'"), "refuse"),
    ]
    if kind == "vcf":
        out += [
            ("vcf_no_chrom_header", lambda d, r: (re.sub(rb"#CHROM[^\n]*\n", b"", d), "#CHROM line removed"), "either"),
            ("vcf_info_bad", lambda d, r: col(d, r, 7, b"DP=abc;;=", "INFO 'DP=abc;;='"), "either"),
            ("vcf_no_fileformat", lambda d, r: (re.sub(rb"##fileformat[^\n]*\n", b"", d), "##fileformat removed"), "either"),
            ("vcf_data_before_header", lambda d, r: (_move_first_data_up(d), "a record before the header lines"), "refuse"),
        ]
    return out


def _move_first_data_up(d: bytes) -> bytes:
    ls = M.lines_of(d)
    idx = [i for i, l in enumerate(ls) if l.strip() and not l.startswith(b"#")]
    if not idx:
        return d
    line = ls.pop(idx[0])
    return line + M.join(ls)


def _gxf_specific(kind: str):
    def attr(d, rng, new, note):
        ls = M.lines_of(d)
        idx = [i for i, l in enumerate(ls) if l.strip() and not l.startswith(b"#")]
        i = rng.choice(idx)
        f = ls[i].rstrip(b"\r\n").split(b"\t")
        f[-1] = new(f[-1])
        ls[i] = b"\t".join(f) + b"\n"
        return M.join(ls), f"line {i + 1}: {note}"
    return [
        ("gxf_start_gt_end", lambda d, r: _swap_cols(d, r, 3, 4), "refuse"),
        ("gxf_start_zero", lambda d, r: M.bed_coord(d, r, 3, "0"), "refuse"),
        ("gxf_end_huge", lambda d, r: M.bed_coord(d, r, 4, "18446744073709551615"), "either"),
        ("gxf_strand_bad", lambda d, r: M.bed_coord(d, r, 6, "?"), "either"),
        ("gxf_attr_unclosed", lambda d, r: attr(d, r, lambda a: a.replace(b'"', b"", 1) if b'"' in a else a.replace(b"=", b"", 1),
                                                "attribute quoting broken"), "either"),
        ("gxf_attr_empty", lambda d, r: attr(d, r, lambda a: b".", "attributes '.'"), "either"),
        ("gxf_8cols", lambda d, r: attr(d, r, lambda a: a + b"\tEXTRA", "a 10th column"), "either"),
    ]


def _swap_cols(d, rng, a, b):
    ls = M.lines_of(d)
    idx = [i for i, l in enumerate(ls) if l.strip() and not l.startswith(b"#")]
    i = rng.choice(idx)
    f = ls[i].rstrip(b"\r\n").split(b"\t")
    f[a], f[b] = f[b], f[a]
    ls[i] = b"\t".join(f) + b"\n"
    return M.join(ls), f"line {i + 1}: columns {a + 1} and {b + 1} swapped"


def _fai_specific():
    return [
        ("fai_len_huge", lambda d, r: M.bed_coord(d, r, 1, "1000000000000"), "refuse"),
        ("fai_offset_past", lambda d, r: M.bed_coord(d, r, 2, "999999999"), "refuse"),
        ("fai_linebases_zero", lambda d, r: M.bed_coord(d, r, 3, "0"), "refuse"),
        ("fai_width_lt_bases", lambda d, r: M.bed_coord(d, r, 4, "10"), "refuse"),
        ("fai_len_short", lambda d, r: M.bed_coord(d, r, 1, "1000"), "refuse"),
        ("fai_other_name", lambda d, r: M.bed_coord(d, r, 0, "chrOther"), "refuse"),
    ]


def _table_specific(kind: str):
    out = []
    if kind in ("csv", "pairs_tsv", "tabular", "expr_header", "expr_matrix", "clusters",
                "regions_tsv", "samples_tsv", "index"):
        def rename_col(d, rng):
            ls = M.lines_of(d)
            if not ls:
                return d, "empty"
            delim = M._delim(ls[0])
            f = ls[0].rstrip(b"\r\n").split(delim)
            k = rng.randrange(len(f))
            f[k] = b"renamed_" + f[k]
            ls[0] = delim.join(f) + b"\n"
            return M.join(ls), f"header column {k + 1} renamed"

        def dup_col(d, rng):
            ls = M.lines_of(d)
            delim = M._delim(ls[0])
            f = ls[0].rstrip(b"\r\n").split(delim)
            k = rng.randrange(1, len(f)) if len(f) > 1 else 0
            f[k] = f[0]
            ls[0] = delim.join(f) + b"\n"
            return M.join(ls), f"header column {k + 1} renamed to column 1's name (duplicate)"
        out += [("hdr_rename", rename_col, "either"), ("hdr_dup_col", dup_col, "either")]
    if kind in ("pairs_tsv", "tabular", "expr_matrix", "clusters"):
        def reorder(d, rng):
            ls = M.lines_of(d)
            delim = M._delim(ls[0])
            rows = [l.rstrip(b"\r\n").split(delim) for l in ls if l.strip()]
            n = len(rows[0])
            perm = list(range(n))
            rng.shuffle(perm)
            out_ = [delim.join(r[p] if p < len(r) else b"" for p in perm) + b"\n" for r in rows]
            return M.join(out_), f"columns reordered {perm}"
        out.append(("col_reorder", reorder, "equal"))
    if kind == "csv":
        def quote_all(d, rng):
            ls = M.lines_of(d)
            return M.join([b",".join(b'"' + x + b'"' for x in l.rstrip(b"\r\n").split(b",")) + b"\n" for l in ls]), \
                "every field double-quoted"
        out.append(("csv_quoted", quote_all, "equal"))
        out.append(("csv_unbalanced_quote", lambda d, r: (d.replace(b"\n", b'\n"', 3), "unbalanced quotes on lines 2-4"), "either"))
        out.append(("csv_label_float", lambda d, r: M.extreme_number(d, r, "0.5"), "refuse"))
        out.append(("csv_label_huge", lambda d, r: M.extreme_number(d, r, "99999999999999999999"), "refuse"))
        out.append(("csv_label_neg", lambda d, r: M.extreme_number(d, r, "-3"), "either"))
    if kind == "tabular":
        out.append(("tab_missing_cells", lambda d, r: _blank_cells(d, r), "either"))
        out.append(("tab_label_new", lambda d, r: (d.replace(b"\tbenign\n", b"\tunknown_class\n", 2),
                                                   "two rows with an undeclared diagnosis"), "either"))
    return out


def _blank_cells(d, rng):
    ls = M.lines_of(d)
    n = 0
    for _ in range(10):
        i = rng.randrange(1, len(ls))
        f = ls[i].rstrip(b"\r\n").split(b"\t")
        k = rng.randrange(1, len(f) - 1)
        f[k] = rng.choice([b"", b"NA", b"nan", b"?"])
        ls[i] = b"\t".join(f) + b"\n"
        n += 1
    return M.join(ls), f"{n} cells blanked (empty, NA, nan, ?)"


def _json_specific():
    def edit(fn, note):
        def f(d, rng):
            try:
                j = json.loads(d)
            except ValueError:
                return d, "not JSON"
            fn(j)
            return json.dumps(j).encode(), note
        return f

    def pretty(d, rng):
        return json.dumps(json.loads(d), indent=3).encode() + b"\n", "re-indented (same JSON)"
    return [
        ("json_pretty", pretty, "equal"),
        ("json_vocab_empty", edit(lambda j: j["model"].__setitem__("vocab", {}), "model.vocab emptied"), "refuse"),
        ("json_model_type", edit(lambda j: j["model"].__setitem__("type", "Nope"), "model.type 'Nope'"), "refuse"),
        ("json_merges_bad", edit(lambda j: j["model"].__setitem__("merges", ["A"]), "model.merges ['A']"), "refuse"),
        ("json_array", lambda d, r: (b"[]", "the JSON '[]'"), "refuse"),
        ("json_vocab_huge_id", edit(lambda j: j["model"]["vocab"].__setitem__("ZZZ", 4294967295), "a vocab id 4294967295"), "either"),
    ]


def _rewrap(d: bytes, rng):
    width = rng.choice([50, 70, 100])
    out, seq = [], []
    for line in d.splitlines():
        if line.startswith(b">"):
            if seq:
                s = b"".join(seq)
                out += [s[i:i + width] for i in range(0, len(s), width)]
            out.append(line)
            seq = []
        else:
            seq.append(line.strip())
    if seq:
        s = b"".join(seq)
        out += [s[i:i + width] for i in range(0, len(s), width)]
    return b"\n".join(out) + b"\n", f"sequence lines rewrapped to {width} bases"


def _bigwig_mutations(data: bytes, rng: random.Random):
    out = [
        ("truncate", *M.truncate(data, rng), "refuse"),
        ("truncate_header", data[:rng.randrange(8, 64)], "cut inside the 64-byte header", "refuse"),
        ("byteflip", *M.byte_flip(data, rng), "either"),
        ("empty", b"", "empty file", "refuse"),
        ("garbage", *M.binary_garbage(data, rng), "refuse"),
        ("magic", b"\x00\x00\x00\x00" + data[4:], "magic number zeroed", "refuse"),
        ("bedgraph_text", (REPO / "test-data/chr22_slice/acc.K562.bedgraph").read_bytes()[:5000],
         "a bedGraph with a bigWig name", "refuse"),
    ]
    fields = M.bigwig_fields(data)
    names = sorted(fields)
    for fname in names:
        off, size = fields[fname]
        v = rng.choice([0, (1 << (8 * size)) - 1, 1 << (8 * size - 2), len(data) + 17])
        out.append((f"bw_{fname}", M.put_u(data, off, size, v), f"{fname} set to {v}", "either"))
    return out


def mutations_for(kind: str, data: bytes, rng: random.Random, budget: int):
    """[(mutation, bytes, note, expect)] for one input slot, at most about `budget` + extras."""
    out = []
    if kind in ("dataset", "checkpoint", "state"):
        role = "dataset" if kind == "dataset" else "checkpoint"
        allm = M.safetensors_mutations(data, rng, role)
        core = {"st_trunc_header", "st_trunc_data", "st_hlen_max", "st_hlen_past_end", "st_shape_huge",
                "st_shape_overflow", "st_offsets_oob", "st_meta_drop", "st_meta_json_cut"}
        keep = [m for m in allm if m[0] in core]
        rest = [m for m in allm if m[0] not in core]
        keep += rng.sample(rest, min(len(rest), max(0, budget + 4 - len(keep))))
        return keep
    if kind == "bigwig":
        allm = _bigwig_mutations(data, rng)
        return allm[:7] + rng.sample(allm[7:], min(len(allm) - 7, budget))
    if kind in ("gz", "bgzf"):
        plain = M.gzip.decompress(data)
        gzm = [(n, *f(data, rng), "refuse" if n not in ("gz_trailing_garbage",) else "either")
               for n, f in M.GZ_MUTATORS.items()]
        gzm.append(("gz_of_truncate_midline", M.gzip_bytes(M.truncate_midline(plain, rng)[0]),
                    "gzip of the text cut in the middle of a line", "either"))
        gzm.append(("gz_of_garbage", M.gzip_bytes(M.binary_garbage(plain, rng)[0]),
                    "gzip of 4 KiB of random bytes", "refuse"))
        gzm.append(("gz_of_crlf", M.gzip_bytes(M.crlf(plain, rng)[0]), "gzip of the CRLF text", "equal"))
        if kind == "gz":
            gzm.append(("recompress_bgzf", M.bgzf_bytes(plain, 1000), "the same text as BGZF", "equal"))
            gzm.append(("plain_text", plain, "not compressed at all (same name)", "equal"))
        else:
            gzm.append(("recompress_gzip", M.gzip_bytes(plain), "the same text as plain gzip", "equal"))
            b = bytearray(data)
            if len(b) > 18:
                struct_bsize = 16
                b[struct_bsize:struct_bsize + 2] = b"\xff\xff"
                gzm.append(("bgzf_bsize", bytes(b), "first BGZF block's BSIZE set to 65535", "either"))
        return gzm
    # text formats
    generic = rng.sample(TEXT_GENERIC, min(budget, len(TEXT_GENERIC)))
    for name in ["empty", "truncate_midline"]:
        if name not in generic:
            generic.append(name)
    for name in generic:
        d, note = M.TEXT_MUTATORS[name](data, rng)
        exp = "either" if name in M.MAYBE_VALID else "refuse"
        if name in M.NEUTRAL:
            exp = "equal"
        out.append((name, d, note, exp))
    specific = []
    if kind in ("fasta", "reference", "fastq"):
        for n, f in M.SEQ_MUTATORS.items():
            specific.append((n, f, "either" if n in M.MAYBE_VALID else "refuse"))
        if kind == "fastq":
            for n, f in M.FASTQ_MUTATORS.items():
                specific.append((n, f, "refuse"))
        else:
            specific.append(("fasta_rewrap", _rewrap, "equal"))
    if kind in BED_KINDS:
        for n, f in M.BED_MUTATORS.items():
            if n == "bed_strand_bad" and kind in ("bedgraph", "fragments"):
                continue
            exp = "either" if n in ("bed_unknown_chrom", "bed_zero_width", "bed_end_past_chrom") else "refuse"
            specific.append((n, f, exp))
    if kind in ("meme", "jaspar", "transfac", "homer"):
        specific += _motif_specific(kind)
    if kind in ("vcf", "snvtable"):
        specific += _vcf_specific(kind)
    if kind in ("gtf", "gff3"):
        specific += _gxf_specific(kind)
    if kind == "fai":
        specific += _fai_specific()
    if kind == "chrom_sizes":
        specific += [
            ("sizes_len_zero", lambda d, r: M.bed_coord(d, r, 1, "0"), "either"),
            ("sizes_len_short", lambda d, r: M.bed_coord(d, r, 1, "10"), "either"),
            ("sizes_len_huge", lambda d, r: M.bed_coord(d, r, 1, "18446744073709551615"), "refuse"),
            ("sizes_other_name", lambda d, r: M.bed_coord(d, r, 0, "chrOther"), "either"),
            ("sizes_dup", M.duplicate_all, "either"),
        ]
    if kind == "json":
        specific += _json_specific()
    specific += _table_specific(kind)
    for n, f, exp in rng.sample(specific, min(len(specific), max(3, budget // 2))):
        d, note = f(data, rng)
        out.append((n, d, note, exp))
    # extreme numbers: two more values, named
    if kind not in ("fasta", "reference", "fastq", "json"):
        for v in rng.sample(["nan", "inf", "-1", "1e300", "18446744073709551615"], 1):
            d, note = M.extreme_number(data, rng, v)
            out.append((f"extreme_{v.replace('-', 'neg').replace('+', '')}", d, note, "either"))
    return out


# Wrong-format substitutes: a file of another kind under the slot's name.
WRONG_POOL = {
    "fasta": "ecoli.fa", "bed": "intervals.bed", "vcf": "snv.vcf", "csv": "prom_dev.csv",
    "token-dataset": "prom_test.safetensors", "pair-dataset": "snv_pairs.safetensors",
    "region-dataset": "genes.safetensors", "classifier-checkpoint": "gated.safetensors",
    "bistrand-checkpoint": "bis.safetensors", "tabular-checkpoint": "tab.safetensors",
    "expression-checkpoint": "expr.safetensors", "bigwig": "acc.K562.bw", "fasta.gz": "ecoli.fa.gz",
    "meme": "jaspar_small.meme", "gtf": "genes.gtf", "tokenizer-json": "tokenizer.json",
    "tabular": "bc.tsv", "bedgraph": "acc.K562.bedgraph", "retrieval-pairs": "test_pairs.safetensors",
    "state": "gated_last.state.safetensors",
}


def wrong_for(name: str, kind: str, rng: random.Random, like: bool = False) -> list[str]:
    own = {
        "dataset": {"token-dataset", "pair-dataset", "region-dataset", "retrieval-pairs"},
        "checkpoint": {"classifier-checkpoint", "bistrand-checkpoint", "tabular-checkpoint",
                       "expression-checkpoint"},
    }
    if kind in ("dataset", "checkpoint", "state"):
        # the most telling substitutes: the other kind of safetensors, and a sibling of the same kind
        pool = ["token-dataset", "pair-dataset", "region-dataset", "retrieval-pairs",
                "classifier-checkpoint", "bistrand-checkpoint", "tabular-checkpoint",
                "expression-checkpoint", "state", "fasta", "bigwig"]
    else:
        pool = ["fasta", "bed", "vcf", "csv", "token-dataset", "bigwig", "fasta.gz", "meme", "gtf",
                "tokenizer-json", "tabular", "bedgraph"]
    # leave out substitutes that are valid for the slot (a FASTA for a FASTQ: sniffed from the
    # bytes; another classifier checkpoint; a BED where a narrowPeak goes; ...)
    compatible = set()
    if kind in ("fasta", "reference", "fastq", "gz", "bgzf") and not name.startswith("snv"):
        compatible |= {"fasta", "fasta.gz"}
    if kind in ("vcf", "snvtable") or name.startswith("snv.vcf"):
        compatible |= {"vcf"}
    if kind in BED_KINDS:
        compatible |= {"bed", "bedgraph"}
    if kind == "dataset" and name.startswith(("prom_", "tss", "corpus")):
        compatible |= {"token-dataset"}
    if kind == "dataset" and "pairs" in name:
        compatible |= {"retrieval-pairs"}
    if kind == "checkpoint" and name.startswith(("gated", "cnn", "bot", "kl", "mlm")):
        compatible |= {"classifier-checkpoint"}
    if like:
        compatible |= {"token-dataset", "retrieval-pairs", "pair-dataset", "classifier-checkpoint",
                       "bistrand-checkpoint"}
    pool = [p for p in pool if WRONG_POOL[p] != name and p not in compatible]
    picks = rng.sample(pool, 2)
    return [WRONG_POOL[p] for p in picks]


# ---------------------------------------------------------------------------------- case building

def _set_flag(argv: list[str], flag: str, value: str) -> list[str]:
    """Replace the value of `flag` (the last word of a multi-word flag spec) or append it."""
    words = flag.split()
    a = list(argv)
    pre, last = words[:-1], words[-1]
    # leading words ("--overflow error") are set as flag/value pairs too
    for i in range(0, len(pre) - 1, 2):
        a = _set_flag(a, pre[i], pre[i + 1])
    if len(pre) % 2 == 1:  # a boolean-ish word with no value: append as is
        a += [pre[-1]]
    if last in a:
        i = a.index(last)
        del a[i:i + 2]
    # a value that starts with '-' goes as --flag=value (as a user would write it; otherwise the
    # parser takes it for a flag and the case tests nothing)
    a += [f"{last}={value}"] if value.startswith("-") else [last, value]
    return a


def make_all(base: Path, seed: int, budget: int):
    cases = []
    tpls = templates()
    for tp in tpls:
        inputs = tp.inputs(base)
        outputs = tp.outputs()
        common = {"tool": tp.tool, "template": tp.id, "argv": tp.argv, "inputs": inputs,
                  "outputs": outputs, "allowed_leftovers": tp.allowed,
                  "compare_outputs": tp.equal_outputs, "may_change": tp.may_change}
        for slot, kind in tp.slots.items():
            rng = random.Random(f"{seed}:{tp.id}:{slot}")
            data = (base / slot).read_bytes()
            short = slot.replace(".", "_").replace("/", "_")
            fai = slot + ".fai"
            for mname, mdata, note, expect in mutations_for(kind, data, rng, budget):
                if expect == "equal" and not tp.equal_outputs:
                    expect = "either"
                extra = {}
                if kind == "reference" and fai in inputs and tp.equal_outputs:
                    # the index now describes another file: if the tool accepts it, its output must
                    # be what the damaged FASTA gives without an index (indexed in memory)
                    extra["oracle_remove"] = ["in/" + fai]
                cases.append({**common, "id": f"{tp.id}.{short}.{mname}", "format": KIND_FORMAT[kind],
                              "mutated": {slot: mdata}, "culprit": slot, "expect": expect,
                              "notes": note, **extra})
            for wrong in wrong_for(slot, kind, rng, like="--like" in tp.argv):
                cases.append({**common, "id": f"{tp.id}.{short}.wrong_{wrong.replace('.', '_')}",
                              "format": KIND_FORMAT[kind],
                              "mutated": {slot: (base / wrong).read_bytes()}, "culprit": slot,
                              "expect": "refuse", "notes": f"{slot} replaced by the content of {wrong}"})
        # command-line cases
        rng = random.Random(f"{seed}:{tp.id}:cli")
        for flag, values in tp.flags.items():
            for v in values:
                argv = _set_flag(tp.argv, flag, v)
                key = flag.split()[-1].lstrip("-")
                vv = {"18446744073709551615": "u64max", "18446744073709551616": "u64max1",
                      "": "empty"}.get(v, v.replace("-", "neg").replace(".", "p").replace(",", "_"))
                extra = flag.split()[:-1]
                cid = f"{tp.id}.cli.{key}_{vv}" + ("_" + "_".join(w.lstrip("-") for w in extra) if extra else "")
                cases.append({**common, "id": cid, "format": "cli", "argv": argv, "mutated": {},
                              "culprit": flag.split()[-1], "flag": flag.split()[-1], "expect": "either",
                              "notes": f"{flag} {v!r}"})
        if tp.id in OUTPUT_CASE_TEMPLATES:
            cases += output_cases(tp, common, base)
    # ids are unique by construction; make sure
    seen = {}
    for c in cases:
        if c["id"] in seen:
            seen[c["id"]] += 1
            c["id"] += f".{seen[c['id']]}"
        else:
            seen[c["id"]] = 1
    return cases


# Templates whose output handling is tested (one per distinct writer: the others share it).
OUTPUT_CASE_TEMPLATES = {
    "tokenize.csv", "tokenize.pairs", "tokenize.bed", "mask-pairs.fasta", "mask-pairs.vcf",
    "regions.main", "regions.reuse", "train.mlm", "train.gated", "train.kl", "train.bistrand",
    "train.expr", "train.tab", "train.tabcv", "train.dual", "predict.cls", "predict.var",
    "predict.expr", "predict.tab", "predict.dual", "predict.varbw", "importance.gates", "importance.ig",
    "importance.expr", "importance.tab",
}


def output_cases(tp: Template, common: dict, base: Path) -> list[dict]:
    """Outputs that name an input, each other, a missing folder, a folder, or a link to an input."""
    out = []
    argv = tp.argv
    ins = [n for n in tp.inputs(base)]
    outs = [i for i, a in enumerate(argv) if PH.fullmatch(a) and a.startswith("{out:")]
    first_in = next(PH.fullmatch(a).group(2) for a in argv if PH.fullmatch(a) and a.startswith("{in:"))
    oflag = argv[outs[0] - 1] if outs else None

    def case(suffix, new_argv, outputs, notes, setup=None, culprit=None, expect="refuse"):
        out.append({**common, "id": f"{tp.id}.out.{suffix}", "format": "cli", "argv": new_argv,
                    "outputs": outputs, "mutated": {}, "culprit": culprit or oflag, "flag": oflag,
                    "expect": expect, "notes": notes, "setup": setup or {}})

    if not outs:
        return out
    i0 = outs[0]
    is_dir_out = tp.tool == "luminome-train"
    # -o is the first input
    a = list(argv)
    a[i0] = "{in:%s}" % first_in
    case("equals_input", a, [], f"{oflag} names the input {first_in}", culprit=first_in)
    # the index/sidecar of the output would land on an input: output named after an input dataset
    sc = [n for n in ins if n.endswith(".index.tsv") or n.endswith(".samples.tsv") or n.endswith(".regions.tsv")]
    if sc and not is_dir_out:
        stem = sc[0].rsplit(".", 2)[0]
        a = list(argv)
        a[i0] = "{in:%s.safetensors}" % stem
        case("sidecar_equals_input", a, [], f"{oflag} {stem}.safetensors beside the input {sc[0]} "
             "(the output or its sidecar would replace an input)", culprit=sc[0])
    if len(outs) >= 2:
        a = list(argv)
        a[outs[1]] = argv[outs[0]]
        case("two_equal", a, [], f"{argv[outs[1] - 1]} and {oflag} name the same file")
        a = list(argv)
        a[outs[1]] = "{in:%s}" % ins[-1]
        case("second_equals_input", a, [], f"{argv[outs[1] - 1]} names the input {ins[-1]}", culprit=ins[-1])
    # a folder that does not exist
    a = list(argv)
    a[i0] = "{out:missing_dir/x.safetensors}" if not is_dir_out else "{out:missing_dir/trainrun}"
    case("missing_dir", a, ["out/missing_dir"], f"{oflag} in a folder that does not exist",
         culprit="missing_dir")
    # an existing folder (or, for train, an existing file) where the output should go
    a = list(argv)
    if is_dir_out:
        a[i0] = "{out:afile}"
        case("is_file", a, [], f"{oflag} is an existing file (train writes a folder)",
             setup={"files": {"out/afile": "not a folder\n"}}, culprit="afile")
    else:
        a[i0] = "{out:adir}"
        case("is_dir", a, [], f"{oflag} is an existing folder", setup={"mkdirs": ["out/adir"]},
             culprit="adir")
        # a hard link to an input, and a symlink to an input
        a = list(argv)
        nm = PH.fullmatch(argv[i0]).group(2)
        a[i0] = "{out:%s}" % nm
        case("hardlink_to_input", a, [], f"{oflag} is a hard link to the input {first_in}",
             setup={"hardlinks": {"out/" + nm: "in/" + first_in}}, culprit=first_in)
        case("symlink_to_input", a, [], f"{oflag} is a symlink to the input {first_in}",
             setup={"symlinks": {"out/" + nm: "../in/" + first_in}}, culprit=first_in)
    if is_dir_out:
        # the run folder is the folder an input lives in (its best.safetensors would be replaced)
        ck = [n for n in ins if n.endswith(".safetensors") and "train" not in n and "dev" not in n]
        if ck:
            a = [x.replace("{in:%s}" % ck[0], "{in:prev/best.safetensors}") for x in argv]
            a[i0] = "{in:prev}"
            case("run_dir_holds_input", a, [], f"-o is the folder holding the input {ck[0]} "
                 "(as prev/best.safetensors)", setup={"moves": {"in/" + ck[0]: "in/prev/best.safetensors"}},
                 culprit="best.safetensors")
    return out


def select(cases: list[dict], limit: int, seed: int, include: list[str] = ()) -> list[dict]:
    """A stratified sample: round-robin over tools, then templates, then formats; cases whose id
    matches a glob in `include` are kept on top of the sample (the regression list)."""
    import fnmatch
    kept = [c for c in cases if any(fnmatch.fnmatch(c["id"], g) for g in include)]
    kept_ids = {c["id"] for c in kept}
    cases = [c for c in cases if c["id"] not in kept_ids]
    rng = random.Random(f"{seed}:limit")
    by_tool: dict[str, dict[str, list]] = {}
    for c in cases:
        by_tool.setdefault(c["tool"], {}).setdefault(c["template"], []).append(c)
    for tdict in by_tool.values():
        for lst in tdict.values():
            rng.shuffle(lst)
    picked = []
    tools = sorted(by_tool)
    while len(picked) < limit and any(any(v for v in by_tool[t].values()) for t in tools):
        for t in tools:
            tmpls = [k for k in sorted(by_tool[t]) if by_tool[t][k]]
            if not tmpls:
                continue
            # one case from the template with the most left (keeps templates balanced)
            k = max(tmpls, key=lambda k: (len(by_tool[t][k]), k))
            picked.append(by_tool[t][k].pop())
            if len(picked) >= limit:
                break
    return sorted(picked + kept, key=lambda c: c["id"])


def resolve(argv: list[str]) -> list[str]:
    return [PH.sub(lambda m: f"{m.group(1)}/{m.group(2)}", a) for a in argv]


def command_line(c: dict) -> str:
    """The case as a shell command, run from a copy of the case folder (see README)."""
    import shlex
    steps = ["mkdir -p out"]
    st = c.get("setup") or {}
    for dname in st.get("mkdirs", []):
        steps.append(f"mkdir -p {shlex.quote(dname)}")
    for fname, text in st.get("files", {}).items():
        steps.append(f"printf %s {shlex.quote(text)} > {shlex.quote(fname)}")
    for src, dst in st.get("moves", {}).items():
        steps.append(f"mkdir -p {shlex.quote(str(Path(dst).parent))} && mv {shlex.quote(src)} {shlex.quote(dst)}")
    for link, target in st.get("hardlinks", {}).items():
        steps.append(f"ln {shlex.quote(target)} {shlex.quote(link)}")
    for link, target in st.get("symlinks", {}).items():
        steps.append(f"ln -s {shlex.quote(target)} {shlex.quote(link)}")
    steps.append(" ".join(shlex.quote(a) for a in resolve(c["argv"])))
    return " && ".join(steps)


def check_templates(out: Path, bins: dict[str, str], log):
    """Every template must succeed on the unmodified inputs, or its cases mean nothing."""
    bad = []
    for tp in templates():
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            tmp = Path(tmp)
            (tmp / "in").mkdir()
            (tmp / "out").mkdir()
            for n in tp.inputs(out / "_base"):
                (tmp / "in" / n).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(out / "_base" / n, tmp / "in" / n)
            argv = resolve(tp.argv)
            r = subprocess.run(argv, executable=bins[tp.tool], cwd=tmp, capture_output=True, text=True,
                               env={**os.environ, "RUST_BACKTRACE": "0"}, timeout=300)
            if r.returncode != 0:
                bad.append(f"{tp.id}: exit {r.returncode}: {' '.join(argv)}\n{r.stderr[-1500:]}")
    if bad:
        raise SystemExit("fuzz: templates that fail on valid input:\n" + "\n".join(bad))
    log(f"fuzz: all {len(templates())} templates succeed on the valid inputs")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True, help="corpus folder (created; must be empty or a previous corpus)")
    ap.add_argument("--limit", type=int, help="keep a stratified sample of this many cases")
    ap.add_argument("--include", help="file of case-id globs kept on top of the --limit sample "
                    "(one per line, # comments), e.g. scripts/fuzz/regressions.txt")
    ap.add_argument("--budget", type=int, default=5,
                    help="generic mutations per input slot (format-specific ones come on top) [5]")
    ap.add_argument("--bin", help="folder with the luminome-* binaries [target/debug, else PATH]")
    ap.add_argument("--no-check", action="store_true", help="do not run the templates on valid input")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    log = (lambda *x: None) if a.quiet else (lambda *x: print(*x, file=sys.stderr))
    out = Path(a.out)
    if out.exists():
        if not (out / MARKER).exists() and any(out.iterdir()):
            raise SystemExit(f"fuzz: {out} exists and is not a fuzz corpus; give an empty or new folder")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("made by scripts/fuzz/make_cases.py\n")
    bins = find_bins(a.bin)
    build_base(out / "_base", bins, log)
    if not a.no_check:
        check_templates(out, bins, log)
    cases = make_all(out / "_base", a.seed, a.budget)
    total = len(cases)
    if a.limit is not None and a.limit < len(cases):
        include = []
        if a.include:
            include = [ln.split("#")[0].strip() for ln in Path(a.include).read_text().splitlines()]
            include = [g for g in include if g]
        cases = select(cases, a.limit, a.seed, include)
    for c in cases:
        d = out / c["id"]
        (d / "in").mkdir(parents=True)
        mutated = c.pop("mutated")
        for name in c["inputs"]:
            (d / "in" / name).parent.mkdir(parents=True, exist_ok=True)
            if name not in mutated:
                shutil.copy(out / "_base" / name, d / "in" / name)
        for name, data in mutated.items():
            (d / "in" / name).write_bytes(data)
        c["mutated"] = sorted(mutated)
        c.setdefault("setup", {})
        c.setdefault("flag", None)
        c["seed"] = a.seed
        c["sha256"] = {n: hashlib.sha256(b).hexdigest() for n, b in mutated.items()}
        c["command"] = command_line(c)
        (d / "case.json").write_text(json.dumps(c, indent=1, sort_keys=True) + "\n")
    counts = {}
    for c in cases:
        counts[c["tool"]] = counts.get(c["tool"], 0) + 1
    log(f"fuzz: {len(cases)} cases (of {total} generated) in {out}: " +
        ", ".join(f"{k.replace('luminome-', '')} {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
