#!/usr/bin/env bash
# CI for the Snakemake workflow (Snakemake workflow catalog layout: workflow/, config/,
# profiles/, .test/): format check, lint, config validation, the profiles, the workflow used
# as a Snakemake module (dry run), every dataset's sidecars declared as inputs, a real run of
# the .test/ config on test-data/ (snakemake --directory .test), the report, and a check that
# Python reads every output. Needs snakemake, snakefmt, snakemake-executor-plugin-slurm, numpy
# and safetensors (workflows/requirements-ci.txt) and the luminome binaries on PATH. Run from
# anywhere.
# Outputs go to a temporary folder (or $LUMINOME_CI_OUT) so that .test/results/ is left alone.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The workflow's root: Snakemake finds profiles/default/ from here.
cd "$repo_root/workflows/snakemake"

for tool in snakemake snakefmt luminome-tokenize luminome-mask-pairs luminome-regions \
    luminome-train luminome-predict luminome-importance python3; do
    command -v "$tool" >/dev/null || { echo "ci.sh: $tool is not on PATH" >&2; exit 1; }
done

out="${LUMINOME_CI_OUT:-}"
if [[ -z "$out" ]]; then
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
fi
test_run=(--directory .test --config "outdir=$out/results")
echo "== snakemake $(snakemake --version), outputs in $out"

echo "== catalog layout"
for path in workflow/Snakefile config/config.yaml config/README.md .snakemake-workflow-catalog.yml \
    .test/config/config.yaml profiles/default/config.yaml profiles/slurm/config.yaml; do
    [[ -f "$path" ]] || { echo "ci.sh: $path is missing" >&2; exit 1; }
done
# The catalog's current keys (docs/about/adding_workflows.md of snakemake-workflow-catalog):
# apptainer, not the old singularity.
python3 - <<'PY'
import yaml

usage = yaml.safe_load(open(".snakemake-workflow-catalog.yml"))["usage"]
assert set(usage) <= {"mandatory-flags", "software-stack-deployment", "report"}, usage
assert set(usage["mandatory-flags"]) == {"desc", "flags"}, usage["mandatory-flags"]
deployment = usage["software-stack-deployment"]
assert set(deployment) <= {"conda", "apptainer", "apptainer+conda"}, deployment
assert all(isinstance(v, bool) for v in deployment.values()), deployment
print(f".snakemake-workflow-catalog.yml: {deployment}, report: {usage.get('report')}")
PY

echo "== snakefmt --check"
snakefmt --check .

echo "== snakemake --lint (the .test config and the template config/config.yaml)"
snakemake --directory .test --lint
snakemake --lint

echo "== schema validation rejects a misspelt key"
bad_config="$out/bad_config.yaml"
printf 'tokenize:\n  datasets:\n    x:\n      inptu: test-data/ecoli/ecoli_50kb.fa\n' > "$bad_config"
if snakemake --configfile "$bad_config" --dry-run >"$out/bad_config.log" 2>&1; then
    echo "ci.sh: a config with an unknown key was accepted" >&2
    exit 1
fi
grep -q "inptu" "$out/bad_config.log"

echo "== schema validation rejects a mask_pairs dataset with two input modes"
printf 'mask_pairs:\n  datasets:\n    x:\n      fasta: a.fa\n      variants: b.vcf\n' > "$bad_config"
if snakemake --configfile "$bad_config" --dry-run >"$out/bad_config.log" 2>&1; then
    echo "ci.sh: a mask_pairs dataset with both fasta and variants was accepted" >&2
    exit 1
fi
grep -q "oneOf" "$out/bad_config.log"

echo "== a config that asks for nothing fails, saying what to set"
mkdir -p "$out/empty_project/config"
printf 'outdir: results\n' > "$out/empty_project/config/config.yaml"
if snakemake --directory "$out/empty_project" --dry-run >"$out/empty.log" 2>&1; then
    echo "ci.sh: a config without datasets or runs was accepted" >&2
    exit 1
fi
grep -q "The config names no dataset or run" "$out/empty.log"

echo "== profiles: default is picked up, slurm is used with --workflow-profile"
snakemake "${test_run[@]}" --dry-run >"$out/default_profile.log" 2>&1
grep -q "Using workflow specific profile profiles/default" "$out/default_profile.log"
# The slurm profile deploys software with apptainer, absent here: env-modules stands in for
# the dry run (it needs nothing until a job runs); the profile's per-rule resources must show.
snakemake "${test_run[@]}" --workflow-profile profiles/slurm --sdm env-modules --dry-run \
    >"$out/slurm_profile.log" 2>&1
grep -q "Using workflow specific profile profiles/slurm" "$out/slurm_profile.log"
grep -A12 "^rule train_mlm:" "$out/slurm_profile.log" | grep -q "runtime=1440"
# GPU jobs in a container need the host's driver: both profiles give apptainer --nv (the command
# line's --apptainer-args replaces it).
python3 - <<'PY'
import yaml

for profile in ("default", "slurm"):
    args = yaml.safe_load(open(f"profiles/{profile}/config.yaml")).get("apptainer-args", "")
    assert "--nv" in args.split(), f"profiles/{profile}: apptainer-args {args!r} lacks --nv"
    print(f"profiles/{profile}: apptainer-args {args!r}")
PY

echo "== as a Snakemake module: module luminome ... use rule * from luminome (dry run)"
# An outer project that uses this workflow as a module (workflows/README.md shows the same with
# github(...) in place of the local path), given the test config with absolute paths: it must
# plan the same jobs as the workflow run on .test/ directly.
module_project="$out/module_project"
mkdir -p "$module_project/config" "$module_project/workflow"
sed "s#\.\./\.\./\.\./test-data/#$repo_root/test-data/#g" .test/config/config.yaml \
    > "$module_project/config/config.yaml"
cat > "$module_project/workflow/Snakefile" <<SMK
configfile: "config/config.yaml"


module luminome:
    snakefile:
        "$repo_root/workflows/snakemake/workflow/Snakefile"
    config:
        config


use rule * from luminome
SMK
snakefmt --check "$module_project/workflow/Snakefile"
(cd "$module_project" && snakemake --dry-run --forceall --config "outdir=$out/module_results") \
    >"$out/module.log" 2>&1 || { cat "$out/module.log" >&2; exit 1; }
snakemake "${test_run[@]}" --dry-run --forceall >"$out/direct.log" 2>&1
job_stats() { sed -n '/^Job stats:/,/^$/p' "$1" | sort; }
if ! diff <(job_stats "$out/direct.log") <(job_stats "$out/module.log"); then
    echo "ci.sh: used as a module, the workflow plans other jobs than run directly" >&2
    exit 1
fi
grep -q "^all  *1$" "$out/module.log"
echo "module: the same $(grep -m1 '^total  *[0-9]*$' "$out/module.log" | awk '{print $2}') jobs as run directly"

echo "== every job that reads a dataset declares its sidecars"
python3 check_sidecars.py "${test_run[@]}"

echo "== test run on test-data/ (.test/config/config.yaml)"
start=$SECONDS
snakemake "${test_run[@]}" --cores 2 --quiet rules
echo "test run: $((SECONDS - start)) s"

echo "== report with captions"
snakemake "${test_run[@]}" --report "$out/report.zip" >"$out/report.log" 2>&1 \
    || { cat "$out/report.log" >&2; exit 1; }
python3 - "$out/report.zip" <<'PY'
import sys
import zipfile

names = zipfile.ZipFile(sys.argv[1]).namelist()
for output in ("prom_test.predictions.tsv", "prom_test.metrics.tsv", "celegans_snvs.scores.tsv",
               "prom_test_ig.tsv", "metrics.tsv", "retrieval_test.ranks.tsv"):
    assert any(name.endswith("/" + output) for name in names), f"report lacks {output}"
print(f"report: {len(names)} files")
PY

echo "== outputs open in Python"
python3 - "$out/results" "$repo_root/test-data" <<'PY'
import csv
import json
import sys
from pathlib import Path

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file

results = Path(sys.argv[1])
test_data = Path(sys.argv[2])
# dataset id -> (rows, row length, extra tensors); from .test/config/config.yaml.
expected = {
    "prom_train": (2000, 72, {"labels"}),
    "prom_dev": (500, 72, {"labels"}),
    "prom_test": (500, 72, {"labels"}),
    "chr22_slice": (None, 514, {"soft_mask"}),
    "tss": (16, 202, set()),
}
for dataset, (rows, length, extra) in expected.items():
    path = results / "tokenize" / f"{dataset}.safetensors"
    tensors = load_file(path)
    assert set(tensors) == {"input_ids", "attention_mask"} | extra, (path, set(tensors))
    ids = tensors["input_ids"]
    n, width = ids.shape
    assert width == length, (path, ids.shape)
    assert rows is None or n == rows, (path, ids.shape)
    assert tensors["attention_mask"].shape == ids.shape
    assert int(ids.max()) < 10, "single-nucleotide vocabulary has 10 ids"
    if "labels" in extra:
        assert tensors["labels"].shape == (n,) and set(np.unique(tensors["labels"])) == {0, 1}
    with safe_open(path, "np") as handle:
        metadata = handle.metadata()
    assert metadata["kind"] == "luminome.token_dataset", metadata
    json.loads(metadata["luminome"])
    with open(path.with_name(f"{dataset}.index.tsv"), newline="") as index_file:
        index = list(csv.DictReader(index_file, delimiter="\t"))
    assert len(index) == n, (dataset, len(index), n)
    print(f"{dataset}: input_ids {ids.shape} {ids.dtype}, {sorted(tensors)}, index rows {len(index)}")

def metadata_of(path):
    with safe_open(path, "np") as handle:
        return handle.metadata()

# ecoli_windows_shards was tokenized as three jobs (--shard, --gather), ecoli_windows_one_job as
# one: the same tensors, index and metadata, but for the command line the dataset records (its
# -o names the dataset id). Parts removed.
tokenized = {}
for run in ("ecoli_windows_shards", "ecoli_windows_one_job"):
    path = results / "tokenize" / f"{run}.safetensors"
    meta = metadata_of(path)
    doc = json.loads(meta.pop("luminome"))
    assert run in doc.pop("command_line")
    doc.pop("index_file")
    tokenized[run] = (load_file(path), meta, doc, path.with_name(f"{run}.index.tsv").read_bytes())
(a, a_meta, a_doc, a_index), (b, b_meta, b_doc, b_index) = tokenized.values()
assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) and a[k].dtype == b[k].dtype for k in a)
assert (a_meta, a_doc, a_index) == (b_meta, b_doc, b_index), "the sharded dataset differs from one job"
parts = results / "tokenize" / "ecoli_windows_shards.parts"
assert not parts.exists() or not any(parts.iterdir()), sorted(parts.iterdir())
print(f"tokenize: three shards gathered = one job ({a['input_ids'].shape[0]} rows)")


def read_tsv(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


# luminome-mask-pairs: int8 labels (-100 off the masked positions), the same positions masked
# on both strands; the SNV dataset has one row per variant with the site masked.
for dataset in ("celegans_train", "ecoli_dev", "celegans_snvs"):
    path = results / "mask_pairs" / f"{dataset}.safetensors"
    tensors = load_file(path)
    assert metadata_of(path)["kind"] == "luminome.pair_dataset", metadata_of(path)
    n, width = tensors["ids_a"].shape
    assert width == 128 and tensors["ids_b"].shape == (n, width), (path, tensors["ids_b"].shape)
    assert tensors["labels_a"].dtype == np.int8, tensors["labels_a"].dtype
    masked = tensors["labels_a"] != -100
    assert masked.any() and (masked == (tensors["labels_b"] != -100)).all(), path
    index = read_tsv(path.with_name(f"{dataset}.index.tsv"))
    assert len(index) == n, (dataset, len(index), n)
    print(f"mask_pairs {dataset}: {n} rows x {width}, {int(masked.sum())} masked positions")
vcf_records = [
    line for line in open(test_data / "celegans/celegans_small.snv.vcf") if not line.startswith("#")
]
snv_rows = read_tsv(results / "mask_pairs" / "celegans_snvs.index.tsv")
assert len(snv_rows) == len(vcf_records), (len(snv_rows), len(vcf_records))

# luminome-predict on variants: one score per SNV, the VCF carrying LLR in INFO.
import gzip

scores = read_tsv(results / "predict" / "variants" / "celegans_snvs.scores.tsv")
assert len(scores) == len(vcf_records), (len(scores), len(vcf_records))
for row in scores:
    llr = float(row["llr"])
    assert np.isfinite(llr) and abs(llr - (float(row["llr_a"]) + float(row["llr_b"])) / 2) < 1e-3, row
with gzip.open(results / "predict" / "variants" / "celegans_snvs.scores.vcf.gz", "rt") as handle:
    records = [line.split("\t") for line in handle if not line.startswith("#")]
assert len(records) == len(vcf_records) and all("LLR=" in r[7] for r in records), records[:1]
bedgraph = (results / "predict" / "variants" / "celegans_snvs.llr.bedgraph").read_text().splitlines()
assert bedgraph[0].startswith("track type=bedGraph"), bedgraph[0]
# One interval per position: two SNVs at the same site share a line (the lowest LLR).
assert len(bedgraph) - 1 == len({(r["chrom"], r["pos"]) for r in scores}), len(bedgraph)
print(f"predict variants: {len(scores)} SNVs scored, VCF and bedGraph written")

# celegans_snvs ran as three shards (--shard, --gather), celegans_snvs_one_job as one job:
# the same bytes; in the VCF all but the header line that records the command (its output
# names differ by the run id).
variants = results / "predict" / "variants"
for name in ("scores.tsv", "llr.bedgraph", "scores.vcf.gz"):
    sharded, one = (variants / f"{run}.{name}" for run in ("celegans_snvs", "celegans_snvs_one_job"))
    if name.endswith(".gz"):
        lines = [
            [l for l in gzip.open(f, "rt") if not l.startswith("##luminome_predictCommand")]
            for f in (sharded, one)
        ]
        assert lines[0] == lines[1], f"{name}: the sharded run differs from one job"
    else:
        assert sharded.read_bytes() == one.read_bytes(), f"{name}: the sharded run differs from one job"
assert not (variants / "celegans_snvs.parts").exists() or not any((variants / "celegans_snvs.parts").iterdir())
print("predict variants: three shards gathered = one job, byte for byte")

# luminome-regions: 9 genes x 2 cell types, N = 50 regions (.test/config/config.yaml).
regions = results / "regions" / "chr22_slice.safetensors"
tensors = load_file(regions)
assert metadata_of(regions)["kind"] == "luminome.region_dataset", metadata_of(regions)
samples, n_regions, _ = tensors["features"].shape
assert n_regions == 50 and samples > 0, tensors["features"].shape
assert tensors["region_mask"].shape == (samples, n_regions)
assert tensors["expression"].shape == (samples,)
sample_rows = read_tsv(regions.with_name("chr22_slice.samples.tsv"))
assert len(sample_rows) == samples, (len(sample_rows), samples)
assert {row["cell_type"] for row in sample_rows} == {"K562", "GM12878"}
assert read_tsv(regions.with_name("chr22_slice.regions.tsv")), "empty regions table"
print(f"regions: features {tensors['features'].shape}, {samples} samples")

# chr22_slice_shards ran as three jobs (--shard, --gather): the same tensors and tables as
# chr22_slice's one job; in the metadata all but what names the run id (the command's -o and
# the tables' file names). Parts removed.
def region_run(run):
    path = results / "regions" / f"{run}.safetensors"
    meta = metadata_of(path)
    doc = json.loads(meta.pop("luminome"))
    assert run in meta.pop("command_line") and run in doc.pop("samples_table") and run in doc.pop("regions_table")
    tables = [path.with_name(f"{run}.{t}.tsv").read_bytes() for t in ("samples", "regions")]
    return load_file(path), meta, doc, tables
(a, a_meta, a_doc, a_tables), (b, b_meta, b_doc, b_tables) = map(region_run, ("chr22_slice_shards", "chr22_slice"))
assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f") and a[k].dtype == b[k].dtype for k in a)
assert (a_meta, a_doc, a_tables) == (b_meta, b_doc, b_tables), "the sharded region dataset differs from one job"
parts = results / "regions" / "chr22_slice_shards.parts"
assert not parts.exists() or not any(parts.iterdir()), sorted(parts.iterdir())
print("regions: three shards gathered = one job")

# Expression and tabular predictions and importance ran as three jobs (--shard, --gather) and as
# one: every output the same bytes (metrics, bedGraph, npz and ranking included). Parts removed.
for folder, pairs in (
    ("predict/expression", [("chr22_test", ("predictions.tsv", "metrics.tsv"))]),
    ("predict/tabular", [("bc", ("predictions.tsv", "metrics.tsv"))]),
    ("importance/expression", [("chr22_motifs", ("tsv", "bedgraph", "npz"))]),
    ("importance/tabular", [("bc_features", ("tsv", "ranking.tsv"))]),
):
    for run, extensions in pairs:
        for ext in extensions:
            one, sharded = (results / folder / f"{r}.{ext}" for r in (run, f"{run}_shards"))
            assert one.read_bytes() == sharded.read_bytes(), f"{folder}/{run}_shards.{ext} differs from one job"
        parts = results / folder / f"{run}_shards.parts"
        assert not parts.exists() or not any(parts.iterdir()), sorted(parts.iterdir())
print("expression and tabular predict and importance: three shards gathered = one job")

# luminome-train: checkpoints and metrics of both runs.
for command, run, steps in (
    ("mlm", "prom_mlm", 30),
    ("classify", "prom_gated", 30),
    ("classify", "prom_default", 30),
    ("bistrand", "celegans_bistrand", 20),
    ("region_pretrain", "chr22_pretrain", 20),
    ("expression", "chr22_expression", 20),
):
    folder = results / "train" / command / run
    for name in ("best.safetensors", "last.safetensors"):
        checkpoint = load_file(folder / name)
        assert checkpoint and all(np.isfinite(t).all() for t in checkpoint.values()), folder / name
        assert metadata_of(folder / name)["kind"] == "luminome.checkpoint"
        json.loads(metadata_of(folder / name)["luminome"])
    rows = read_tsv(folder / "metrics.tsv")
    assert rows and int(rows[-1]["step"]) == steps, (folder, rows[-1:])
    print(f"train {command} {run}: {len(checkpoint)} tensors, {len(rows)} metric rows")
# A classify run without adapter or init trains classify's default recipe.
default_model = json.loads(metadata_of(results / "train" / "classify" / "prom_default" / "best.safetensors")["luminome"])["model"]
assert "cnn" in default_model and default_model["adapter"] == "gated-max", sorted(default_model)
print("train classify prom_default: classify's default recipe (cnn, gated-max)")

# luminome-predict: one row per test record, probabilities summing to 1.
test_records = load_file(results / "tokenize" / "prom_test.safetensors")["input_ids"].shape[0]
predictions = read_tsv(results / "predict" / "prom_test.predictions.tsv")
assert len(predictions) == test_records, (len(predictions), test_records)
assert list(predictions[0])[:3] == ["record", "name", "label"], list(predictions[0])
assert [int(row["record"]) for row in predictions] == list(range(test_records))
for row in predictions:
    assert abs(float(row["prob_0"]) + float(row["prob_1"]) - 1) < 1e-4, row
metrics = {row["metric"]: row["value"] for row in read_tsv(results / "predict" / "prom_test.metrics.tsv")}
assert int(metrics["n"]) == test_records and 0 <= float(metrics["accuracy"]) <= 1, metrics
print(f"predict: {len(predictions)} rows, accuracy {metrics['accuracy']}")
# prom_test_shards: the same run as three jobs (--shard, --gather): the same bytes, parts removed.
for name in ("predictions.tsv", "metrics.tsv"):
    sharded, one = (results / "predict" / f"{run}.{name}" for run in ("prom_test_shards", "prom_test"))
    assert sharded.read_bytes() == one.read_bytes(), f"{name}: the sharded run differs from one job"
parts = results / "predict" / "prom_test_shards.parts"
assert not parts.exists() or not any(parts.iterdir()), sorted(parts.iterdir())
print("predict: three shards gathered = one job, byte for byte")
# prom_test_ig_shards: the same importance run as three jobs (--shard, --gather).
for ext in ("tsv", "npz"):
    sharded, one = (results / "importance" / f"{run}.{ext}" for run in ("prom_test_ig_shards", "prom_test_ig"))
    assert sharded.read_bytes() == one.read_bytes(), f"importance {ext}: the sharded run differs from one job"
parts = results / "importance" / "prom_test_ig_shards.parts"
assert not parts.exists() or not any(parts.iterdir()), sorted(parts.iterdir())
print("importance: three shards gathered = one job, byte for byte")

# Expression: tiles for pretraining; the expression model's held-out genes predicted; the top
# motifs of each held-out sample.
tiles = load_file(results / "regions" / "chr22_tiles.safetensors")
assert "expression" not in tiles and tiles["features"].shape[1:] == (50, 11), tiles["features"].shape
assert {"tss_slot", "strand"} <= set(tiles), sorted(tiles)
expression_meta = json.loads(metadata_of(results / "train" / "expression" / "chr22_expression" / "best.safetensors")["luminome"])
assert expression_meta["model"]["holdout"]["by"] == "genes", expression_meta["model"]
predicted = read_tsv(results / "predict" / "expression" / "chr22_test.predictions.tsv")
assert predicted and {row["split"] for row in predicted} == {"test"}, predicted[:2]
assert all(float(row["predicted"]) >= 0 for row in predicted)
metrics = {row["metric"]: row["value"] for row in read_tsv(results / "predict" / "expression" / "chr22_test.metrics.tsv")}
assert int(metrics["n"]) == len(predicted) and "K562.pearson" in metrics, metrics
motifs = read_tsv(results / "importance" / "expression" / "chr22_motifs.tsv")
assert {int(row["rank"]) for row in motifs} == set(range(1, 6)), "--top 5"
assert len(motifs) == 5 * len(predicted)
npz = np.load(results / "importance" / "expression" / "chr22_motifs.npz")
assert npz["contrib"].shape == (len(predicted), 50, 11), npz["contrib"].shape
print(f"expression: {len(tiles['features'])} tiles, {len(predicted)} test samples, metrics {metrics['pearson']}")

# luminome-importance: --records 50 (.test/config/config.yaml).
scores = read_tsv(results / "importance" / "prom_test_ig.tsv")
assert {int(row["record"]) for row in scores} == set(range(50)), "importance records"
npz = np.load(results / "importance" / "prom_test_ig.npz")
assert npz["contrib"].shape[:2] == (50, 4) and npz["onehot"].shape == npz["contrib"].shape
print(f"importance: {len(scores)} token rows, contrib {npz['contrib'].shape}")

# Tabular: 3-fold CV covers every row once; the split model's predictions, metrics (with its
# Youden threshold) and the attention importance of 50 samples x 5 columns with a ranking.
cv = read_tsv(results / "train" / "tabular" / "bc_cv" / "cv_metrics.tsv")
assert [row["fold"] for row in cv] == ["1", "2", "3", "mean", "sd"], cv
assert sum(int(row["n"]) for row in cv[:3]) == 569, cv
assert len(read_tsv(results / "train" / "tabular" / "bc_cv" / "cv_predictions.tsv")) == 569
tabular_predictions = read_tsv(results / "predict" / "tabular" / "bc.predictions.tsv")
assert len(tabular_predictions) == 569 and tabular_predictions[0]["name"] == "bc001"
for row in tabular_predictions:
    assert abs(float(row["prob_benign"]) + float(row["prob_malignant"]) - 1) < 1e-4, row
metrics = {row["metric"]: row["value"] for row in read_tsv(results / "predict" / "tabular" / "bc.metrics.tsv")}
assert int(metrics["n"]) == 569 and "threshold" in metrics, metrics
features = read_tsv(results / "importance" / "tabular" / "bc_features.tsv")
assert len(features) == 50 * 5 and {row["rank"] for row in features} == {"1", "2", "3", "4", "5"}
ranking = read_tsv(results / "importance" / "tabular" / "bc_features.ranking.tsv")
assert len(ranking) == 30 and ranking[0]["rank"] == "1", ranking[:1]
print(f"tabular: CV MCC {cv[3]['mcc']}, predict accuracy {metrics['accuracy']}, top column {ranking[0]['feature']}")

# Retrieval: 25 test queries ranked against the 25 test windows; metrics and embeddings.
ranks = read_tsv(results / "predict" / "retrieval" / "retrieval_test.ranks.tsv")
assert len(ranks) == 25 and all(1 <= int(r["first_rank"]) <= 25 for r in ranks), ranks[:1]
retrieval = {r["metric"]: float(r["value"]) for r in read_tsv(results / "predict" / "retrieval" / "retrieval_test.metrics.tsv")}
assert retrieval["corpus_size"] == 25 and 0 < retrieval["full.mrr"] <= 1, retrieval
emb = load_file(str(results / "predict" / "retrieval" / "retrieval_test.embeddings.safetensors"))
assert emb["query"].shape == (25, 16) and emb["passage"].shape == (25, 16), {k: v.shape for k, v in emb.items()}
pairs = load_file(str(results / "tokenize" / "retrieval_train.safetensors"))
assert pairs["query_ids"].shape[0] == 200 and pairs["passage_group"].shape == (200,)
print(f"retrieval: MRR {retrieval['full.mrr']:.3f} over {len(ranks)} queries")

for tool in ("tokenize", "mask-pairs", "regions", "train", "predict", "importance"):
    version = (results / "versions" / f"luminome-{tool}.txt").read_text().strip()
    assert version.startswith(f"luminome-{tool} "), version
    print(version)
PY

echo "== snakemake ci: ok"
