# Shared by all rule files (config validation, output root) and the helpers their rules call.


import os
import re

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

validate(config, schema="../schemas/config.schema.yaml")

OUTDIR = config["outdir"]
LOGDIR = f"{OUTDIR}/logs"


# --- luminome-tokenize (rules/tokenize.smk) ---

TOKENIZE = config["tokenize"]


def tokenize_targets():
    datasets = TOKENIZE["datasets"]
    if not datasets:
        return []
    return expand(
        f"{OUTDIR}/tokenize/{{id}}.{{ext}}",
        id=datasets,
        ext=["safetensors", "index.tsv"],
    ) + [f"{OUTDIR}/versions/luminome-tokenize.txt"]


def tokenize_inputs(wildcards):
    dataset = TOKENIZE["datasets"][wildcards.id]
    inputs = {"sequences": dataset["input"]}
    if "reference" in dataset:
        inputs["reference"] = dataset["reference"]
    return inputs


def tokenize_options(wildcards, input):
    dataset = TOKENIZE["datasets"][wildcards.id]
    options = [TOKENIZE["extra"], dataset.get("args", "")]
    if "reference" in dataset:
        options.append(f"--reference {input.reference}")
    return " ".join(option for option in options if option)


# --- luminome-mask-pairs (rules/mask_pairs.smk) ---

MASK_PAIRS = config["mask_pairs"]
# Config key -> command-line option, in the order they are written.
MASK_PAIRS_INPUTS = {
    "fasta": "--fasta",
    "fasta_a": "--fasta-a",
    "fasta_b": "--fasta-b",
    "paired": "--paired",
    "reference": "--reference",
    "variants": "--variants",
}


def mask_pairs_targets():
    datasets = MASK_PAIRS["datasets"]
    if not datasets:
        return []
    return expand(
        f"{OUTDIR}/mask_pairs/{{id}}.{{ext}}",
        id=datasets,
        ext=["safetensors", "index.tsv"],
    ) + [f"{OUTDIR}/versions/luminome-mask-pairs.txt"]


def mask_pairs_inputs(wildcards):
    dataset = MASK_PAIRS["datasets"][wildcards.id]
    return {key: dataset[key] for key in MASK_PAIRS_INPUTS if key in dataset}


def mask_pairs_options(wildcards, input):
    dataset = MASK_PAIRS["datasets"][wildcards.id]
    options = [
        f"{option} {input[key]}"
        for key, option in MASK_PAIRS_INPUTS.items()
        if key in dataset
    ]
    options += [MASK_PAIRS["extra"], dataset.get("args", "")]
    return " ".join(option for option in options if option)


def paired(dataset_id):
    """Paired dataset written by the mask_pairs rule for a config["mask_pairs"]["datasets"] id."""
    return f"{OUTDIR}/mask_pairs/{dataset_id}.safetensors"


# --- shared by the model tools (train, predict, importance) ---


def tokenized(dataset_id):
    """Token dataset written by the tokenize rule for a config["tokenize"]["datasets"] id."""
    return f"{OUTDIR}/tokenize/{dataset_id}.safetensors"


def tokenized_index(dataset_id):
    """The record index written beside a tokenize dataset."""
    return f"{OUTDIR}/tokenize/{dataset_id}.index.tsv"


def sidecars(dataset_file):
    """The files the tools read from beside a dataset (declared as inputs so that a rule also
    works where only its declared inputs are present, e.g. with remote storage): a token or
    pair dataset's .index.tsv, a region dataset's .samples.tsv and .regions.tsv."""
    stem = dataset_file.removesuffix(".safetensors")
    if dataset_file.startswith(f"{OUTDIR}/regions/"):
        return [f"{stem}.samples.tsv", f"{stem}.regions.tsv"]
    return [f"{stem}.index.tsv"]


def ids_pattern(ids):
    """Wildcard constraint matching exactly these ids (nothing when there are none)."""
    return "|".join(re.escape(i) for i in ids) or "(?!)"


def gpu_count(section):
    """GPUs a job asks the scheduler for: one when the section's device is not the CPU."""
    return 0 if section["device"] == "cpu" else 1


# --- luminome-train (rules/train.smk) ---

TRAIN = config["train"]
MLM_RUNS = TRAIN["mlm"]
CLASSIFY_RUNS = TRAIN["classify"]
BISTRAND_RUNS = TRAIN["bistrand"]
PRETRAIN_RUNS = TRAIN["region_pretrain"]
EXPRESSION_RUNS = TRAIN["expression"]
TABULAR_RUNS = TRAIN["tabular"]
DUAL_RUNS = TRAIN["dual"]
# Tabular runs with `folds` write cross-validation tables; the others one model.
TABULAR_CV = [i for i, run in TABULAR_RUNS.items() if "folds" in run]
TABULAR_SPLIT = [i for i, run in TABULAR_RUNS.items() if "folds" not in run]
# Subcommand -> its runs (the output folder is <outdir>/train/<subcommand with _>/<id>/).
TRAIN_COMMANDS = {
    "mlm": MLM_RUNS,
    "classify": CLASSIFY_RUNS,
    "bistrand": BISTRAND_RUNS,
    "region_pretrain": PRETRAIN_RUNS,
    "expression": EXPRESSION_RUNS,
    "dual": DUAL_RUNS,
}


def train_targets():
    if not (any(TRAIN_COMMANDS.values()) or TABULAR_RUNS):
        return []
    targets = []
    for command, runs in TRAIN_COMMANDS.items():
        targets += expand(f"{OUTDIR}/train/{command}/{{id}}/best.safetensors", id=runs)
    targets += expand(
        f"{OUTDIR}/train/tabular/{{id}}/best.safetensors", id=TABULAR_SPLIT
    )
    targets += expand(f"{OUTDIR}/train/tabular/{{id}}/cv_metrics.tsv", id=TABULAR_CV)
    return targets + [f"{OUTDIR}/versions/luminome-train.txt"]


def tabular_inputs(wildcards):
    """A tabular run's table (and test table)."""
    run = TABULAR_RUNS[wildcards.id]
    files = {"table": run["table"]}
    if "test" in run:
        files["test"] = run["test"]
    return files


def tabular_options(wildcards, input):
    run = TABULAR_RUNS[wildcards.id]
    parts = [TRAIN["extra"], f"--label {run['label']}", run.get("args", "")]
    parts.append(f"--device {TRAIN['device']}")
    if "id" in run:
        parts.append(f"--id {run['id']}")
    if "folds" in run:
        parts.append(f"--folds {run['folds']}")
    if "test" in run:
        parts.append(f"--test {input.test}")
    return " ".join(part for part in parts if part)


def checkpoint_of(command, run_id):
    """The best checkpoint of a train run."""
    return f"{OUTDIR}/train/{command}/{run_id}/best.safetensors"


def train_inputs(runs, dataset=tokenized, init_command="mlm"):
    """Input files of a train run; `dataset` maps a dataset id to its file (tokenized, paired,
    region_dataset); `init` names a run of `init_command`."""

    def inputs(wildcards):
        run = runs[wildcards.id]
        files = {"train": dataset(run["train"])}
        files["train_sidecars"] = sidecars(files["train"])
        if "dev" in run:
            files["dev"] = dataset(run["dev"])
            files["dev_sidecars"] = sidecars(files["dev"])
        if "init" in run:
            files["init"] = checkpoint_of(init_command, run["init"])
        return files

    return inputs


def train_options(runs, command):
    def options(wildcards, input):
        run = runs[wildcards.id]
        parts = [TRAIN["extra"], run.get("args", ""), f"--device {TRAIN['device']}"]
        if "dev" in run:
            parts.append(f"--dev {input.dev}")
        if command == "classify" and "adapter" in run:
            parts.append(f"--adapter {run['adapter']}")
        if command == "expression":
            parts.append(f"--head {run['head']}")
        if "init" in run:
            parts.append(f"--init {input.init}")
        return " ".join(part for part in parts if part)

    return options


# --- luminome-predict (rules/predict.smk) ---

PREDICT = config["predict"]
PREDICT_RUNS = PREDICT["runs"]
PREDICT_WITH_METRICS = [
    i for i, run in PREDICT_RUNS.items() if run.get("metrics", True)
]
PREDICT_WITHOUT_METRICS = [
    i for i, run in PREDICT_RUNS.items() if not run.get("metrics", True)
]


VARIANT_RUNS = PREDICT["variants"]
EXPRESSION_PREDICT_RUNS = PREDICT["expression"]
TABULAR_PREDICT_RUNS = PREDICT["tabular"]
RETRIEVAL_RUNS = PREDICT["retrieval"]


def predict_targets():
    if not (
        PREDICT_RUNS
        or VARIANT_RUNS
        or EXPRESSION_PREDICT_RUNS
        or TABULAR_PREDICT_RUNS
        or RETRIEVAL_RUNS
    ):
        return []
    return (
        expand(f"{OUTDIR}/predict/{{id}}.predictions.tsv", id=PREDICT_RUNS)
        + expand(f"{OUTDIR}/predict/{{id}}.metrics.tsv", id=PREDICT_WITH_METRICS)
        + expand(
            f"{OUTDIR}/predict/variants/{{id}}.{{ext}}",
            id=VARIANT_RUNS,
            ext=["scores.tsv", "scores.vcf.gz", "llr.bedgraph"],
        )
        + expand(
            f"{OUTDIR}/predict/expression/{{id}}.{{ext}}",
            id=EXPRESSION_PREDICT_RUNS,
            ext=["predictions.tsv", "metrics.tsv"],
        )
        + expand(
            f"{OUTDIR}/predict/tabular/{{id}}.{{ext}}",
            id=TABULAR_PREDICT_RUNS,
            ext=["predictions.tsv", "metrics.tsv"],
        )
        + expand(
            f"{OUTDIR}/predict/retrieval/{{id}}.{{ext}}",
            id=RETRIEVAL_RUNS,
            ext=["ranks.tsv", "metrics.tsv", "embeddings.safetensors"],
        )
        + [f"{OUTDIR}/versions/luminome-predict.txt"]
    )


def expression_model_inputs(runs):
    """An expression run's best checkpoint and a regions run's dataset."""

    def inputs(wildcards):
        run = runs[wildcards.id]
        return {
            "checkpoint": checkpoint_of("expression", run["model"]),
            "dataset": region_dataset(run["dataset"]),
            "dataset_sidecars": sidecars(region_dataset(run["dataset"])),
        }

    return inputs


def expression_predict_options(wildcards, device=None):
    run = EXPRESSION_PREDICT_RUNS[wildcards.id]
    parts = [
        PREDICT["extra"],
        run.get("args", ""),
        f"--device {device or PREDICT['device']}",
    ]
    if "subset" in run:
        parts.append(f"--subset {run['subset']}")
    return " ".join(part for part in parts if part)


def tabular_model_inputs(runs):
    """A tabular run's best checkpoint (a run without folds) and a table."""

    def inputs(wildcards):
        run = runs[wildcards.id]
        return {
            "checkpoint": checkpoint_of("tabular", run["model"]),
            "table": run["table"],
        }

    return inputs


def tabular_predict_options(wildcards, device=None):
    parts = [PREDICT["extra"], TABULAR_PREDICT_RUNS[wildcards.id].get("args", "")]
    parts.append(f"--device {device or PREDICT['device']}")
    return " ".join(part for part in parts if part)


def retrieval_inputs(wildcards):
    """A dual run's best checkpoint, a pairs dataset and (optionally) a corpus dataset, all
    tokenize datasets with their indexes."""
    run = RETRIEVAL_RUNS[wildcards.id]
    files = {
        "checkpoint": checkpoint_of("dual", run["model"]),
        "dataset": tokenized(run["dataset"]),
        "dataset_index": tokenized_index(run["dataset"]),
    }
    if "corpus" in run:
        files["corpus"] = tokenized(run["corpus"])
        files["corpus_index"] = tokenized_index(run["corpus"])
    return files


def retrieval_options(wildcards, input):
    run = RETRIEVAL_RUNS[wildcards.id]
    parts = [PREDICT["extra"], run.get("args", ""), f"--device {PREDICT['device']}"]
    if "corpus" in run:
        parts.append(f"--corpus {input.corpus}")
    return " ".join(part for part in parts if part)


def variant_inputs(wildcards):
    """A variant run's bi-strand checkpoint, its mask_pairs dataset and that dataset's variants."""
    run = VARIANT_RUNS[wildcards.id]
    return {
        "checkpoint": f"{OUTDIR}/train/bistrand/{run['model']}/best.safetensors",
        "dataset": paired(run["dataset"]),
        "dataset_sidecars": sidecars(paired(run["dataset"])),
        "variants": MASK_PAIRS["datasets"][run["dataset"]]["variants"],
    }


# --- sharded predict runs (a run's `shards: N`) ---
# N jobs each score whole batches of the run's dataset (luminome-predict --shard I/N) into
# {folder}/{id}.parts/I-of-N.part.safetensors; the run's own rule joins them (--gather) into the
# outputs one job writes, byte for byte. The gather computes nothing: one CPU thread, no GPU.


def shard_count(runs, run_id):
    """How many jobs score a run (1: one job, no parts)."""
    return runs[run_id].get("shards", 1)


def shard_parts(runs, folder):
    """The part files a sharded run of `runs` gathers (none for one job)."""

    def parts(wildcards):
        count = shard_count(runs, wildcards.id)
        if count == 1:
            return []
        return [
            f"{folder}/{wildcards.id}.parts/{i}-of-{count}.part.safetensors"
            for i in range(1, count + 1)
        ]

    return parts


def gather_parts(wildcards, input):
    """--gather and the parts, for a sharded run."""
    return f"--gather {' '.join(input.parts)}" if input.parts else ""


def gathered_options(runs, options):
    """A run's options, with the device the section names for one job or the CPU for a gather."""

    def choose(wildcards):
        if shard_count(runs, wildcards.id) == 1:
            return options(wildcards)
        return options(wildcards, device="cpu")

    return choose


def gathered_threads(runs, section=PREDICT):
    """Threads of a run's job: the section's, or one to gather parts."""
    return lambda wildcards: (
        1 if shard_count(runs, wildcards.id) > 1 else section["threads"]
    )


def gathered_gpus(runs, section=PREDICT):
    """GPUs of a run's job: the section's, or none to gather parts."""
    return lambda wildcards: (
        0 if shard_count(runs, wildcards.id) > 1 else gpu_count(section)
    )


def variant_options(wildcards, device=None):
    parts = [PREDICT["extra"], VARIANT_RUNS[wildcards.id].get("args", "")]
    parts.append(f"--device {device or PREDICT['device']}")
    return " ".join(part for part in parts if part)


def classifier_checkpoint(model_id):
    return f"{OUTDIR}/train/classify/{model_id}/best.safetensors"


def model_inputs(runs):
    def inputs(wildcards):
        run = runs[wildcards.id]
        return {
            "checkpoint": classifier_checkpoint(run["model"]),
            "dataset": tokenized(run["dataset"]),
            "dataset_sidecars": sidecars(tokenized(run["dataset"])),
        }

    return inputs


def predict_options(wildcards, device=None):
    parts = [PREDICT["extra"], PREDICT_RUNS[wildcards.id].get("args", "")]
    parts.append(f"--device {device or PREDICT['device']}")
    return " ".join(part for part in parts if part)


# --- luminome-importance (rules/importance.smk) ---

IMPORTANCE = config["importance"]
IMPORTANCE_RUNS = IMPORTANCE["runs"]
EXPRESSION_IMPORTANCE_RUNS = IMPORTANCE["expression"]
TABULAR_IMPORTANCE_RUNS = IMPORTANCE["tabular"]


def importance_targets():
    if not (IMPORTANCE_RUNS or EXPRESSION_IMPORTANCE_RUNS or TABULAR_IMPORTANCE_RUNS):
        return []
    return (
        expand(
            f"{OUTDIR}/importance/{{id}}.{{ext}}",
            id=IMPORTANCE_RUNS,
            ext=["tsv", "npz"],
        )
        + expand(
            f"{OUTDIR}/importance/expression/{{id}}.{{ext}}",
            id=EXPRESSION_IMPORTANCE_RUNS,
            ext=["tsv", "bedgraph", "npz"],
        )
        + expand(
            f"{OUTDIR}/importance/tabular/{{id}}.{{ext}}",
            id=TABULAR_IMPORTANCE_RUNS,
            ext=["tsv", "ranking.tsv"],
        )
        + [f"{OUTDIR}/versions/luminome-importance.txt"]
    )


def expression_importance_options(wildcards, device=None):
    run = EXPRESSION_IMPORTANCE_RUNS[wildcards.id]
    parts = [IMPORTANCE["extra"], f"--method {run['method']}", run.get("args", "")]
    parts.append(f"--device {device or IMPORTANCE['device']}")
    if "subset" in run:
        parts.append(f"--subset {run['subset']}")
    return " ".join(part for part in parts if part)


def tabular_importance_options(wildcards, device=None):
    run = TABULAR_IMPORTANCE_RUNS[wildcards.id]
    parts = [IMPORTANCE["extra"], f"--method {run['method']}", run.get("args", "")]
    parts.append(f"--device {device or IMPORTANCE['device']}")
    return " ".join(part for part in parts if part)


def importance_options(wildcards, device=None):
    run = IMPORTANCE_RUNS[wildcards.id]
    parts = [IMPORTANCE["extra"], f"--method {run['method']}", run.get("args", "")]
    parts.append(f"--device {device or IMPORTANCE['device']}")
    return " ".join(part for part in parts if part)


# --- luminome-regions (rules/regions.smk) ---

REGIONS = config["regions"]
REGIONS_RUNS = REGIONS["runs"]


def regions_targets():
    if not REGIONS_RUNS:
        return []
    return expand(
        f"{OUTDIR}/regions/{{id}}.{{ext}}",
        id=REGIONS_RUNS,
        ext=["safetensors", "samples.tsv", "regions.tsv"],
    ) + [f"{OUTDIR}/versions/luminome-regions.txt"]


def regions_table(run_id):
    """The per-region table a regions run writes (what --reuse-regions reads back)."""
    return f"{OUTDIR}/regions/{run_id}.regions.tsv"


def regions_inputs(wildcards):
    run = REGIONS_RUNS[wildcards.id]
    inputs = {"reference": run["reference"]}
    if "genes" in run:
        inputs["genes"] = run["genes"]
    if "reuse_regions" in run:
        inputs["reuse"] = regions_table(run["reuse_regions"])
    inputs["peaks"] = run.get("peaks", [])
    inputs["accessibility"] = list(run.get("accessibility", {}).values())
    inputs["expression"] = list(run.get("expression", {}).values())
    for key in ("motifs", "motif_clusters"):
        if key in run:
            inputs[key] = run[key]
    return inputs


def regions_options(wildcards, input):
    run = REGIONS_RUNS[wildcards.id]
    parts = [REGIONS["extra"], run.get("args", "")]
    if "genes" in run:
        parts.append(f"--genes {input.genes}")
    if "tile_step" in run:
        parts.append(f"--tile-step {run['tile_step']}")
    if "reuse_regions" in run:
        parts.append(f"--reuse-regions {input.reuse}")
    parts += [f"--peaks {path}" for path in run.get("peaks", [])]
    parts += [
        f"--accessibility {cell}={path}"
        for cell, path in run.get("accessibility", {}).items()
    ]
    parts += [
        f"--expression {cell}={path}"
        for cell, path in run.get("expression", {}).items()
    ]
    if "motifs" in run:
        parts.append(f"--motifs {run['motifs']}")
    if "motif_clusters" in run:
        parts.append(f"--motif-clusters {run['motif_clusters']}")
    return " ".join(part for part in parts if part)


def region_dataset(run_id):
    """Region dataset written by the regions rule for a config["regions"]["runs"] id (its
    samples and regions tables are written beside it by the same rule)."""
    return f"{OUTDIR}/regions/{run_id}.safetensors"


# --- rule all ---


def all_targets():
    """Every output the config asks for; a config that asks for none is an error, not a
    silent no-op (e.g. a config/config.yaml left with empty sections)."""
    targets = (
        tokenize_targets()
        + mask_pairs_targets()
        + regions_targets()
        + train_targets()
        + predict_targets()
        + importance_targets()
    )
    if not targets:
        raise WorkflowError(
            "The config names no dataset or run: fill tokenize.datasets (or mask_pairs.datasets, "
            "regions.runs, train.*, predict.*, importance.*) in config/config.yaml of the working "
            "directory, or pass a config with --configfile (see config/README.md)."
        )
    return targets
