#!/usr/bin/env bash
# docs/results.md, "The four adapters on a Nucleotide Transformer v2 pretrained here": fine-tune
# the NT-v2-architecture encoder (d128 x 4, the published 6-mer vocabulary) on GUE
# prom_core_all under each adapter, either from the chr22 masked-LM checkpoint of
# bench/pretrain/nt_v2_genome_mlm.sh (`genome`) or from random weights of the same shapes
# (`scratch`), several seeds; best dev-MCC checkpoint scored on test.
#
#   bench/pretrain/nt_v2_prom_adapters.sh INIT [ADAPTERS] [SEEDS]     # from the repository root
#     INIT: genome | scratch
#
# Environment: DATA (default ../shared/data/gue/prom/prom_core_all), WORK (default
# work/nt_v2_prom), CKPT (default work/nt_v2_mlm/chr22/mlm/best.safetensors), BIN (default
# target/release), JOBS side by side (default 1), THREADS per run (default 1), STEPS (default
# 600 x 64 rows = 0.8 epoch: what the 2-core machine allowed for 18 runs beside the pretraining;
# the same for both inits, so the comparison between them is fair).
set -euo pipefail
init=$1
adapters=${2:-"cls mean max gated"}
seeds=${3:-"1 2 3"}
data=${DATA:-../shared/data/gue/prom/prom_core_all}
work=${WORK:-work/nt_v2_prom}
ckpt=${CKPT:-work/nt_v2_mlm/chr22/mlm/best.safetensors}
bin=${BIN:-target/release}
vocab=tools/luminome-engine/tests/fixtures/nt_v2/tiny
mkdir -p "$work"
# The published tokenizer: <cls> + 6-mers from the left + single bases for the rest.
for s in train dev test; do
    [ -f "$work/$s.safetensors" ] ||
        "$bin/luminome-tokenize" "$data/$s.csv" -q --threads 1 --scheme hf --tokenizer "$vocab" \
            -o "$work/$s.safetensors"
done
case $init in
    genome) init_args="--init $ckpt" ;;
    scratch) init_args="--backbone nt-v2 --d-model 128 --layers 4 --heads 4 --ffn 512" ;;
    *) echo "unknown init $init" >&2; exit 2 ;;
esac
run() { # adapter seed
    local out="$work/${init}_$1_s$2"
    [ -f "$out/test_metrics.tsv" ] && return 0
    rm -rf "$out"
    # shellcheck disable=SC2086  # init_args is a list of flags
    /usr/bin/time -v "$bin/luminome-train" classify -q --train "$work/train.safetensors" \
        --dev "$work/dev.safetensors" --test "$work/test.safetensors" $init_args \
        --adapter "$1" --seed "$2" --steps "${STEPS:-600}" --batch-size 64 --lr 5e-4 \
        --warmup 50 --weight-decay 0.01 --dropout 0.1 --eval-every 100 --patience 4 \
        --loss-patience 0 --metric dev_mcc --threads "${THREADS:-1}" -o "$out" 2> "$out.log"
}
export -f run
export work init init_args bin
# shellcheck disable=SC2016  # $0 and $1 expand in the bash that xargs starts
for seed in $seeds; do for a in $adapters; do echo "$a $seed"; done; done |
    xargs -P "${JOBS:-1}" -L 1 bash -c 'run "$0" "$1"'
