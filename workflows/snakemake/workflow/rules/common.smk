# Shared by all rule files (config validation, output root) and the helpers their rules call.


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
