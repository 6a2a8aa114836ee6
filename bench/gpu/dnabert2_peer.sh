#!/usr/bin/env bash
# DNABERT-2 fine-tuning at the published size (116.5 M encoder parameters, random weights in the
# published layout) under the mean adapter, Luminome against its PyTorch peer — the authors'
# bert_layers.py (bench/dnabert2/torch_step.py) — on the same GPU host, on the GPU and on its
# CPU cores: the training step (batch 32) and inference (batch 128). Run on the GPU host from the
# repository root, from bench/gpu/pack.sh's bundle:
#
#   bench/gpu/dnabert2_peer.sh BUNDLE PEER_SRC OUT_DIR
#
# PEER_SRC: a folder holding the authors' package dnabert2/ (tests/fixtures/dnabert2/README.md)
# and, when the host's Python lacks it, einops — carried there, never committed.
# STEPS (default 30) Luminome steps per device (its metrics.tsv gives examples/s per step: the
# median over steps 6.. is quoted), PEER_STEPS (default 20 on the GPU, 5 on the CPU).
set -uo pipefail
bundle=$1
src=$(realpath "$2")
out=$(mkdir -p "$3" && cd "$3" && pwd)
work=$(mktemp -d)
tar -C "$work" -xJf "$bundle"
bin=$work/bin
data=$work/data
export PYTHONPATH=$src${PYTHONPATH:+:$PYTHONPATH}
source "$(dirname "${BASH_SOURCE[0]}")/cuda_libs.sh"
python3 bench/gpu/regrow_checkpoint.py regrow "$data/dnabert2_shrunk" "$work/db2"
log=$out/dnabert2_peer.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$log"
echo "cores $(nproc); $(date -u +%FT%TZ)" | tee -a "$log"
steps=${STEPS:-30}
for dev in cuda cpu; do
    n=$steps
    [[ $dev == cpu ]] && n=${CPU_STEPS:-8}
    start=$(date +%s.%N)
    timeout "${LIMIT:-150}" "$bin/luminome-train" classify --init "$work/db2" --adapter mean \
        --train "$data/dnabert2/train.safetensors" --batch-size 32 --steps "$n" --eval-every "$n" \
        --warmup 5 --seed 1 --device "$dev" --threads "$(nproc)" -q -o "$work/run_$dev"
    rc=$?
    cp "$work/run_$dev/metrics.tsv" "$out/luminome_$dev.metrics.tsv" 2> /dev/null
    python3 - "$work/run_$dev/metrics.tsv" "$dev" "$rc" "$start" >> "$log" << 'EOF'
import csv, statistics, sys, time
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if r["examples_per_s"]]
rate = statistics.median(float(r["examples_per_s"]) for r in rows[5:] or rows)
print(f"dnabert2 luminome f32 {sys.argv[2]}: {len(rows)} steps (exit {sys.argv[3]}); median "
      f"{rate:.1f} records/s = train_step_ms {32 / rate * 1000:.1f} (batch 32, steps 6..)")
EOF
    start=$(date +%s.%N)
    timeout "${LIMIT:-150}" "$bin/luminome-predict" --checkpoint "$work/run_$dev/last.safetensors" \
        --dataset "$data/dnabert2/test.safetensors" --batch-size 128 --device "$dev" \
        --threads "$(nproc)" --quiet -o "$work/pred_$dev.tsv"
    rc=$?
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    echo "dnabert2 luminome predict $dev: $(($(wc -l < "$work/pred_$dev.tsv") - 1)) test records (batch 128) in $secs s whole process (exit $rc)" >> "$log"
    for precision in f32 bf16; do
        [[ $dev == cpu && $precision == bf16 ]] && continue
        ps=${PEER_STEPS:-20}
        [[ $dev == cpu ]] && ps=5
        timeout "${LIMIT:-150}" python3 bench/dnabert2/torch_step.py --src "$src" \
            --checkpoint "$work/db2" --dataset "$data/dnabert2/train.safetensors" \
            --device "$dev" --precision "$precision" --steps "$ps" --threads "$(nproc)" \
            2> "$out/peer_${dev}_$precision.err" >> "$log" || echo "peer $dev $precision: exit $?" >> "$log"
    done
done
cat "$log"
rm -rf "$work"
