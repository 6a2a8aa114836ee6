#!/usr/bin/env bash
# Fine-tuning and inference of the published backbones at their published sizes (random weights
# in the published layout): DNABERT-2 (116.5 M encoder parameters) and the Nucleotide
# Transformer v2 50m, under the mean adapter, Luminome against its PyTorch peer — the authors'
# modeling code (bench/dnabert2/torch_step.py --family) — on the same GPU host, on the GPU and on
# its CPU cores: the training step (batch 32) and inference (batch 128). Run on the GPU host from
# the repository root, from bench/gpu/pack.sh's bundle:
#
#   bench/gpu/published_peer.sh BUNDLE PEER_SRC OUT_DIR
#
# PEER_SRC: a folder holding the authors' packages dnabert2/ (tests/fixtures/dnabert2/README.md)
# and ntv2/ (modeling_esm.py, esm_config.py; tests/fixtures/nt_v2/README.md) and, when the host's
# Python lacks it, einops — carried there, never committed.
# FAMILIES (default "dnabert2 nt_v2"), DEVICES (default "cuda cpu"; every family on the GPU
# first, so a time limit cuts the CPU runs), STEPS (default 30) Luminome steps on the GPU
# (CPU_STEPS, default 8, on the CPU; its metrics.tsv gives examples/s per step: the median over
# steps 6.. is quoted), PEER_STEPS (default 20 on the GPU, 5 on the CPU), LIMIT (default 150 s)
# per command; PEERS=0 runs Luminome alone. DATA_SUFFIX (default none): read
# FAMILY$DATA_SUFFIX/ of the bundle's data for the train and test rows (prepare_data.sh's
# nt_v2/ and dnabert2/ are GUE prom_core_all, 70 bp; its *_1kb/ are 1,000-bp windows, rows of
# ~170-220 tokens).
set -uo pipefail
bundle=$1
src=$(realpath "$2")
out=$(mkdir -p "$3" && cd "$3" && pwd)
work=$(mktemp -d)
tar -C "$work" -xJf "$bundle"
# BIN (optional): another folder of luminome-train and luminome-predict to time in place of the
# bundle's (the previous build, for a before/after on one machine).
bin=${BIN:+$(realpath "$BIN")}
bin=${bin:-$work/bin}
data=$work/data
export PYTHONPATH=$src${PYTHONPATH:+:$PYTHONPATH}
source "$(dirname "${BASH_SOURCE[0]}")/cuda_libs.sh"
families=${FAMILIES:-dnabert2 nt_v2}
for fam in $families; do
    python3 bench/gpu/regrow_checkpoint.py regrow "$data/${fam}_shrunk" "$work/ckpt_$fam"
done
log=$out/published_peer${DATA_SUFFIX:-}.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$log"
echo "cores $(nproc); $(date -u +%FT%TZ); $(python3 -c 'import torch, transformers as t; print("torch", torch.__version__, "transformers", t.__version__)')" | tee -a "$log"

luminome_step() { # family device steps
    local fam=$1 dev=$2 n=$3 run=$work/run_$1_$2 start rc
    timeout "${LIMIT:-150}" "$bin/luminome-train" classify --init "$work/ckpt_$fam" --adapter mean \
        --train "$data/$fam${DATA_SUFFIX:-}/train.safetensors" --batch-size 32 --steps "$n" --eval-every "$n" \
        --warmup 5 --seed 1 --device "$dev" --threads "$(nproc)" -q -o "$run"
    rc=$?
    cp "$run/metrics.tsv" "$out/luminome_${fam}_$dev.metrics.tsv" 2> /dev/null
    python3 - "$run/metrics.tsv" "$fam $dev" "$rc" >> "$log" << 'PY'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if r["examples_per_s"]]
rate = statistics.median(float(r["examples_per_s"]) for r in rows[5:] or rows)
print(f"{sys.argv[2]} luminome f32: {len(rows)} steps (exit {sys.argv[3]}); median "
      f"{rate:.1f} records/s = train_step_ms {32 / rate * 1000:.1f} (batch 32, steps 6..)")
PY
    start=$(date +%s.%N)
    timeout "${LIMIT:-150}" "$bin/luminome-predict" --checkpoint "$run/last.safetensors" \
        --dataset "$data/$fam${DATA_SUFFIX:-}/test.safetensors" --batch-size 128 --device "$dev" \
        --threads "$(nproc)" --quiet -o "$work/pred_${fam}_$dev.tsv"
    rc=$?
    local secs records
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    records=$(($(wc -l < "$work/pred_${fam}_$dev.tsv") - 1))
    echo "$fam $dev luminome predict: $records test records (batch 128) in $secs s whole process (exit $rc)" >> "$log"
}

peer_step() { # family device precision steps
    timeout "${LIMIT:-150}" python3 bench/dnabert2/torch_step.py --src "$src" --family "$1" \
        --checkpoint "$work/ckpt_$1" --dataset "$data/$1${DATA_SUFFIX:-}/train.safetensors" \
        --device "$2" --precision "$3" --steps "$4" --threads "$(nproc)" \
        2> "$out/peer_$1_$2_$3.err" >> "$log" || echo "$1 $2 peer $3: exit $?" >> "$log"
}

for dev in ${DEVICES:-cuda cpu}; do
    for fam in $families; do
        echo "$(date -u +%T) $fam on $dev" >> "$out/stages.log"
        if [[ $dev == cuda ]]; then
            luminome_step "$fam" cuda "${STEPS:-30}"
            [[ ${PEERS:-1} == 0 ]] && continue
            peer_step "$fam" cuda f32 "${PEER_STEPS:-20}"
            peer_step "$fam" cuda bf16 "${PEER_STEPS:-20}"
        else
            luminome_step "$fam" cpu "${CPU_STEPS:-8}"
            [[ ${PEERS:-1} == 0 ]] && continue
            peer_step "$fam" cpu f32 5
        fi
    done
done
cat "$log"
rm -rf "$work"
