#!/usr/bin/env bash
# Engine benchmark, PyTorch vs Luminome, side by side in one session (docs/benchmarks.md,
# "Training and inference (engine)"). Same model, batch, inputs and thread count on both sides:
# bench/engine/torch_bench.py and tools/luminome-engine/examples/bench_step.rs.
#
#   bench/engine/run_bench.sh [steps] [repeats] [transformer|cnn]   # from the repository root
#
# cnn: the dilated residual CNN backbone (mean adapter) instead of the transformer.
#
# Needs python3 with torch. Each repeat runs, for 1 and 2 threads, PyTorch then Luminome, so
# both see the same machine load; report the medians over repeats.
#
# BENCH_BIN: the bench_step binary to time (default: build this checkout's).
# BENCH_BIN_BEFORE: a second bench_step binary (an older commit's) timed in the same loop,
# right before BENCH_BIN, its lines marked "luminome-before".
set -euo pipefail
steps=${1:-20}
repeats=${2:-3}
backbone=${3:-transformer}
bin=${BENCH_BIN:-target/release/examples/bench_step}
if [[ -z "${BENCH_BIN:-}" ]]; then
    cargo build --release -q -p luminome-engine --example bench_step
fi
echo "# $(date -u +%FT%TZ) $(uname -m) $(nproc) cores; steps=$steps repeats=$repeats backbone=$backbone; git $(git rev-parse --short HEAD)"
for r in $(seq 1 "$repeats"); do
    for t in 1 2; do
        python3 bench/engine/torch_bench.py --threads "$t" --steps "$steps" --backbone "$backbone" | sed "s/^/repeat $r threads $t pytorch  /"
        if [[ "$backbone" == transformer ]]; then
            python3 bench/engine/torch_bench.py --threads "$t" --steps "$steps" --no-attention-dropout | sed "s/^/repeat $r threads $t pytorch-no-attn-dropout  /"
        fi
        if [[ -n "${BENCH_BIN_BEFORE:-}" ]]; then
            RAYON_NUM_THREADS=$t "$BENCH_BIN_BEFORE" "$steps" 0.1 "$backbone" | sed "s/^/repeat $r threads $t luminome-before /"
        fi
        RAYON_NUM_THREADS=$t "$bin" "$steps" 0.1 "$backbone" | sed "s/^/repeat $r threads $t luminome /"
    done
done
