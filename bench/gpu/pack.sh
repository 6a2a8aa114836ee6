#!/usr/bin/env bash
# Packs what a GPU host needs for bench/gpu/run_gpu.sh into one compressed file, small enough to
# travel with the working tree (the CUDA libraries stay behind: the GPU host has its own).
#
#   bench/gpu/pack.sh BIN_DIR DATA_DIR BUNDLE     # from the repository root
#
# BIN_DIR: build_cuda.sh's output; DATA_DIR: prepare_data.sh's. BUNDLE (.tar.xz) holds bin/
# (luminome-train, luminome-predict, luminome-importance, bench_step, cuda_check, stripped) and
# data/.
# bench/gpu/session.sh unpacks and runs it there.
set -euo pipefail
bin=$1
data=$2
bundle=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$(dirname "$bundle")"
for b in luminome-train luminome-predict luminome-importance bench_step cuda_check; do
    strip -o "$tmp/bin/$b" "$bin/$b"
done
cp -r "$data" "$tmp/data"
tar -C "$tmp" -cJf "$bundle" bin data
ls -la "$bundle"
