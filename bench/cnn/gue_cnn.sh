#!/usr/bin/env bash
# The dilated residual CNN on the three GUE tasks of docs/results.md ("Classifiers on small,
# motif-driven tasks"): single-nucleotide datasets (as bench/kmer/run.sh makes them, under
# WORK/<task>/{train,dev,test}.safetensors), `luminome-train classify --backbone cnn` with
# reverse-complement augmentation and RC-averaged prediction, the mean and gated adapters,
# seeds 1-3. Two runs at a time, one thread each (a 2-core machine); every run also fits the
# k-mer floor on the same split (kmer_floor.tsv).
#
#   bench/cnn/gue_cnn.sh [work_dir] [seeds] [parallel]     # from the repository root
#
# Steps per task: mouse/0 2000 (about 20 epochs of its 6,478 rows), tf/0 and prom_core_all 2500
# (5 and 3.4 epochs); evaluation every 250 steps, early stop after 4 evaluations without a better
# dev MCC. Results: WORK/<task>/cnn_<adapter>_s<seed>/{metrics,test_metrics,kmer_floor}.tsv,
# summarised by bench/cnn/summarize.sh.
set -euo pipefail
work=${1:-work/kmer}
seeds=${2:-"1 2 3"}
parallel=${3:-2}
cargo build --release -q -p luminome-train
bin=$PWD/target/release/luminome-train
jobs=()
for seed in $seeds; do
    for adapter in mean gated; do
        for task in mouse_0:2000 tf_0:2500 prom_prom_core_all:2500; do
            jobs+=("${task%%:*} ${task##*:} $adapter $seed")
        done
    done
done
run_one() {
    local task=$1 steps=$2 adapter=$3 seed=$4
    local d="$work/$task"
    local out="$d/cnn_${adapter}_s$seed"
    [[ -f "$out/kmer_floor.tsv" ]] && return 0   # written last
    rm -rf "$out"
    /usr/bin/time -v "$bin" classify --train "$d/train.safetensors" --dev "$d/dev.safetensors" \
        --test "$d/test.safetensors" -o "$out" --backbone cnn --cnn-channels 64 --cnn-layers 7 \
        --adapter "$adapter" --rc-augment --rc-average --batch-size 64 --lr 1e-3 --warmup 100 \
        --steps "$steps" --eval-every 250 --patience 4 --metric dev_mcc --seed "$seed" \
        --threads 1 -q 2> "$out.log"
}
export -f run_one
export work bin
printf '%s\n' "${jobs[@]}" | xargs -P "$parallel" -L 1 bash -c 'run_one "$@"' _
