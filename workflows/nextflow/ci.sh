#!/usr/bin/env bash
# CI for the Nextflow pipeline. Nextflow itself cannot be installed on the CI machine,
# so reftrace (PyPI) parses every .nf and .config file offline and applies the rules in
# reftrace_rules.py; then this script checks that every include resolves, every module
# is used by main.nf, every module's meta.yml/environment.yml is valid against the nf-core
# schemas and matches its main.nf (check_module_meta.py), every module's script runs its
# tool in a folder holding only the declared inputs (check_staging.py; needs the luminome
# binaries on PATH), and every file named in the test samplesheet, regions CSV and pairs
# CSV exists.
set -euo pipefail

pipeline="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$pipeline"

command -v reftrace >/dev/null || { echo "ci.sh: reftrace is not on PATH" >&2; exit 1; }
echo "== $(reftrace --version)"

echo "== reftrace lint (syntax of all .nf/.config files + module conventions)"
reftrace lint --rules reftrace_rules.py --directory .

echo "== includes resolve and every module is used"
reftrace info modules --directory . --compact | sed -n '/^{/,$p' | python3 -c '
import json, sys
info = json.load(sys.stdin)
unresolved = info["unresolved_includes"]
assert not unresolved, f"includes that do not resolve: {unresolved}"
used = {path for entry in info["resolved_includes"] for path in entry["includes"]}
modules = {m["path"] for m in info["modules"] if m["processes"]}
unused = sorted(modules - used)
assert not unused, f"modules not included anywhere: {unused}"
print(f"{len(modules)} module(s), all included: {sorted(modules)}")
'

echo "== meta.yml and environment.yml: nf-core schemas, and the same channels as main.nf"
python3 check_module_meta.py

echo "== isolated staging: each module's script, its tool, only the declared inputs"
for tool in luminome-tokenize luminome-mask-pairs luminome-regions luminome-train luminome-predict luminome-importance; do
    command -v "$tool" >/dev/null || { echo "ci.sh: $tool is not on PATH" >&2; exit 1; }
done
python3 check_staging.py

echo "== test samplesheet files exist"
samplesheet=assets/samplesheet_test.csv
python3 - "$samplesheet" <<'PY'
import csv
import sys
from pathlib import Path

samplesheet = Path(sys.argv[1])
with samplesheet.open(newline="") as handle:
    rows = list(csv.DictReader(handle))
assert rows and list(rows[0]) == ["id", "input", "reference", "args"], rows[:1]
ids = [row["id"] for row in rows]
assert len(set(ids)) == len(ids), f"duplicate ids in {samplesheet}: {ids}"
for row in rows:
    for column in ("input", "reference"):
        if row[column]:
            path = samplesheet.parent / row[column]
            assert path.is_file(), f"{samplesheet}: {row['id']}: {column} {path} does not exist"
print(f"{len(rows)} datasets: {ids}")
PY

echo "== test regions CSV files exist"
python3 - assets/regions_test.csv <<'PY'
import csv
import sys
from pathlib import Path

table = Path(sys.argv[1])
with table.open(newline="") as handle:
    rows = list(csv.DictReader(handle))
assert rows, f"{table} is empty"
for row in rows:
    for column in ("reference", "genes", "peaks", "motifs", "motif_clusters", "accessibility", "expression"):
        for entry in filter(None, row[column].split(";")):
            path = table.parent / entry.split("=", 1)[-1]
            assert path.is_file(), f"{table}: {row['id']}: {column} {path} does not exist"
print(f"{len(rows)} region run(s): {[row['id'] for row in rows]}")
PY

echo "== test pairs CSV files exist"
python3 - assets/pairs_test.csv <<'PY'
import csv
import sys
from pathlib import Path

table = Path(sys.argv[1])
with table.open(newline="") as handle:
    rows = list(csv.DictReader(handle))
assert rows and list(rows[0]) == ["id", "type", "sequences", "strand_b", "variants", "args"], rows[:1]
for row in rows:
    assert row["type"] in {"fasta", "fasta_pair", "paired", "variants"}, row
    assert bool(row["strand_b"]) == (row["type"] == "fasta_pair"), row
    assert bool(row["variants"]) == (row["type"] == "variants"), row
    for column in ("sequences", "strand_b", "variants"):
        if row[column]:
            path = table.parent / row[column]
            assert path.is_file(), f"{table}: {row['id']}: {column} {path} does not exist"
print(f"{len(rows)} pair dataset(s): {[row['id'] for row in rows]}")
PY

echo "== nextflow ci: ok"
