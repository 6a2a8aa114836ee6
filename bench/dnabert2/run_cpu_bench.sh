#!/usr/bin/env bash
# DNABERT-2 fine-tuning on the CPU at its published size: Luminome (`classify --init`, mean
# adapter) against the same model in PyTorch — the authors' bert_layers.py under the same adapter
# (bench/dnabert2/torch_step.py) — batch 32 of GUE prom_core_all rows in the published tokenizer,
# at 1 and 2 threads, one run after the other (docs/benchmarks.md, "DNABERT-2").
#
#   bench/dnabert2/run_cpu_bench.sh [WORK] [CHECKPOINT] [SRC] [PYTHON]
#
# CHECKPOINT (default /work/bench-data/dnabert2_117m_random): bench/dnabert2/make_random_checkpoint.py
# SRC (default /work/venvs/dnabert2-src): the authors' package dnabert2/ (outside the repository)
# PYTHON (default /work/venvs/dnabert2-ref/bin/python): torch (tests/fixtures/dnabert2/README.md)
# Luminome: release build (cargo build --release -p luminome-train -p luminome-tokenize).
# STEPS (default 6): Luminome steps per run (examples/s of steps 3.. from metrics.tsv);
# PEER_STEPS (default 4): PyTorch's timed steps after 3 warm-up ones. Whole-process wall, user,
# sys and peak RSS of every run from /usr/bin/time.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK=${1:-/tmp/dnabert2_bench}
CKPT=${2:-/work/bench-data/dnabert2_117m_random}
SRC=${3:-/work/venvs/dnabert2-src}
PY=${4:-/work/venvs/dnabert2-ref/bin/python}
BIN=$ROOT/target/release
mkdir -p "$WORK"
"$BIN/luminome-tokenize" "$ROOT/test-data/gue_prom_core_all/train.csv" -q --scheme hf \
    --tokenizer "$CKPT" -o "$WORK/train.safetensors"
summary=$WORK/summary-$(date -u +%Y%m%dT%H%M%S).tsv
{
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | grep 'Model name' | sed 's/  */ /g'); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
    printf 'tool\tthreads\tstep_ms\twall_s\tuser_s\tsys_s\tmax_rss_kb\n'
} > "$summary"
for t in 1 2; do
    rm -rf "$WORK/run_t$t"
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/lum_t$t.time" "$BIN/luminome-train" classify \
        --init "$CKPT" --adapter mean --train "$WORK/train.safetensors" --batch-size 32 \
        --steps "${STEPS:-6}" --eval-every 1000 --warmup 2 --seed 1 --threads "$t" -q -o "$WORK/run_t$t"
    step=$(python3 -c "
import csv, statistics, sys
r = [float(x['examples_per_s']) for x in csv.DictReader(open(sys.argv[1]), delimiter='\t')][2:]
print(f'{32 / statistics.median(r) * 1000:.0f}')" "$WORK/run_t$t/metrics.tsv")
    printf 'luminome\t%s\t%s\t%s\n' "$t" "$step" "$(tr ' ' '\t' < "$WORK/lum_t$t.time")" >> "$summary"
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/peer_t$t.time" "$PY" "$ROOT/bench/dnabert2/torch_step.py" \
        --src "$SRC" --checkpoint "$CKPT" --dataset "$WORK/train.safetensors" --threads "$t" \
        --steps "${PEER_STEPS:-4}" --infer-batch 32 2> "$WORK/peer_t$t.err" | tee "$WORK/peer_t$t.txt"
    step=$(sed -n 's/.*train_step_ms median \([0-9.]*\).*/\1/p' "$WORK/peer_t$t.txt")
    printf 'pytorch\t%s\t%s\t%s\n' "$t" "$step" "$(tr ' ' '\t' < "$WORK/peer_t$t.time")" >> "$summary"
done
column -t -s $'\t' "$summary"
