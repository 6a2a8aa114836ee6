#!/usr/bin/env bash
# How bench/expression/run.sh's model size and regularisation were chosen: a few settings trained
# on the held-out-genes split (5 chromosome blocks), seed 1, judged by dev Pearson at each
# evaluation (the test block is not looked at). Prints "name step:dev_pearson ...".
#
#   bench/expression/sweep.sh OUT_DIR GENES.safetensors      (the genes dataset of run.sh)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
data=$2
bin="${BIN:-$repo/target/release}"
run() {
    local name=$1
    shift
    [ -f "$out/$name/metrics.tsv" ] || "$bin/luminome-train" expression --train "$data" --holdout genes \
        --blocks 5 --batch-size 16 --threads 1 --quiet --seed 1 -o "$out/$name" "$@" > "$out/$name.log" 2>&1
    echo "$name $(awk -F'\t' 'NR == 1 {for (i = 1; i <= NF; i++) h[$i] = i}
        NR > 1 && $h["dev_pearson"] != "" {printf "%s:%.3f ", $1, $h["dev_pearson"]}' "$out/$name/metrics.tsv")"
}
# The first setting tried (d 64 x 2, dropout 0.1, weight decay 0.05, 600 steps).
for head in tss-region attention-pool; do
    run "${head}_d64" --head "$head" --d-model 64 --layers 2 --heads 4 --ffn 128 --dropout 0.1 \
        --weight-decay 0.05 --lr 1e-3 --warmup 50 --eval-every 100 --steps 600
done
# Smaller and more regularised (what run.sh uses, there for 300 steps).
small=(--d-model 32 --layers 1 --heads 4 --ffn 64 --dropout 0.3 --weight-decay 0.1 --lr 1e-3 --warmup 50 --eval-every 50 --steps 400)
run tss-region_d32 --head tss-region "${small[@]}"
run attention-pool_d32 --head attention-pool "${small[@]}"
run tss-region_d32_mse --head tss-region --loss mse "${small[@]}"
