#!/usr/bin/env bash
# `luminome-train classify` with plain defaults (no --backbone, --adapter, --steps, --patience:
# what a user who gives only the data gets) on the GUE tasks of docs/results.md and on the
# bundled 2,000-row core-promoter set: docs/small-data.md, "Defaults at every size".
# Two runs at a time, one thread each (a 2-core machine).
#
#   bench/cnn/defaults.sh [work_dir] [seeds] [parallel]     # from the repository root
#
# WORK/<task>/{train,dev,test}.safetensors as bench/kmer/run.sh makes them (single nucleotides);
# the bundled set is tokenized here into WORK/bundled/. TASKS (environment) picks the tasks
# (default "mouse_0 tf_0 prom_prom_core_all bundled"); BIN the luminome-train to run; EXTRA
# options added to every run and TAG the run folders' name (docs/results.md, "The one choice by
# task": EXTRA="--strands given" TAG=given).
# Results: WORK/<task>/<TAG, default "default">_s<seed>/{metrics,test_metrics,kmer_floor}.tsv and
# .log (/usr/bin/time -v), summarised by bench/cnn/defaults.py WORK [TAG].
set -euo pipefail
work=${1:-work/kmer}
seeds=${2:-"1 2 3"}
parallel=${3:-2}
tasks=${TASKS:-"mouse_0 tf_0 prom_prom_core_all bundled"}
if [[ -n ${BIN:-} ]]; then
    bin=$(realpath "$BIN")
else
    cargo build --release -q -p luminome-train -p luminome-tokenize
    bin=$PWD/target/release/luminome-train
fi
if [[ " $tasks " == *" bundled "* && ! -f "$work/bundled/test.safetensors" ]]; then
    mkdir -p "$work/bundled"
    for s in train dev test; do
        "$(dirname "$bin")/luminome-tokenize" "test-data/gue_prom_core_all/$s.csv" -q \
            --scheme nucleotide -o "$work/bundled/$s.safetensors"
    done
fi
jobs=()
for seed in $seeds; do
    for task in $tasks; do
        jobs+=("$task $seed")
    done
done
run_one() {
    local task=$1 seed=$2
    local d="$work/$task" out="$work/$task/${tag}_s$seed"
    [[ -f "$out/kmer_floor.tsv" ]] && return 0
    rm -rf "$out"
    # shellcheck disable=SC2086  # EXTRA is several options
    /usr/bin/time -v "$bin" classify --train "$d/train.safetensors" --dev "$d/dev.safetensors" \
        --test "$d/test.safetensors" -o "$out" --seed "$seed" --threads 1 $extra 2> "$out.log"
}
tag=${TAG:-default}
extra=${EXTRA:-}
export -f run_one
export work bin tag extra
printf '%s\n' "${jobs[@]}" | xargs -P "$parallel" -L 1 bash -c 'run_one "$@"' _
