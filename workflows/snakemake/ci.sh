#!/usr/bin/env bash
# CI for the Snakemake workflow: format check, lint, a real run on test-data/ and a
# check that Python reads every output. Needs snakemake, snakefmt, numpy and
# safetensors (workflows/requirements-ci.txt) and the luminome binaries on PATH.
# Run from anywhere; it works from the repository root. Outputs go to a temporary
# folder (or $LUMINOME_CI_OUT) so that results/ is left alone.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo_root"

workflow=workflows/snakemake
snakefile="$workflow/workflow/Snakefile"
test_config="$workflow/config/test.yaml"

for tool in snakemake snakefmt luminome-tokenize python3; do
    command -v "$tool" >/dev/null || { echo "ci.sh: $tool is not on PATH" >&2; exit 1; }
done

out="${LUMINOME_CI_OUT:-}"
if [[ -z "$out" ]]; then
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
fi
echo "== snakemake $(snakemake --version), outputs in $out"

echo "== snakefmt --check"
snakefmt --check "$workflow"

echo "== snakemake --lint (test config and the template config)"
snakemake -s "$snakefile" --configfile "$test_config" --lint
snakemake -s "$snakefile" --configfile "$workflow/config/config.yaml" --lint

echo "== schema validation rejects a misspelt key"
bad_config="$out/bad_config.yaml"
printf 'tokenize:\n  datasets:\n    x:\n      inptu: test-data/ecoli/ecoli_50kb.fa\n' > "$bad_config"
if snakemake -s "$snakefile" --configfile "$bad_config" --dry-run >"$out/bad_config.log" 2>&1; then
    echo "ci.sh: a config with an unknown key was accepted" >&2
    exit 1
fi
grep -q "inptu" "$out/bad_config.log"

echo "== test run on test-data/"
snakemake -s "$snakefile" --configfile "$test_config" --config "outdir=$out/results" \
    --cores 2 --quiet rules

echo "== outputs open in Python"
python3 - "$out/results" <<'PY'
import csv
import json
import sys
from pathlib import Path

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file

results = Path(sys.argv[1])
# dataset id -> (rows, row length, extra tensors); from config/test.yaml.
expected = {
    "prom_train": (2000, 72, {"labels"}),
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

version = (results / "versions" / "luminome-tokenize.txt").read_text().strip()
assert version.startswith("luminome-tokenize "), version
print(version)
PY

echo "== snakemake ci: ok"
