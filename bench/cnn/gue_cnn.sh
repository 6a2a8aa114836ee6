#!/usr/bin/env bash
# The dilated residual CNN on the three GUE tasks of docs/results.md ("Classifiers on small,
# motif-driven tasks"): single-nucleotide datasets (as bench/kmer/run.sh makes them, under
# WORK/<task>/{train,dev,test}.safetensors), `luminome-train classify --backbone cnn`, seeds 1-3.
# Two runs at a time, one thread each (a 2-core machine).
#
#   bench/cnn/gue_cnn.sh [work_dir] [seeds] [parallel]     # from the repository root
#
# Knobs (environment):
#   ADAPTERS  adapters to train (default "mean gated"; also cls, max)
#   STRANDS   "rc": reverse-complement augmentation in training and both strands averaged at
#             evaluation (--rc-augment --rc-average; run folders cnn_<adapter>_s<seed>);
#             "fwd": the given strand only (cnn_<adapter>_fwd_s<seed>). Default "rc".
#   TASKS     task:steps pairs (default "mouse_0:2000 tf_0:2500 prom_prom_core_all:2500":
#             about 20, 5 and 3.4 epochs)
#   FLOOR     1 (default): every run also fits the k-mer floor on its split (kmer_floor.tsv,
#             deterministic, the same for every run of a task); 0: --no-kmer-floor.
#   TAG       appended to the run folder's name before _s<seed> (runs of another binary)
#   BIN       the luminome-train to run (default: target/release/luminome-train, built first)
#
# Evaluation every 250 steps, early stop after 4 evaluations without a better dev MCC, the best
# dev-MCC checkpoint scored on test. Results: WORK/<task>/cnn_<adapter>[_fwd]_s<seed>/
# {metrics,test_metrics[,kmer_floor]}.tsv, summarised by bench/cnn/summarize.py.
set -euo pipefail
work=${1:-work/kmer}
seeds=${2:-"1 2 3"}
parallel=${3:-2}
adapters=${ADAPTERS:-"mean gated"}
strands=${STRANDS:-rc}
tasks=${TASKS:-"mouse_0:2000 tf_0:2500 prom_prom_core_all:2500"}
floor=${FLOOR:-1}
tag=${TAG:-}
if [[ -n ${BIN:-} ]]; then
    bin=$(realpath "$BIN")
else
    cargo build --release -q -p luminome-train
    bin=$PWD/target/release/luminome-train
fi
jobs=()
for seed in $seeds; do
    for strand in $strands; do
        for adapter in $adapters; do
            for task in $tasks; do
                jobs+=("${task%%:*} ${task##*:} $adapter $seed $strand")
            done
        done
    done
done
run_one() {
    local task=$1 steps=$2 adapter=$3 seed=$4 strand=$5
    local d="$work/$task" flags=() strand_tag=""
    case $strand in
        rc) flags+=(--rc-augment --rc-average) ;;
        fwd) strand_tag=_fwd ;;
        *) echo "STRANDS: rc or fwd, got $strand" >&2; return 1 ;;
    esac
    [[ $floor == 1 ]] || flags+=(--no-kmer-floor)
    local out="$d/cnn_${adapter}${strand_tag}${tag}_s$seed"
    [[ -f "$out/test_metrics.tsv" && ( $floor == 0 || -f "$out/kmer_floor.tsv" ) ]] && return 0
    rm -rf "$out"
    /usr/bin/time -v "$bin" classify --train "$d/train.safetensors" --dev "$d/dev.safetensors" \
        --test "$d/test.safetensors" -o "$out" --backbone cnn --cnn-channels 64 --cnn-layers 7 \
        --adapter "$adapter" "${flags[@]}" --batch-size 64 --lr 1e-3 --warmup 100 \
        --steps "$steps" --eval-every 250 --patience 4 --metric dev_mcc --seed "$seed" \
        --threads 1 -q 2> "$out.log"
}
export -f run_one
export work bin floor tag
printf '%s\n' "${jobs[@]}" | xargs -P "$parallel" -L 1 bash -c 'run_one "$@"' _
