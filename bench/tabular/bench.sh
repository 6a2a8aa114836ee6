#!/usr/bin/env bash
# FT-Transformer speed, PyTorch vs Luminome side by side: the default model of
# `luminome-train tabular` (d 64 x 3 blocks, 4 heads, FFN 128, dropout 0.1) on a breast-cancer-
# shaped batch (64 rows x 30 numeric columns, 2 classes), 1 and 2 threads. Each repeat runs, per
# thread count, PyTorch (attention written out, then through F.scaled_dot_product_attention)
# then Luminome, so all three see the same machine load.
#
#   bench/tabular/bench.sh [steps] [repeats]     # from the repository root; python3 with torch
#   PYTHON=... BENCH_BIN=target/release/examples/bench_tabular BENCH_COLUMNS=30 BENCH_BATCH=64 bench/tabular/bench.sh
set -euo pipefail
steps=${1:-20}
repeats=${2:-3}
cols=${BENCH_COLUMNS:-30}
batch=${BENCH_BATCH:-64}
py=${PYTHON:-python3}
bin=${BENCH_BIN:-target/release/examples/bench_tabular}
[[ -n "${BENCH_BIN:-}" ]] || cargo build --release -q -p luminome-engine --example bench_tabular
echo "# $(date -u +%FT%TZ) $(uname -m) $(nproc) cores; steps=$steps repeats=$repeats columns=$cols batch=$batch; git $(git rev-parse --short HEAD)"
for r in $(seq 1 "$repeats"); do
    for t in 1 2; do
        args=(--bench --threads "$t" --steps "$steps" --columns "$cols" --batch "$batch")
        "$py" bench/tabular/torch_tabular.py "${args[@]}" | sed "s/^/repeat $r threads $t pytorch  /"
        "$py" bench/tabular/torch_tabular.py "${args[@]}" --sdpa | sed "s/^/repeat $r threads $t pytorch-sdpa /"
        RAYON_NUM_THREADS=$t "$bin" "$steps" "$cols" "$batch" | sed "s/^/repeat $r threads $t luminome /"
    done
done
