#!/usr/bin/env bash
# luminome-importance --method deepliftshap vs tangermeme's deep_lift_shap on the CPU
# (docs/benchmarks.md, "DeepLIFT/SHAP against tangermeme"): the same checkpoints and records on
# both sides, agreement on Luminome's references first, then whole-process wall / user / sys /
# peak RSS of each side at 1 and 2 threads, one run after the other.
#
#   bench/importance/run_deeplift_bench.sh [WORK] [PYTHON]
#   CHECK=0 bench/importance/run_deeplift_bench.sh ...    # timings only (a repeat)
#
# WORK (default /tmp/deeplift_bench): datasets, checkpoints, outputs, time logs; the timings of
# each run in summary-<UTC time>.tsv.
# PYTHON (default /work/venvs/ref/bin/python): torch + tangermeme (pip install tangermeme).
# Luminome: release build (cargo build --release -p luminome-importance -p luminome-train
# -p luminome-tokenize).
#
# Data: the first 600 / 200 / 200 rows of test-data/gue_prom_core_all train / dev / test (70 bp),
# tokenized at --max-length 72. Models (trained here if missing, seed 1, 300 steps):
#   cnn: --backbone cnn --adapter mean (64 channels, first kernel 15, 7 dilated blocks)
#   gated: the same CNN under the gated adapter
# DeepLIFT/SHAP of the 200 test rows against 20 dinucleotide shuffles each: 4,000 pairs, 8,000
# rows of 72 tokens forward and backward per run; Luminome runs one record's 20 pairs per pass,
# tangermeme batch_size 20 (pairs) — the same 40 rows per pass. Each side draws its own
# shuffles in the timed runs (both count that cost).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${1:-/tmp/deeplift_bench}"
PY="${2:-/work/venvs/ref/bin/python}"
BIN="$ROOT/target/release"
GUE="$ROOT/test-data/gue_prom_core_all"
N=200
S=20
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
for m in cnn:mean gated:gated; do
  name="${m%%:*}" adapter="${m##*:}"
  [ -f $name/best.safetensors ] || "$BIN/luminome-train" classify --train train.safetensors \
    --dev dev.safetensors --backbone cnn --adapter $adapter --steps 300 --eval-every 100 \
    -o $name -q
done

{
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | grep 'Model name' | sed 's/  */ /g')"
  echo "# tangermeme $("$PY" -c 'import tangermeme; print(tangermeme.__version__)'), torch $("$PY" -c 'import torch; print(torch.__version__)')"
} > "$SUMMARY"

# Agreement (not timed): tangermeme given the references Luminome drew.
for m in $([ "${CHECK:-1}" = 0 ] || echo cnn gated); do
  "$BIN/luminome-importance" --checkpoint $m/best.safetensors --dataset test.safetensors \
    --method deepliftshap --shuffles $S --records $N -o $m.check.tsv --npz $m.check.npz
  "$PY" "$ROOT/bench/importance/deeplift_tangermeme.py" --checkpoint $m/best.safetensors \
    --dataset test.safetensors --limit $N --batch-size $S --compare $m.check.npz \
    2>&1 | grep -v -i warn | tee $m.agreement.txt
done

printf 'model\tthreads\ttool\twall_s\tuser_s\tsys_s\tmax_rss_kb\tload_1min_before\n' >> "$SUMMARY"
for m in cnn gated; do
  for t in 1 2; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "%e %U %S %M" -o $m.t$t.luminome.time \
      "$BIN/luminome-importance" --checkpoint $m/best.safetensors --dataset test.safetensors \
      --method deepliftshap --shuffles $S --records $N --threads $t -o $m.t$t.tsv \
      --npz $m.t$t.npz -q
    printf '%s\t%s\tluminome\t%s\t%s\n' $m $t "$(tr ' ' '\t' < $m.t$t.luminome.time)" "$load" \
      >> "$SUMMARY"
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "%e %U %S %M" -o $m.t$t.tangermeme.time \
      "$PY" "$ROOT/bench/importance/deeplift_tangermeme.py" --checkpoint $m/best.safetensors \
      --dataset test.safetensors --limit $N --shuffles $S --batch-size $S --threads $t \
      -o $m.t$t.tangermeme.npz 2>&1 | grep -v -i warn | tee $m.t$t.tangermeme.log
    printf '%s\t%s\ttangermeme\t%s\t%s\n' $m $t "$(tr ' ' '\t' < $m.t$t.tangermeme.time)" "$load" \
      >> "$SUMMARY"
  done
done
column -t -s $'\t' "$SUMMARY"
