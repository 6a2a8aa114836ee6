#!/usr/bin/env bash
# One GPU session, on the GPU host, from bench/gpu/pack.sh's bundle: unpacks it, runs
# bench/gpu/run_gpu.sh (its stages, STAGES etc. from the environment) within TOTAL seconds
# (default 420), and leaves in OUT_DIR summary.tsv, the run's log and results.tar.gz (every
# stage's files but model checkpoints, except the CUDA-trained classifier's best one).
#
#   bench/gpu/session.sh BUNDLE OUT_DIR            # from the repository root
set -uo pipefail
bundle=$1
out=$(mkdir -p "$2" && cd "$2" && pwd)
work=$(mktemp -d)
tar -C "$work" -xJf "$bundle"
rc=0
timeout "${TOTAL:-420}" bench/gpu/run_gpu.sh "$work/bin" "$work/data" "$work/results" \
    > "$out/log.txt" 2>&1 || rc=$?
echo "run_gpu.sh exit status $rc" >> "$out/log.txt"
cp "$work/results/summary.tsv" "$out/" 2> /dev/null
tar -C "$work" -czf "$out/results.tar.gz" --exclude='bistrand_*/*.safetensors' \
    --exclude='train_*/last*.safetensors' --exclude='train_mlm_*/best.safetensors' \
    --exclude='train_classify_cpu/best.safetensors' --exclude='plantcad_l20' results
ls -la "$out"
exit $rc
