#!/usr/bin/env bash
# One change's CUDA kernels before and after, on one GPU host in one call: cuda_check of the new
# build (session.sh, STAGES=check), then published_peer.sh on 1,000-bp windows and on GUE rows —
# the new build beside its PyTorch peers (the authors' code on the same GPU), then the previous
# build alone (published_peer.sh's BIN) — so every ratio divides figures from one machine.
#
#   bench/gpu/before_after.sh BUNDLE PREV_TAR PEER_SRC OUT_DIR     # on the GPU host, repo root
#
# BUNDLE: bench/gpu/pack.sh's bundle of the new build; PREV_TAR: luminome-train and
# luminome-predict of the previous build, stripped, in one tar.xz; PEER_SRC: as published_peer.sh.
# STEPS (default 20) Luminome steps per run, LIMIT (default 90 s) per command, CHECK_TOTAL
# (default 80 s) for the check. OUT_DIR receives summary.txt (every figure, also printed),
# check_summary.tsv and results.tar.gz (the metrics, logs and peers' errors): few files, as the
# device tool returns at most eight.
set -uo pipefail
bundle=$1
prev_tar=$2
peer=$3
out=$(mkdir -p "$4" && cd "$4" && pwd)
work=$(mktemp -d)
mkdir -p "$work/prev" "$work/res"
tar -C "$work/prev" -xJf "$prev_tar"
stamp() { echo "$(date -u +%T) $*" | tee -a "$work/res/stages.log"; }

stamp check
TOTAL=${CHECK_TOTAL:-80} LIMIT=70 STAGES=check bash bench/gpu/session.sh "$bundle" "$work/res/check"
cp "$work/res/check/summary.tsv" "$out/check_summary.tsv" 2> /dev/null
for suffix in _1kb ""; do
    name=${suffix#_}
    stamp "new build, ${name:-gue} rows, with the PyTorch peers"
    DATA_SUFFIX=$suffix DEVICES=cuda STEPS=${STEPS:-20} LIMIT=${LIMIT:-90} \
        bash bench/gpu/published_peer.sh "$bundle" "$peer" "$work/res/new" > /dev/null
    stamp "previous build, ${name:-gue} rows"
    BIN=$work/prev PEERS=0 DATA_SUFFIX=$suffix DEVICES=cuda STEPS=${STEPS:-20} \
        LIMIT=${LIMIT:-90} bash bench/gpu/published_peer.sh "$bundle" "$peer" "$work/res/prev" > /dev/null
done
stamp done
{
    echo "== check"
    cat "$work/res/check/summary.tsv" 2> /dev/null
    for build in new prev; do
        for f in "$work/res/$build"/published_peer*.txt; do
            echo "== $build build: $(basename "$f")"
            cat "$f"
        done
    done
    echo "== stages"
    cat "$work/res/stages.log"
} | tee "$out/summary.txt"
tar -C "$work/res" -czf "$out/results.tar.gz" .
rm -rf "$work"
