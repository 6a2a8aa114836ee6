#!/usr/bin/env bash
# Masked-accessibility pretraining vs the original masked-region objective on chr22 tiles
# (docs/expression.md, "Pretraining that learns").
#
#   bench/expression/pretrain/run.sh OUT_DIR [EXPR_DIR]
#
# EXPR_DIR holds genes.safetensors and tiles.safetensors as built by bench/expression/run.sh
# (default /work/bench-data/expr; read only). For each split (held-out genes; leave GM12878 out)
# and seed 1-3: region-pretrain with --target all (today's objective) and --target accessibility,
# the small encoder of bench/expression/run.sh, 600 steps; the no-deep-learning references
# (references.py) on each split; then expression fine-tuning (TSS-region head, held-out genes,
# 300 steps) from scratch, from the --target all encoder and from the --target accessibility
# encoder, scored with luminome-predict --subset test; summary printed at the end (summarize.py).
# One job at a time, one thread each. Needs release binaries and a python with numpy, safetensors
# and scikit-learn ($PYTHON, default python3). Stages: $STAGES (default all three), seeds: $SEEDS.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
expr="${2:-/work/bench-data/expr}"
bin="${BIN:-$repo/target/release}"
PRESET=(--d-model 32 --layers 1 --heads 4 --ffn 64 --dropout 0.3)
common=(--batch-size 16 --lr 1e-3 --warmup 25 --weight-decay 0.1 --eval-every 25 --threads 1 --quiet)
PRE_STEPS=${PRE_STEPS:-600}
STEPS=${STEPS:-300}
SEEDS=${SEEDS:-"1 2 3"}
python="${PYTHON:-python3}"
STAGES=${STAGES:-"pretrain references finetune"}

split_args() {
    case $1 in
        genes) echo "--holdout genes --blocks 5" ;;
        loco) echo "--holdout cell-type --test-cell-type GM12878 --blocks 5" ;;
    esac
}

pretrain() {
    local target=$1 split=$2 seed=$3 name="pre.$1.$2.seed$3"
    [ -f "$out/$name/best.safetensors" ] && return 0
    # shellcheck disable=SC2046
    "$bin/luminome-train" region-pretrain --train "$expr/tiles.safetensors" $(split_args "$split") \
        --target "$target" "${PRESET[@]}" "${common[@]}" --steps "$PRE_STEPS" --seed "$seed" \
        -o "$out/$name" > "$out/$name.log" 2>&1
}

finetune() {
    local init=$1 seed=$2 name="expr.genes.tss-region.$1.seed$2"
    [ -f "$out/$name/test_metrics.tsv" ] && return 0
    local from=("${PRESET[@]}")
    [ "$init" != scratch ] && from=(--init "$out/pre.$init.genes.seed$seed/best.safetensors")
    "$bin/luminome-train" expression --train "$expr/genes.safetensors" --holdout genes --blocks 5 \
        --head tss-region "${from[@]}" "${common[@]}" --steps "$STEPS" --seed "$seed" \
        -o "$out/$name" > "$out/$name.log" 2>&1
    "$bin/luminome-predict" --checkpoint "$out/$name/best.safetensors" \
        --dataset "$expr/genes.safetensors" --subset test -o "$out/$name/test_predictions.tsv" \
        --metrics "$out/$name/test_metrics.tsv" --threads 1 --quiet
}

for stage in $STAGES; do
    case $stage in
        pretrain)
            for seed in $SEEDS; do
                for split in genes loco; do
                    for target in accessibility all; do
                        pretrain "$target" "$split" "$seed"
                    done
                done
            done
            ;;
        references)
            for split in genes loco; do
                [ -f "$out/references.$split.tsv" ] || "$python" "$here/references.py" \
                    "$expr/tiles.safetensors" "$expr/tiles.samples.tsv" \
                    "$out/pre.accessibility.$split.seed1/best.config.json" \
                    > "$out/references.$split.tsv"
            done
            ;;
        finetune)
            for seed in $SEEDS; do
                for init in scratch accessibility all; do
                    finetune "$init" "$seed"
                done
            done
            ;;
    esac
done
"$python" "$here/summarize.py" "$out"
