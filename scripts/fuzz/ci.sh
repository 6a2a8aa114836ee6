#!/usr/bin/env bash
# CI's fuzz pass: a fixed-seed stratified sample of the corpus (every tool and template) plus
# every case in regressions.txt, run on the debug binaries under a 4 GB address-space cap and a
# 120 s limit per case. Fails on any new failure (see run_cases.py for the kinds).
#   bash scripts/fuzz/ci.sh [BIN_DIR]        # from anywhere; BIN_DIR defaults to target/debug
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=${1:-$repo/target/debug}
work=$(mktemp -d "${TMPDIR:-/tmp}/luminome-fuzz-ci.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 "$here/make_cases.py" --seed 1 --limit "${FUZZ_LIMIT:-300}" --include "$here/regressions.txt" \
    --out "$work/corpus" --bin "$bin" -q
python3 "$here/run_cases.py" "$work/corpus" --bin "$bin" --timeout 120 --mem-mb 4000 \
    --report "$work/report.tsv"
