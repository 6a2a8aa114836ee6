#!/usr/bin/env bash
# Region expression transformer performance, side by side in one session (docs/benchmarks.md,
# "Region expression transformer").
#
#   bench/expression/bench.sh DATASET.safetensors CHECKPOINT [steps] [repeats]   # from the repo root
#
# 1. Training step and inference, PyTorch (bench/expression/torch_expression.py --bench) vs
#    Luminome (tools/luminome-engine/examples/bench_expression.rs): the same model (d 128 x 4
#    layers, 4 heads, FFN 256, N = 200 regions x 283 features, attention-pool head, TSS-relative
#    positions, Poisson loss), batch 16, random inputs, the same thread count; for each repeat and
#    thread count PyTorch then Luminome, so both see the same load. Medians of `steps` steps after
#    2 warm-up steps.
# 2. luminome-predict over every sample of DATASET (all chr22 genes x 2 cell types of
#    bench/expression/run.sh) with CHECKPOINT, whole process, 1 and 2 threads: samples/s and peak
#    RSS.
#
# Needs release binaries and the bench example (built if missing), and python3 with torch.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dataset=$1
checkpoint=$2
steps=${3:-10}
repeats=${4:-2}
bin="${BIN:-$repo/target/release}"
example="${BENCH_BIN:-$repo/target/release/examples/bench_expression}"
torch_python="${TORCH_PYTHON:-python3}"
[ -x "$example" ] || (cd "$repo" && cargo build --release -q -p luminome-engine --example bench_expression)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "# $(date -u +%FT%TZ) $(uname -m) $(nproc) cores; git $(cd "$repo" && git rev-parse --short HEAD); steps=$steps"
echo "## training step and inference (d 128 x 4, N 200, F 283, batch 16, attention-pool)"
for r in $(seq 1 "$repeats"); do
    for t in 1 2; do
        "$torch_python" "$repo/bench/expression/torch_expression.py" --bench --batch-size 16 --d-model 128 \
            --layers 4 --heads 4 --ffn 256 --head attention-pool --threads "$t" --steps "$steps" \
            | sed "s/^/repeat $r threads $t pytorch  /"
        RAYON_NUM_THREADS=$t "$example" "$steps" 128 4 4 256 16 attention-pool 200 283 \
            | sed "s/^/repeat $r threads $t luminome /"
    done
done

echo "## luminome-predict over the whole dataset"
for t in 1 2; do
    /usr/bin/time -v "$bin/luminome-predict" --checkpoint "$checkpoint" --dataset "$dataset" \
        -o "$work/predictions.tsv" --threads "$t" --quiet 2> "$work/time.txt"
    n=$(($(wc -l < "$work/predictions.tsv") - 1))
    s=$(awk -F': ' '/Elapsed \(wall/ {k = split($2, x, ":"); v = 0; for (i = 1; i <= k; i++) v = v * 60 + x[i]; print v}' "$work/time.txt")
    rss=$(awk -F': ' '/Maximum resident/ {printf "%.0f MB", $2 / 1024}' "$work/time.txt")
    echo "predict threads $t: $n samples in $s s = $(awk -v n="$n" -v s="$s" 'BEGIN {printf "%.0f", n / s}') samples/s, peak RSS $rss"
done
