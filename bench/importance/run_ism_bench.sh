#!/usr/bin/env bash
# luminome-importance --method ism vs tangermeme's saturation_mutagenesis on the CPU
# (docs/benchmarks.md, "ISM against tangermeme"): the same checkpoints and records on both sides,
# agreement of the (N, 4, L) Δf arrays first, then whole-process wall / user / sys / peak RSS of
# each side at 1 and 2 threads, one run after the other.
#
#   bench/importance/run_ism_bench.sh [WORK] [PYTHON]
#   CHECK=0 bench/importance/run_ism_bench.sh ...    # timings only (a repeat)
#
# WORK (default /tmp/ism_bench): datasets, checkpoints, outputs, time logs; the timings of each
# run in summary-<UTC time>.tsv.
# PYTHON (default /work/venvs/caduceus-ref/bin/python): torch + tangermeme
# (pip install tangermeme). Luminome: release build (cargo build --release -p luminome-importance
# -p luminome-train -p luminome-tokenize).
#
# Data: the first 600 / 200 / 200 rows of test-data/gue_prom_core_all train / dev / test (70 bp),
# tokenized at --max-length 72. Models (trained here if missing, seed 1, 300 steps):
#   cnn: --backbone cnn --adapter mean (64 channels, first kernel 15, 7 dilated blocks)
#   tfm: --backbone transformer --adapter gated (d 64, 2 layers, 4 heads, FFN 256)
# ISM of the 200 test rows: 200 × (3 × 70 + 1) = 42,200 forward rows of 72 tokens per run, in
# passes of 256 rows on both sides (--ism-rows 256 = tangermeme batch_size 256).
# tangermeme runs with its default fast=True (fastISM is tried when the job would take > 30 s).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${1:-/tmp/ism_bench}"
PY="${2:-/work/venvs/caduceus-ref/bin/python}"
BIN="$ROOT/target/release"
GUE="$ROOT/test-data/gue_prom_core_all"
N=200
SUMMARY="summary-$(date -u +%Y%m%dT%H%M%S).tsv"
mkdir -p "$WORK"
cd "$WORK"

for part in train:600 dev:200 test:200; do
  name="${part%%:*}" rows="${part##*:}"
  if [ ! -f "$name.safetensors" ]; then
    head -n $((rows + 1)) "$GUE/$name.csv" > "$name.csv"
    "$BIN/luminome-tokenize" "$name.csv" --max-length 72 -o "$name.safetensors"
  fi
done
[ -f cnn/best.safetensors ] || "$BIN/luminome-train" classify --train train.safetensors \
  --dev dev.safetensors --backbone cnn --adapter mean --steps 300 --eval-every 100 -o cnn -q
[ -f tfm/best.safetensors ] || "$BIN/luminome-train" classify --train train.safetensors \
  --dev dev.safetensors --backbone transformer --adapter gated --steps 300 --eval-every 100 \
  -o tfm -q

{
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | grep 'Model name' | sed 's/  */ /g')"
  echo "# tangermeme $("$PY" -c 'import tangermeme; print(tangermeme.__version__)'), torch $("$PY" -c 'import torch; print(torch.__version__)')"
} > "$SUMMARY"

# Agreement (not timed): Δf of both sides, and tangermeme's two attribution outputs.
for m in $([ "${CHECK:-1}" = 0 ] || echo cnn tfm); do
  "$BIN/luminome-importance" --checkpoint $m/best.safetensors --dataset test.safetensors \
    --method ism --records $N -o $m.check.tsv --npz $m.check.npz -q
  "$PY" "$ROOT/bench/importance/ism_tangermeme.py" --checkpoint $m/best.safetensors \
    --dataset test.safetensors --limit $N --compare $m.check.npz --attributions \
    2>&1 | tee $m.agreement.txt
done

printf 'model\tthreads\ttool\twall_s\tuser_s\tsys_s\tmax_rss_kb\tload_1min_before\n' >> "$SUMMARY"
for m in cnn tfm; do
  for t in 1 2; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "%e %U %S %M" -o $m.t$t.luminome.time \
      "$BIN/luminome-importance" --checkpoint $m/best.safetensors --dataset test.safetensors \
      --method ism --records $N --ism-rows 256 --threads $t -o $m.t$t.tsv --npz $m.t$t.npz -q
    printf '%s\t%s\tluminome\t%s\t%s\n' $m $t "$(tr ' ' '\t' < $m.t$t.luminome.time)" "$load" \
      >> "$SUMMARY"
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "%e %U %S %M" -o $m.t$t.tangermeme.time \
      "$PY" "$ROOT/bench/importance/ism_tangermeme.py" --checkpoint $m/best.safetensors \
      --dataset test.safetensors --limit $N --batch-size 256 --threads $t -o $m.t$t.tangermeme.npz \
      2>&1 | tee $m.t$t.tangermeme.log
    printf '%s\t%s\ttangermeme\t%s\t%s\n' $m $t "$(tr ' ' '\t' < $m.t$t.tangermeme.time)" "$load" \
      >> "$SUMMARY"
  done
done
column -t -s $'\t' "$SUMMARY"
