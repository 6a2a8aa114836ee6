#!/usr/bin/env bash
# Dual encoder speed, PyTorch vs Luminome side by side (docs/benchmarks.md, "Dual encoder"): the
# genomic task's model (shared encoder, 6-mers, d 64 x 1 layer, batch 32 of 122-token queries and
# 497-token passages), standard and genetic attention, 1 and 2 threads. Each repeat runs, per
# thread count and attention, PyTorch (attention written out, then through
# F.scaled_dot_product_attention) then Luminome, so all three see the same machine load.
#
#   bench/dual/bench.sh [steps] [repeats]     # from the repository root; python3 with torch
set -euo pipefail
steps=${1:-10}
repeats=${2:-3}
py=${PYTHON:-python3}
bin=${BENCH_BIN:-target/release/examples/bench_dual}
[[ -n "${BENCH_BIN:-}" ]] || cargo build --release -q -p luminome-engine --example bench_dual
echo "# $(date -u +%FT%TZ) $(uname -m) $(nproc) cores; steps=$steps repeats=$repeats; git $(git rev-parse --short HEAD)"
for r in $(seq 1 "$repeats"); do
    for t in 1 2; do
        for a in standard genetic; do
            "$py" bench/dual/torch_dual.py --bench --threads "$t" --steps "$steps" --attention "$a" \
                | sed "s/^/repeat $r threads $t $a pytorch  /"
            "$py" bench/dual/torch_dual.py --bench --threads "$t" --steps "$steps" --attention "$a" --sdpa \
                | sed "s/^/repeat $r threads $t $a pytorch-sdpa /"
            RAYON_NUM_THREADS=$t "$bin" "$steps" "$a" | sed "s/^/repeat $r threads $t $a luminome /"
        done
    done
done
