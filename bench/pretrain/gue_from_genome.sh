#!/usr/bin/env bash
# docs/results.md, "Transformers from a genome checkpoint": fine-tune the d128 x 4 transformer on
# GUE prom_core_all, tf/0 and mouse/0 (non-overlapping 3-mers) either from the chr22 masked-LM
# checkpoint of bench/pretrain/genome_mlm.sh (`genome`) or from random weights (`scratch`), with
# the mean and gated adapters, for several seeds; best dev-MCC checkpoint scored on test.
#
#   bench/pretrain/gue_from_genome.sh INIT TASK [ADAPTERS] [SEEDS]      # from the repository root
#     INIT: genome | scratch;  TASK: prom_core_all | tf0 | mouse0
#
# Environment: DATA (default ../shared/data/gue), WORK (default work/gue_from_genome), CKPT (the
# genome checkpoint, default work/genome_mlm/chr22/mlm/best.safetensors), BIN (default
# target/release), JOBS runs side by side (default 1), THREADS per run (default 1).
# Steps: prom_core_all 500, tf/0 500, mouse/0 400 (x 64 rows: 0.7, 1.0 and 4.0 epochs) — what the
# 2-core machine of docs/results.md allowed for 3 seeds x 2 adapters x 2 inits; the same for both
# inits, so the comparison between them is fair, and far shorter than the CNN's 2,000-2,500 steps.
set -euo pipefail
init=$1 task=$2
adapters=${3:-"mean gated"}
seeds=${4:-"1 2 3"}
data=${DATA:-../shared/data/gue}
work=${WORK:-work/gue_from_genome}
ckpt=${CKPT:-work/genome_mlm/chr22/mlm/best.safetensors}
bin=${BIN:-target/release}
case $task in
    prom_core_all) src=$data/prom/prom_core_all steps=500 ;;
    tf0) src=$data/tf/0 steps=500 ;;
    mouse0) src=$data/mouse/0 steps=400 ;;
    *) echo "unknown task $task" >&2; exit 2 ;;
esac
mkdir -p "$work/$task"
# The checkpoint's tokenizer: non-overlapping 3-mers with [CLS]/[SEP] (--like reads it from the
# checkpoint, so the task is tokenized to match whatever the checkpoint was trained on).
for s in train dev test; do
    [ -f "$work/$task/$s.safetensors" ] ||
        "$bin/luminome-tokenize" "$src/$s.csv" -q --threads 1 --like "$ckpt" -o "$work/$task/$s.safetensors"
done
case $init in
    genome) init_args=(--init "$ckpt") ;;
    scratch) init_args=(--backbone transformer --d-model 128 --layers 4 --heads 4 --ffn 512) ;;
    *) echo "unknown init $init" >&2; exit 2 ;;
esac
run() { # adapter seed
    local out="$work/$task/${init}_$1_s$2"
    [ -f "$out/test_metrics.tsv" ] && return 0
    rm -rf "$out"
    /usr/bin/time -v "$bin/luminome-train" classify -q --train "$work/$task/train.safetensors" \
        --dev "$work/$task/dev.safetensors" --test "$work/$task/test.safetensors" \
        "${init_args[@]}" --adapter "$1" --seed "$2" --steps "$steps" --batch-size 64 --lr 5e-4 \
        --warmup 50 --weight-decay 0.01 --dropout 0.1 --eval-every 100 --patience 4 \
        --loss-patience 0 --metric dev_mcc --no-kmer-floor --threads "${THREADS:-1}" \
        -o "$out" 2> "$out.log"
}
export -f run
export work task init steps bin
export init_args_str="${init_args[*]}"
for seed in $seeds; do for a in $adapters; do echo "$a $seed"; done; done |
    xargs -P "${JOBS:-1}" -L 1 bash -c 'init_args=($init_args_str); run $0 $1'
