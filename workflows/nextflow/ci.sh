#!/usr/bin/env bash
# CI for the Nextflow pipeline. Nextflow itself cannot be installed on the CI machine,
# so reftrace (PyPI) parses every .nf and .config file offline and applies the rules in
# reftrace_rules.py; then this script checks that every include resolves, every module
# is used by main.nf, every module's meta.yml/environment.yml is valid against the nf-core
# schemas and matches its main.nf (check_module_meta.py), every module's script runs its
# tool in a folder holding only the declared inputs (check_staging.py; needs the luminome
# binaries on PATH), and that nextflow_schema.json and the samplesheet schemas agree with the
# config and main.nf and accept the test samplesheets (whose files exist) but not broken ones
# (check_schema.py, standing in for nf-schema's validateParameters() and samplesheetToList()).
# What this cannot check: a real `nextflow run` (no Nextflow, no JVM, no nf-schema plugin here).
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
# Plugin functions (include { ... } from "plugin/nf-schema") come from Nextflow, not a file.
unresolved = [
    entry for entry in info["unresolved_includes"]
    if any(not include.startswith("plugin/") for include in entry["includes"])
]
assert not unresolved, f"includes that do not resolve: {unresolved}"
plugins = sorted({i for e in info["unresolved_includes"] for i in e["includes"]})
print(f"plugin includes: {plugins}")
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

echo "== nextflow_schema.json, samplesheet schemas, test and broken samplesheets"
python3 check_schema.py

echo "== nextflow ci: ok"
