#!/usr/bin/env python3
"""Isolated-staging check of the Nextflow modules: runs each module's own script, tool by tool,
in a work folder that holds only the files the process declares as `path` inputs.

    python3 workflows/nextflow/check_staging.py [--keep DIR]

Nextflow cannot be installed on the CI machine, so this does by hand what Nextflow does for a
task: for every case below it

1. parses the module's `input:` block (modules/local/luminome/<tool>/main.nf) and puts each
   `path(...)` input into a fresh folder under its file name (or its `stageAs:` pattern),
   and nothing else;
2. renders the module's `script:` block (the triple-quoted command) with those staged names,
   task.ext.args, task.ext.prefix and task.cpus; the script's `def NAME = COND ? "..." : ''`
   lines are evaluated, other `def`s take the values given in the case (and the run fails if a
   placeholder has no value);
3. runs the command with bash and checks that every declared (non-optional) output exists and
   that the versions `eval` command prints the workspace version.

A tool that opens a file the module did not declare (a dataset's `.index.tsv`, a region
dataset's tables, a checkpoint's sidecar) fails here as it would in a Nextflow work folder.
Inputs are copied, not symlinked (Nextflow's `stageInMode 'copy'`): a tool that resolved a
symlink would otherwise find an undeclared sidecar beside the original and pass. Outputs of
one case are inputs of the next (tokenize -> train -> predict/importance, and so on), in the
order of CASES. Finally a negative control re-runs luminome-predict without the dataset's
index and expects it to fail, so that the check is known to catch a missing sidecar.

The luminome-* binaries must be on PATH; models are tiny (seconds each).
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

PIPELINE = Path(__file__).resolve().parent
REPO = PIPELINE.parent.parent
TEST_DATA = REPO / "test-data"
MODULES = PIPELINE / "modules" / "local" / "luminome"


@dataclass
class Out:
    """An output (emit name) of an earlier case."""

    case: str
    emit: str


@dataclass
class Case:
    id: str  # names the case (and its work folder); unique
    module: str
    # One entry per input channel of the module: a list with one value per tuple element
    # (val elements: any Python value; path elements: a Path, an Out, a list of them, or []).
    inputs: list
    args: str = ""
    # Values of the script's `def`s that are not simple `cond ? "..." : ''` lines.
    values: dict = field(default_factory=dict)
    expect_failure: str = ""  # the negative control: a message the failed run must print
    prefix: str = ""  # task.ext.prefix; the id when empty


def td(relative: str) -> Path:
    return TEST_DATA / relative


NONE_REF = [[], [], []]  # no reference tuple
NO_INIT = [[], []]  # no checkpoint tuple
TINY_MLM = "--d-model 32 --layers 1 --heads 2 --ffn 64 --batch-size 16 --warmup 3 --steps 6 --eval-every 3 --eval-records 64 --seed 1"

# ~3,100 windows: four blocks of units, dealt over three parts.
ECOLI_WINDOWS = "--scheme kmer -k 3 --window 32 --stride 16 --overflow window --soft-mask --rc both"

# The regions run on the chr22 slice (assets/regions_test.csv; chunks of 3 kbp so that three
# parts each scan a share).
CHR22_SLICE = [{"id": "chr22_slice", "accessibility": ["K562", "GM12878"], "expression": ["K562", "GM12878"]},
               td("chr22_slice/genes_tss.bed"), [td("chr22_slice/peaks.narrowPeak")],
               [td("chr22_slice/acc.K562.bedgraph"), td("chr22_slice/acc.GM12878.bedgraph")],
               [td("expression/k562_tpm_slice.tsv"), td("expression/gm12878_rampage_slice.tsv")],
               td("motifs/vierstra_small.meme"), td("motifs/vierstra_small_clusters.csv")]
CHR22_REFERENCE = [{"id": "chr22_slice"}, td("chr22_slice/chr22_slice.fa"), td("chr22_slice/chr22_slice.fa.fai")]
CHR22_ARGS = "--bed-tss center --window 200000 --n-regions 50 --scan-chunk-bp 3000"
CHR22_OPTIONS = {
    "peak_options": "--peaks peaks.narrowPeak",
    "acc_options": "--accessibility K562=acc/1/acc.K562.bedgraph --accessibility GM12878=acc/2/acc.GM12878.bedgraph",
    "expr_options": "--expression K562=expr/1/k562_tpm_slice.tsv --expression GM12878=expr/2/gm12878_rampage_slice.tsv",
}

CASES = [
    # Token datasets (the last one from BED intervals on a reference with its .fai).
    *[Case(f"prom_{split}", "tokenize", [[{"id": f"prom_{split}"}, td(f"gue_prom_core_all/{split}.csv")], NONE_REF],
           args="--max-length 72") for split in ("train", "dev", "test")],
    Case("tss", "tokenize",
         [[{"id": "tss"}, td("chr22_slice/intervals.bed")],
          [{"id": "chr22_slice"}, td("chr22_slice/chr22_slice.fa"), td("chr22_slice/chr22_slice.fa.fai")]],
         args="--width 200 --rc both"),
    # Genome windows as one task, and as three parts gathered (--tokenize_shards 3).
    Case("ecoli_windows", "tokenize", [[{"id": "ecoli_windows"}, td("ecoli/ecoli_50kb.fa.gz")], NONE_REF],
         args=ECOLI_WINDOWS),
    *[Case(f"ecoli_windows_part{i}", "tokenizeshard",
           [[{"id": "ecoli_windows", "shard": i, "shards": 3}, td("ecoli/ecoli_50kb.fa.gz")], NONE_REF],
           args=ECOLI_WINDOWS, values={"shard": f"{i}/3"}, prefix=f"ecoli_windows.{i}-of-3")
      for i in (1, 2, 3)],
    Case("ecoli_windows_gathered", "tokenizegather",
         [[{"id": "ecoli_windows"}, td("ecoli/ecoli_50kb.fa.gz")], NONE_REF,
          [Out(f"ecoli_windows_part{i}", "part") for i in (3, 1, 2)]],
         args=ECOLI_WINDOWS, prefix="ecoli_windows"),
    # The pipeline's default (--mlm false, empty --classify_args): classify's CNN recipe, no init.
    Case("prom_default", "train",
         [[{"id": "prom_default"}, Out("prom_train", "tokens"), Out("prom_train", "index"),
           Out("prom_dev", "tokens"), Out("prom_dev", "index")], NO_INIT, "classify"],
         args="--cnn-channels 16 --cnn-layers 2 --batch-size 16 --warmup 3 --steps 6 --eval-every 3 --seed 1"),
    # MLM -> classifier -> predict and importance, every dataset with its index.
    Case("prom_mlm", "train",
         [[{"id": "prom_mlm"}, Out("prom_train", "tokens"), Out("prom_train", "index"),
           Out("prom_dev", "tokens"), Out("prom_dev", "index")], NO_INIT, "mlm"],
         args=TINY_MLM),
    Case("prom_classify", "train",
         [[{"id": "prom_classify"}, Out("prom_train", "tokens"), Out("prom_train", "index"),
           Out("prom_dev", "tokens"), Out("prom_dev", "index")],
          [{"id": "prom_mlm"}, Out("prom_mlm", "best")], "classify"],
         args="--adapter gated --batch-size 16 --warmup 3 --steps 6 --eval-every 3 --seed 1"),
    Case("prom_test_predict", "predict",
         [[{"id": "prom_test"}, Out("prom_test", "tokens"), Out("prom_test", "index")],
          [{"id": "prom_classify"}, Out("prom_classify", "best")]],
         values={"metrics": "--metrics prom_test.metrics.tsv", "device": ""}, prefix="prom_test"),
    # The same predictions as three parts gathered (-profile test's --predict_shards 3).
    *[Case(f"prom_test_part{i}", "predictshard",
           [[{"id": "prom_test", "shard": i, "shards": 3}, Out("prom_test", "tokens"),
             Out("prom_test", "index")],
            [{"id": "prom_classify"}, Out("prom_classify", "best")]],
           values={"shard": f"{i}/3"}, prefix=f"prom_test.{i}-of-3") for i in (1, 2, 3)],
    Case("prom_test_gathered", "predictgather",
         [[{"id": "prom_test"}, Out("prom_test", "tokens"), Out("prom_test", "index"), []],
          [{"id": "prom_classify"}, Out("prom_classify", "best")],
          [Out(f"prom_test_part{i}", "part") for i in (2, 3, 1)]],
         values={"metrics": "--metrics prom_test.metrics.tsv", "output": "prom_test.predictions.tsv"},
         prefix="prom_test"),
    Case("prom_test.importance", "importance",
         [[{"id": "prom_test"}, Out("prom_test", "tokens"), Out("prom_test", "index")],
          [{"id": "prom_classify"}, Out("prom_classify", "best")]],
         args="--method ig --records 10 --ig-steps 4",
         values={"extra_output": "--npz prom_test.importance.npz"}),
    # The same importance as three parts gathered (-profile test's --importance_shards 3).
    *[Case(f"prom_test.importance_part{i}", "importanceshard",
           [[{"id": "prom_test", "shard": i, "shards": 3}, Out("prom_test", "tokens"),
             Out("prom_test", "index")],
            [{"id": "prom_classify"}, Out("prom_classify", "best")]],
           args="--method ig --records 10 --ig-steps 4 --batch-size 2",
           values={"shard": f"{i}/3", "device": "", "keeps": f"--npz prom_test.importance.{i}-of-3.npz"},
           prefix=f"prom_test.importance.{i}-of-3") for i in (1, 2, 3)],
    Case("prom_test.importance_gathered", "importancegather",
         [[{"id": "prom_test"}, Out("prom_test", "tokens"), Out("prom_test", "index")],
          [{"id": "prom_classify"}, Out("prom_classify", "best")],
          [Out(f"prom_test.importance_part{i}", "part") for i in (2, 3, 1)]],
         args="--method ig --records 10 --ig-steps 4 --batch-size 2",
         values={"extra_output": "--npz prom_test.importance.npz"}, prefix="prom_test.importance"),
    Case("prom_test.importance_one", "importance",
         [[{"id": "prom_test"}, Out("prom_test", "tokens"), Out("prom_test", "index")],
          [{"id": "prom_classify"}, Out("prom_classify", "best")]],
         args="--method ig --records 10 --ig-steps 4 --batch-size 2",
         values={"extra_output": "--npz prom_test.importance.npz"}, prefix="prom_test.importance"),
    # Bi-strand masked LM and variant scoring.
    Case("celegans_train", "maskpairs",
         [[{"id": "celegans_train", "type": "fasta"}, td("celegans/celegans_small.fa"), [], []], NONE_REF],
         args="--window 128 --seed 1", values={"inputs": "--fasta celegans_small.fa"}),
    Case("ecoli_dev", "maskpairs",
         [[{"id": "ecoli_dev", "type": "fasta"}, td("ecoli/ecoli_50kb.fa"), [], []], NONE_REF],
         args="--window 128 --stride 256 --seed 2", values={"inputs": "--fasta ecoli_50kb.fa"}),
    Case("celegans_snvs", "maskpairs",
         [[{"id": "celegans_snvs", "type": "variants"}, [], [], td("celegans/celegans_small.snv.vcf")],
          [{"id": "celegans"}, td("celegans/celegans_small.fa"), []]],
         args="--window 128",
         values={"inputs": "--reference celegans_small.fa --variants celegans_small.snv.vcf"}),
    Case("celegans_bistrand", "train",
         [[{"id": "celegans_bistrand"}, Out("celegans_train", "pairs"), Out("celegans_train", "index"),
           Out("ecoli_dev", "pairs"), Out("ecoli_dev", "index")], NO_INIT, "bistrand"],
         args="--d-model 16 --layers 1 --cross-heads 2 --batch-size 16 --warmup 3 --steps 4 --eval-every 2 --seed 1"),
    Case("celegans_snvs_scores", "predictvariants",
         [[{"id": "celegans_snvs"}, Out("celegans_snvs", "pairs"), Out("celegans_snvs", "index"),
           td("celegans/celegans_small.snv.vcf")],
          [{"id": "celegans_bistrand"}, Out("celegans_bistrand", "best")]],
         values={"device": ""}, prefix="celegans_snvs"),
    # The same scores as three parts gathered (-profile test's --variant_shards 3).
    *[Case(f"celegans_snvs_part{i}", "predictshard",
           [[{"id": "celegans_snvs", "shard": i, "shards": 3}, Out("celegans_snvs", "pairs"),
             Out("celegans_snvs", "index")],
            [{"id": "celegans_bistrand"}, Out("celegans_bistrand", "best")]],
           values={"shard": f"{i}/3"}, prefix=f"celegans_snvs.{i}-of-3") for i in (1, 2, 3)],
    Case("celegans_snvs_gathered", "predictgather",
         [[{"id": "celegans_snvs"}, Out("celegans_snvs", "pairs"), Out("celegans_snvs", "index"),
           td("celegans/celegans_small.snv.vcf")],
          [{"id": "celegans_bistrand"}, Out("celegans_bistrand", "best")],
          [Out(f"celegans_snvs_part{i}", "part") for i in (3, 1, 2)]],
         values={"metrics": "", "output": "celegans_snvs.scores.tsv"}, prefix="celegans_snvs"),
    # Regions -> expression model -> predict and importance (region dataset with its two tables).
    Case("chr22_slice", "regions", [CHR22_SLICE, CHR22_REFERENCE], args=CHR22_ARGS, values=CHR22_OPTIONS),
    # The same dataset as three parts gathered (-profile test's --regions_shards 3).
    *[Case(f"chr22_slice_part{i}", "regionsshard",
           [[{**CHR22_SLICE[0], "shard": i, "shards": 3}, *CHR22_SLICE[1:]], CHR22_REFERENCE],
           args=CHR22_ARGS, values={**CHR22_OPTIONS, "shard": f"{i}/3"}, prefix=f"chr22_slice.{i}-of-3")
      for i in (1, 2, 3)],
    Case("chr22_slice_gathered", "regionsgather",
         [CHR22_SLICE, CHR22_REFERENCE, [Out(f"chr22_slice_part{i}", "part") for i in (2, 1, 3)]],
         args=CHR22_ARGS, values=CHR22_OPTIONS, prefix="chr22_slice"),
    Case("chr22_expression", "train",
         [[{"id": "chr22_expression"}, Out("chr22_slice", "dataset"),
           [Out("chr22_slice", "samples"), Out("chr22_slice", "regions")], [], []], NO_INIT, "expression"],
         args="--holdout genes --blocks 3 --head attention-pool --batch-size 4 --warmup 3 --steps 4 --eval-every 2 --seed 1"),
    Case("chr22_expression_test", "predict",
         [[{"id": "chr22_expression"}, Out("chr22_slice", "dataset"),
           [Out("chr22_slice", "samples"), Out("chr22_slice", "regions")]],
          [{"id": "chr22_expression"}, Out("chr22_expression", "best")]],
         args="--subset test --batch-size 2", values={"metrics": "--metrics chr22_expression_test.metrics.tsv", "device": ""}),
    # The same predictions as three parts gathered (-profile test's --predict_shards 3).
    *[Case(f"chr22_expression_test_part{i}", "predictshard",
           [[{"id": "chr22_expression", "shard": i, "shards": 3}, Out("chr22_slice", "dataset"),
             [Out("chr22_slice", "samples"), Out("chr22_slice", "regions")]],
            [{"id": "chr22_expression"}, Out("chr22_expression", "best")]],
           args="--subset test --batch-size 2", values={"shard": f"{i}/3", "device": ""},
           prefix=f"chr22_expression.{i}-of-3") for i in (1, 2, 3)],
    Case("chr22_expression_test_gathered", "predictgather",
         [[{"id": "chr22_expression"}, Out("chr22_slice", "dataset"),
           [Out("chr22_slice", "samples"), Out("chr22_slice", "regions")], []],
          [{"id": "chr22_expression"}, Out("chr22_expression", "best")],
          [Out(f"chr22_expression_test_part{i}", "part") for i in (3, 1, 2)]],
         args="--subset test --batch-size 2",
         values={"metrics": "--metrics chr22_expression_test.metrics.tsv",
                 "output": "chr22_expression_test.predictions.tsv"},
         prefix="chr22_expression_test"),
    Case("chr22_expression.importance", "importance",
         [[{"id": "chr22_expression"}, Out("chr22_slice", "dataset"),
           [Out("chr22_slice", "samples"), Out("chr22_slice", "regions")]],
          [{"id": "chr22_expression"}, Out("chr22_expression", "best")]],
         args="--method saliency --subset test --top 5",
         values={"extra_output": "--npz chr22_expression.importance.npz"}),
    # Tabular classifier: a table has no sidecars.
    Case("bc_tabular", "train",
         [[{"id": "bc_tabular"}, td("tabular/breast_cancer.tsv"), [], [], []], NO_INIT, "tabular"],
         args="--label diagnosis --id sample --classes benign,malignant --d-model 16 --layers 1 --heads 2 --steps 4 --seed 1"),
    Case("bc", "predict",
         [[{"id": "bc"}, td("tabular/breast_cancer.tsv"), []], [{"id": "bc_tabular"}, Out("bc_tabular", "best")]],
         values={"metrics": "--metrics bc.metrics.tsv", "device": ""}),
    Case("bc.importance", "importance",
         [[{"id": "bc"}, td("tabular/breast_cancer.tsv"), []], [{"id": "bc_tabular"}, Out("bc_tabular", "best")]],
         args="--method attention --records 20 --top 5 --batch-size 4",
         values={"extra_output": "--ranking bc.importance.ranking.tsv"}),
    # The same importance as three parts gathered (-profile test's --importance_shards 3).
    *[Case(f"bc.importance_part{i}", "importanceshard",
           [[{"id": "bc", "shard": i, "shards": 3}, td("tabular/breast_cancer.tsv"), []],
            [{"id": "bc_tabular"}, Out("bc_tabular", "best")]],
           args="--method attention --records 20 --top 5 --batch-size 4",
           values={"shard": f"{i}/3", "device": "", "keeps": ""},
           prefix=f"bc.importance.{i}-of-3") for i in (1, 2, 3)],
    Case("bc.importance_gathered", "importancegather",
         [[{"id": "bc"}, td("tabular/breast_cancer.tsv"), []],
          [{"id": "bc_tabular"}, Out("bc_tabular", "best")],
          [Out(f"bc.importance_part{i}", "part") for i in (2, 3, 1)]],
         args="--method attention --records 20 --top 5 --batch-size 4",
         values={"extra_output": "--ranking bc.importance.ranking.tsv"}, prefix="bc.importance"),
    # Dual encoder and retrieval: pairs datasets and the corpus, each with its index.
    *[Case(f"dual_{split}", "tokenize", [[{"id": f"dual_{split}"}, td(f"retrieval/{split}.pairs.tsv")], NONE_REF],
           args="--format pairs --scheme kmer -k 3") for split in ("train", "test")],
    Case("dual_corpus", "tokenize", [[{"id": "dual_corpus"}, td("retrieval/test.corpus.fa")], NONE_REF],
         args="--scheme kmer -k 3"),
    Case("dual", "train",
         [[{"id": "dual"}, Out("dual_train", "tokens"), Out("dual_train", "index"), [], []], NO_INIT, "dual"],
         args="--shared-encoder --d-model 16 --layers 1 --heads 2 --ffn 32 --batch-size 16 --steps 4 --seed 1"),
    Case("dual_ranks", "retrieval",
         [[{"id": "dual_test"}, Out("dual_test", "tokens"), Out("dual_test", "index")],
          [{"id": "dual_corpus"}, Out("dual_corpus", "tokens"), Out("dual_corpus", "index")],
          [{"id": "dual"}, Out("dual", "best")]],
         args="--in-batch-size 8"),
    # Negative control: the same prediction without the dataset's index must fail.
    Case("prom_test_without_index", "predict",
         [[{"id": "prom_test"}, Out("prom_test", "tokens"), []],
          [{"id": "prom_classify"}, Out("prom_classify", "best")]],
         values={"metrics": "", "device": ""}, expect_failure="index.tsv"),
]


# --- parsing a module's main.nf --------------------------------------------------------------

@dataclass
class Element:
    kind: str  # 'val' or 'path'
    name: str
    stage_as: str = ""


@dataclass
class Module:
    name: str
    inputs: list  # list of channels, each a list of Element
    defs: list  # (name, expression) of the script section, in order
    template: str  # the script's command, Groovy GString text
    outputs: list  # (emit, path template, optional)
    version_command: str


ELEMENT = re.compile(r"\b(val|path)\((\w+)(?:\s*,\s*stageAs:\s*'([^']*)')?\)")


def section(text: str, name: str, following: str) -> str:
    match = re.search(rf"^\s*{name}:\s*$(.*?)^\s*{following}:\s*$", text, re.MULTILINE | re.DOTALL)
    if not match:
        raise SystemExit(f"no {name}: ... {following}: section")
    return match.group(1)


def parse_module(tool: str) -> Module:
    text = (MODULES / tool / "main.nf").read_text()
    inputs = []
    for line in section(text, "input", "output").splitlines():
        line = line.strip()
        if not line or line.startswith("//"):
            continue
        code = line.split("//")[0]
        if code.startswith(("tuple", "path(", "val(")):
            inputs.append([Element(k, n, s or "") for k, n, s in ELEMENT.findall(code)])
        elif code.startswith(("val ", "path ")):
            kind, name = code.split()[:2]
            inputs.append([Element(kind, name)])
        else:
            raise SystemExit(f"{tool}: cannot read input line {line!r}")
    outputs, version_command = [], ""
    for line in section(text, "output", "when").splitlines():
        version = re.search(r'eval\("(.*)"\)', line)
        if version:
            version_command = version.group(1)
            continue
        match = re.search(r'path\("([^"]+)"\)\s*,\s*emit:\s*(\w+)(.*)', line)
        if match:
            outputs.append((match.group(2), match.group(1), "optional: true" in match.group(3)))
    script = section(text, "script", "stub")
    head, template = script.split('"""', 1)
    template = template.rsplit('"""', 1)[0]
    defs = []
    for line in head.splitlines():
        line = line.strip()
        if not line or line.startswith("//"):
            continue
        match = re.match(r"(?:def\s+)?(\w+)\s*=\s*(.+)$", line)
        if match:
            defs.append((match.group(1), match.group(2)))
    return Module(tool, inputs, defs, template, outputs, version_command)


# --- staging and rendering --------------------------------------------------------------------

def flatten(value):
    if isinstance(value, list):
        return [item for entry in value for item in flatten(entry)]
    return [value]


def stage(element: Element, value, folder: Path, produced: dict) -> str:
    """Copies the files of one path input into the work folder; returns the names the script sees."""
    names = []
    for index, item in enumerate(flatten(value), start=1):
        source = produced[(item.case, item.emit)] if isinstance(item, Out) else item
        if not source.is_file():
            raise SystemExit(f"staging {element.name}: {source} does not exist")
        if element.stage_as:
            # 'dir/*/*' -> dir/<n>/<name>; 'dir/*' -> dir/<name> (Nextflow's stageAs patterns)
            pattern = element.stage_as.replace("*/*", f"{index}/*", 1) if "*/*" in element.stage_as else element.stage_as
            relative = pattern.replace("*", source.name)
        else:
            relative = source.name
        target = folder / relative
        if target.exists():
            raise SystemExit(f"staging {element.name}: two inputs named {relative}")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        names.append(relative)
    return " ".join(names)


PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")


def render(text: str, values: dict, where: str) -> str:
    def value_of(match):
        key = match.group(1).strip()
        if key not in values:
            raise SystemExit(f"{where}: no value for ${{{key}}}")
        return str(values[key])

    text = PLACEHOLDER.sub(value_of, text)
    return text.replace("\\\\", "\\").replace("\\$", "$")


def evaluate_defs(module: Module, case: Case, values: dict):
    """The script's defs: task.ext.args/prefix, `cond ? "..." : ''`, or the case's values."""
    for name, expression in module.defs:
        if name in case.values:
            values[name] = case.values[name]
        elif expression == "task.ext.args ?: ''":
            values[name] = case.args
        elif expression.startswith("task.ext.prefix ?:"):
            values[name] = case.prefix or case.id
        else:
            conditional = re.fullmatch(r"([\w.]+)\s*\?\s*(\"[^\"]*\"|'[^']*')\s*:\s*''", expression)
            if not conditional and f"${{{name}}}" not in module.template:
                continue  # a helper of other defs (their values are given in the case)
            if not conditional:
                raise SystemExit(f"{case.id}: give a value for `{name} = {expression}` in the case")
            condition, text = conditional.groups()
            # task.accelerator is unset: this check runs on the CPU.
            truthy = bool(values.get(condition)) if condition != "task.accelerator" else False
            values[name] = render(text[1:-1], values, f"{case.id}: def {name}") if truthy else ""
    unused = set(case.values) - {name for name, _ in module.defs}
    if unused:
        raise SystemExit(f"{case.id}: values for names the script does not define: {sorted(unused)}")


def run_case(case: Case, module: Module, root: Path, produced: dict, version: str) -> None:
    folder = root / case.id
    folder.mkdir()
    if len(case.inputs) != len(module.inputs):
        raise SystemExit(f"{case.id}: {module.name} has {len(module.inputs)} input channels, the case gives {len(case.inputs)}")
    values = {"task.cpus": 2, "task.process": f"LUMINOME_{module.name.upper()}"}
    for channel, given in zip(module.inputs, case.inputs):
        given = given if isinstance(given, list) and len(channel) > 1 else [given]
        if len(given) != len(channel):
            raise SystemExit(f"{case.id}: input {[e.name for e in channel]} given {len(given)} values")
        for element, value in zip(channel, given):
            values[element.name] = value if element.kind == "val" else stage(element, value, folder, produced)
    staged = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    evaluate_defs(module, case, values)
    command = render(module.template, values, case.id)
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=folder,
                            capture_output=True, text=True)
    log = result.stdout + result.stderr
    if case.expect_failure:
        if result.returncode == 0 or case.expect_failure not in log:
            raise SystemExit(f"{case.id}: expected a failure mentioning {case.expect_failure!r}; "
                             f"exit {result.returncode}\n{log}")
        print(f"ok   {case.id:28} fails as it must without the sidecar: {log.strip().splitlines()[-1]}")
        return
    if result.returncode != 0:
        raise SystemExit(f"FAIL {case.id} ({module.name}) in {folder}, staged only {staged}:\n"
                         f"$ {' '.join(command.split())}\n{log}")
    for emit, template, optional in module.outputs:
        path = folder / render(template, values, f"{case.id} output {emit}")
        if path.is_file():
            produced[(case.id, emit)] = path
        elif not optional:
            raise SystemExit(f"{case.id}: declared output {emit} ({path.name}) was not written")
    printed = subprocess.run(["bash", "-c", module.version_command], cwd=folder,
                             capture_output=True, text=True).stdout.strip()
    if printed != version:
        raise SystemExit(f"{case.id}: `{module.version_command}` printed {printed!r}, not {version}")
    print(f"ok   {case.id:28} {module.name:16} staged {', '.join(staged)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="run in this (new) folder and keep it")
    args = parser.parse_args()
    version = tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    modules = {tool.name: parse_module(tool.name) for tool in sorted(MODULES.iterdir())}
    untested = set(modules) - {case.module for case in CASES}
    if untested:
        raise SystemExit(f"modules without a staging case: {sorted(untested)}")
    if args.keep:
        args.keep.mkdir(parents=True)
        root = args.keep
    else:
        root = Path(tempfile.mkdtemp(prefix="luminome-staging-"))
    ids = [case.id for case in CASES]
    if len(set(ids)) != len(ids):
        raise SystemExit(f"case ids must be unique: {ids}")
    produced: dict = {}
    try:
        for case in CASES:
            run_case(case, modules[case.module], root, produced, version)
        # Scatter-gather: three parts gathered are one task's outputs, byte for byte (the VCF's
        # recorded command included: the gather records it without --gather).
        for emit in ("scores", "vcf", "tbi", "bedgraph"):
            one, gathered = (produced[(case, emit)].read_bytes()
                             for case in ("celegans_snvs_scores", "celegans_snvs_gathered"))
            if one != gathered:
                raise SystemExit(f"predictvariants {emit}: three parts gathered differ from one task")
        print("ok   celegans_snvs_gathered       the same bytes as celegans_snvs_scores (tsv, vcf, tbi, bedGraph)")
        for emit in ("predictions", "metrics"):
            one, gathered = (produced[(case, emit)].read_bytes()
                             for case in ("prom_test_predict", "prom_test_gathered"))
            if one != gathered:
                raise SystemExit(f"predict {emit}: three parts gathered differ from one task")
        print("ok   prom_test_gathered           the same bytes as prom_test_predict (predictions, metrics)")
        for emit in ("tokens", "index"):
            one, gathered = (produced[(case, emit)].read_bytes()
                             for case in ("ecoli_windows", "ecoli_windows_gathered"))
            if one != gathered:
                raise SystemExit(f"tokenize {emit}: three parts gathered differ from one task")
        print("ok   ecoli_windows_gathered       the same bytes as ecoli_windows (dataset, index)")
        for emit in ("scores", "npz"):
            one, gathered = (produced[(case, emit)].read_bytes()
                             for case in ("prom_test.importance_one", "prom_test.importance_gathered"))
            if one != gathered:
                raise SystemExit(f"importance {emit}: three parts gathered differ from one task")
        print("ok   prom_test.importance_gathered the same bytes as one task (tsv, npz)")
        for emit in ("dataset", "samples", "regions"):
            one, gathered = (produced[(case, emit)].read_bytes()
                             for case in ("chr22_slice", "chr22_slice_gathered"))
            if one != gathered:
                raise SystemExit(f"regions {emit}: three parts gathered differ from one task")
        print("ok   chr22_slice_gathered         the same bytes as chr22_slice (dataset, samples, regions)")
        for emit in ("predictions", "metrics"):
            one, gathered = (produced[(case, emit)].read_bytes()
                             for case in ("chr22_expression_test", "chr22_expression_test_gathered"))
            if one != gathered:
                raise SystemExit(f"expression predict {emit}: three parts gathered differ from one task")
        print("ok   chr22_expression_test_gathered the same bytes as chr22_expression_test (predictions, metrics)")
        for emit in ("scores", "ranking"):
            one, gathered = (produced[(case, emit)].read_bytes()
                             for case in ("bc.importance", "bc.importance_gathered"))
            if one != gathered:
                raise SystemExit(f"tabular importance {emit}: three parts gathered differ from one task")
        print("ok   bc.importance_gathered       the same bytes as bc.importance (tsv, ranking)")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{len(CASES)} isolated runs over {len(modules)} modules: every file a tool read was staged")


if __name__ == "__main__":
    sys.exit(main())
