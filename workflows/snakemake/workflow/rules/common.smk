# Shared by all rule files (config validation, output root) and the helpers their rules call.


import os
import re

from snakemake.utils import validate

validate(config, schema="../schemas/config.schema.yaml")

OUTDIR = config["outdir"]
LOGDIR = f"{OUTDIR}/logs"


# --- luminome-tokenize (rules/tokenize.smk) ---

TOKENIZE = config["tokenize"]


def tokenize_targets():
    datasets = TOKENIZE["datasets"]
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


def train_targets():
    if not (MLM_RUNS or CLASSIFY_RUNS or BISTRAND_RUNS):
        return []
    return (
        expand(f"{OUTDIR}/train/mlm/{{id}}/best.safetensors", id=MLM_RUNS)
        + expand(f"{OUTDIR}/train/classify/{{id}}/best.safetensors", id=CLASSIFY_RUNS)
        + expand(f"{OUTDIR}/train/bistrand/{{id}}/best.safetensors", id=BISTRAND_RUNS)
        + [f"{OUTDIR}/versions/luminome-train.txt"]
    )


def train_inputs(runs, dataset=tokenized):
    """Input files of a train run; `dataset` maps a dataset id to its file (tokenized, paired)."""

    def inputs(wildcards):
        run = runs[wildcards.id]
        files = {"train": dataset(run["train"])}
        if "dev" in run:
            files["dev"] = dataset(run["dev"])
        if "init" in run:
            files["init"] = f"{OUTDIR}/train/mlm/{run['init']}/best.safetensors"
        return files

    return inputs


def train_options(runs, command):
    def options(wildcards, input):
        run = runs[wildcards.id]
        parts = [TRAIN["extra"], run.get("args", ""), f"--device {TRAIN['device']}"]
        if "dev" in run:
            parts.append(f"--dev {input.dev}")
        if command == "classify":
            parts.append(f"--adapter {run['adapter']}")
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


def predict_targets():
    if not (PREDICT_RUNS or VARIANT_RUNS):
        return []
    return (
        expand(f"{OUTDIR}/predict/{{id}}.predictions.tsv", id=PREDICT_RUNS)
        + expand(f"{OUTDIR}/predict/{{id}}.metrics.tsv", id=PREDICT_WITH_METRICS)
        + expand(
            f"{OUTDIR}/predict/variants/{{id}}.{{ext}}",
            id=VARIANT_RUNS,
            ext=["scores.tsv", "scores.vcf.gz", "llr.bedgraph"],
        )
        + [f"{OUTDIR}/versions/luminome-predict.txt"]
    )


def variant_inputs(wildcards):
    """A variant run's bi-strand checkpoint, its mask_pairs dataset and that dataset's variants."""
    run = VARIANT_RUNS[wildcards.id]
    return {
        "checkpoint": f"{OUTDIR}/train/bistrand/{run['model']}/best.safetensors",
        "dataset": paired(run["dataset"]),
        "variants": MASK_PAIRS["datasets"][run["dataset"]]["variants"],
    }


def variant_options(wildcards):
    parts = [PREDICT["extra"], VARIANT_RUNS[wildcards.id].get("args", "")]
    parts.append(f"--device {PREDICT['device']}")
    return " ".join(part for part in parts if part)


def classifier_checkpoint(model_id):
    return f"{OUTDIR}/train/classify/{model_id}/best.safetensors"


def model_inputs(runs):
    def inputs(wildcards):
        run = runs[wildcards.id]
        return {
            "checkpoint": classifier_checkpoint(run["model"]),
            "dataset": tokenized(run["dataset"]),
        }

    return inputs


def predict_options(wildcards):
    parts = [PREDICT["extra"], PREDICT_RUNS[wildcards.id].get("args", "")]
    parts.append(f"--device {PREDICT['device']}")
    return " ".join(part for part in parts if part)


# --- luminome-importance (rules/importance.smk) ---

IMPORTANCE = config["importance"]
IMPORTANCE_RUNS = IMPORTANCE["runs"]


def importance_targets():
    if not IMPORTANCE_RUNS:
        return []
    return expand(
        f"{OUTDIR}/importance/{{id}}.{{ext}}", id=IMPORTANCE_RUNS, ext=["tsv", "npz"]
    ) + [f"{OUTDIR}/versions/luminome-importance.txt"]


def importance_options(wildcards):
    run = IMPORTANCE_RUNS[wildcards.id]
    parts = [IMPORTANCE["extra"], f"--method {run['method']}", run.get("args", "")]
    parts.append(f"--device {IMPORTANCE['device']}")
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


def regions_inputs(wildcards):
    run = REGIONS_RUNS[wildcards.id]
    inputs = {"reference": run["reference"], "genes": run["genes"]}
    inputs["peaks"] = run.get("peaks", [])
    inputs["accessibility"] = list(run["accessibility"].values())
    inputs["expression"] = list(run.get("expression", {}).values())
    for key in ("motifs", "motif_clusters"):
        if key in run:
            inputs[key] = run[key]
    return inputs


def regions_options(wildcards):
    run = REGIONS_RUNS[wildcards.id]
    parts = [REGIONS["extra"], run.get("args", "")]
    parts += [f"--peaks {path}" for path in run.get("peaks", [])]
    parts += [
        f"--accessibility {cell}={path}" for cell, path in run["accessibility"].items()
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
