#!/usr/bin/env bash
# Nucleotide Transformer v2 on the CPU at its smallest published size (50m-multi-species, random
# weights of the published shapes): Luminome (`classify --init`, mean adapter; `luminome-predict`)
# against the same model in PyTorch — the authors' modeling_esm.py under the same adapter
# (bench/dnabert2/torch_step.py --family nt_v2) — batch 32 of GUE prom_core_all rows in the
# published 6-mer tokenizer, at 1 and 2 threads, one run after the other (docs/benchmarks.md,
# "Nucleotide Transformer v2").
#
#   bench/nt_v2/run_cpu_bench.sh [WORK] [CHECKPOINT] [SRC] [PYTHON]
#
# CHECKPOINT (default /work/bench-data/nt_v2_50m_random): bench/nt_v2/make_random_checkpoint.py
# SRC (default /work/venvs/ntv2-src): the authors' package ntv2/ (outside the repository)
# PYTHON (default /work/venvs/dnabert2-ref/bin/python): torch (tests/fixtures/nt_v2/README.md)
# Luminome: release build (cargo build --release -p luminome-train -p luminome-tokenize
# -p luminome-predict). STEPS (default 6): Luminome steps per run (examples/s of steps 3.. from
# metrics.tsv); PEER_STEPS (default 4): PyTorch's timed steps after 3 warm-up ones. Inference:
# luminome-predict over the 500 test rows of test-data (whole process, batch 32) against PyTorch's median
# eval batch of 32. Whole-process wall, user, sys and peak RSS of every run from /usr/bin/time.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK=${1:-/tmp/nt_v2_bench}
CKPT=${2:-/work/bench-data/nt_v2_50m_random}
SRC=${3:-/work/venvs/ntv2-src}
PY=${4:-/work/venvs/dnabert2-ref/bin/python}
BIN=$ROOT/target/release
mkdir -p "$WORK"
for s in train test; do
    "$BIN/luminome-tokenize" "$ROOT/test-data/gue_prom_core_all/$s.csv" -q --scheme hf \
        --tokenizer "$CKPT" -o "$WORK/$s.safetensors"
done
summary=$WORK/summary-$(date -u +%Y%m%dT%H%M%S).tsv
{
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | grep 'Model name' | sed 's/  */ /g'); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
    printf 'tool\tthreads\tstep_ms\tinfer_records_s\twall_s\tuser_s\tsys_s\tmax_rss_kb\n'
} > "$summary"
tested=$(($(wc -l < "$ROOT/test-data/gue_prom_core_all/test.csv") - 1))
for t in 1 2; do
    rm -rf "$WORK/run_t$t"
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/lum_t$t.time" "$BIN/luminome-train" classify \
        --init "$CKPT" --adapter mean --train "$WORK/train.safetensors" --batch-size 32 \
        --steps "${STEPS:-6}" --eval-every 1000 --warmup 2 --seed 1 --threads "$t" -q -o "$WORK/run_t$t"
    step=$(python3 -c "
import csv, statistics, sys
r = [float(x['examples_per_s']) for x in csv.DictReader(open(sys.argv[1]), delimiter='\t')][2:]
print(f'{32 / statistics.median(r) * 1000:.0f}')" "$WORK/run_t$t/metrics.tsv")
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/pred_t$t.time" "$BIN/luminome-predict" \
        --checkpoint "$WORK/run_t$t/last.safetensors" --dataset "$WORK/test.safetensors" \
        --batch-size 32 --threads "$t" -q -o "$WORK/pred_t$t.tsv"
    rate=$(awk -v n="$tested" '{printf "%.0f", n / $1}' "$WORK/pred_t$t.time")
    printf 'luminome-train\t%s\t%s\t-\t%s\n' "$t" "$step" "$(tr ' ' '\t' < "$WORK/lum_t$t.time")" >> "$summary"
    printf 'luminome-predict\t%s\t-\t%s\t%s\n' "$t" "$rate" "$(tr ' ' '\t' < "$WORK/pred_t$t.time")" >> "$summary"
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/peer_t$t.time" "$PY" "$ROOT/bench/dnabert2/torch_step.py" \
        --family nt_v2 --src "$SRC" --checkpoint "$CKPT" --dataset "$WORK/train.safetensors" \
        --threads "$t" --steps "${PEER_STEPS:-4}" --infer-batch 32 2> "$WORK/peer_t$t.err" | tee "$WORK/peer_t$t.txt"
    step=$(sed -n 's/.*train_step_ms median \([0-9.]*\).*/\1/p' "$WORK/peer_t$t.txt")
    rate=$(sed -n 's/.*inference_batch_ms median [0-9.]* (batch 32, \([0-9]*\) records.*/\1/p' "$WORK/peer_t$t.txt")
    printf 'pytorch\t%s\t%s\t%s\t%s\n' "$t" "$step" "$rate" "$(tr ' ' '\t' < "$WORK/peer_t$t.time")" >> "$summary"
done
column -t -s $'\t' "$summary"
