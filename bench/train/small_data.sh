#!/usr/bin/env bash
# Evidence for classify's small-data defaults (docs/small-data.md): on two small GUE training
# sets — mouse/0 (6,478 rows) and 2,000 rows drawn from tf/0's training set (seed 17; dev and
# test are tf/0's) — a transformer from scratch on single nucleotides with the standard settings
# (given as flags) against the same command with no size flags (the small-data defaults), and the
# CNN (with its own learning rate); seeds 1-3, mean adapter, the same 1,000 steps of batch 32.
# The standard transformer runs on tf/0-2k only (about 0.6 s a step on one core here, so mouse/0
# would add an hour and a half; STANDARD_ON_MOUSE=1 adds it; STANDARD_SEEDS picks its seeds, by
# default those of the others; STANDARD_SEEDS="" runs none). One thread per run, PARALLEL runs
# at a time (default 2). MODELS picks the other rows (default "small cnn defaults"): "defaults"
# is the command a user types, with nothing but the data, --adapter mean, the seed and one
# thread — on a small single-nucleotide set, the CNN on both strands for 20 epochs at batch 32,
# evaluated every 200 steps (classify's defaults, docs/small-data.md).
#
#   bench/train/small_data.sh [work_dir] [gue_dir] [seeds]      # from the repository root
#
# WORK/mouse_0 must hold the single-nucleotide mouse/0 datasets (bench/kmer/run.sh makes them);
# WORK/tf_0 those of tf/0; this script makes WORK/tf_0_2k. Summary: bench/train/small_data.py.
set -euo pipefail
work=${1:-work/kmer}
gue=${2:-../shared/data/gue}
seeds=${3:-"1 2 3"}
cargo build --release -q -p luminome-tokenize -p luminome-train
bin=$PWD/target/release
mkdir -p "$work/tf_0_2k"
if [[ ! -f "$work/tf_0_2k/train.safetensors" ]]; then
    python3 -c "
import random, sys
rows = open(sys.argv[1]).read().splitlines()
body = rows[1:]
random.Random(17).shuffle(body)
open(sys.argv[2], 'w').write('\n'.join([rows[0]] + body[:2000]) + '\n')
" "$gue/tf/0/train.csv" "$work/tf_0_2k/train.csv"
    "$bin/luminome-tokenize" "$work/tf_0_2k/train.csv" -q --scheme nucleotide -o "$work/tf_0_2k/train.safetensors"
    for s in dev test; do
        ln -sf "../tf_0/$s.safetensors" "$work/tf_0_2k/$s.safetensors"
        ln -sf "../tf_0/$s.index.tsv" "$work/tf_0_2k/$s.index.tsv"
    done
fi
[[ -f "$work/tf_0_2k/kmer/test_metrics.tsv" ]] || "$bin/luminome-train" kmer-linear -q \
    --train "$work/tf_0_2k/train.safetensors" --dev "$work/tf_0_2k/dev.safetensors" \
    --test "$work/tf_0_2k/test.safetensors" -o "$work/tf_0_2k/kmer" --k 1-6 --select-k
standard=(--d-model 128 --layers 4 --ffn 512 --dropout 0.1 --weight-decay 0.01 --patience 0 --loss-patience 0)
jobs=()
for seed in ${STANDARD_SEEDS-$seeds}; do
    jobs+=("tf_0_2k standard $seed")
    if [[ -n "${STANDARD_ON_MOUSE:-}" ]]; then jobs+=("mouse_0 standard $seed"); fi
done
for seed in $seeds; do
    for task in tf_0_2k mouse_0; do
        for model in ${MODELS:-small cnn defaults}; do
            jobs+=("$task $model $seed")
        done
    done
done
run_one() {
    local task=$1 model=$2 seed=$3
    local d="$work/$task"
    local out="$d/small_${model}_s$seed"
    [[ -f "$out/test_metrics.tsv" ]] && return 0
    rm -rf "$out"
    local extra=(--lr 5e-4)
    local budget=(--batch-size 32 --warmup 100 --steps 1000 --eval-every 100)
    case $model in
        standard) extra+=("${standard[@]}") ;;
        # The transformer with the small-data defaults (without --backbone a small
        # single-nucleotide set now gets the CNN).
        small) extra+=(--backbone transformer) ;;
        # The CNN with its own recipe (bench/cnn/gue_cnn.sh).
        cnn) extra=(--lr 1e-3 --backbone cnn --cnn-channels 64 --rc-augment --rc-average) ;;
        # Nothing chosen: what classify does with a small set by itself.
        defaults) extra=(); budget=() ;;
    esac
    /usr/bin/time -v "$bin/luminome-train" classify --train "$d/train.safetensors" \
        --dev "$d/dev.safetensors" --test "$d/test.safetensors" -o "$out" --adapter mean \
        "${budget[@]}" --no-kmer-floor --seed "$seed" --threads 1 "${extra[@]}" 2> "$out.log"
}
export -f run_one
export work bin
export standard_flags="${standard[*]}"
printf '%s\n' "${jobs[@]}" | xargs -P "${PARALLEL:-2}" -L 1 bash -c 'standard=($standard_flags); run_one "$@"' _
