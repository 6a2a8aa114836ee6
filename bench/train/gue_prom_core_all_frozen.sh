#!/usr/bin/env bash
# The spec's setting for the adapter comparison: the encoder frozen (--freeze-encoder), only the
# adapter trained, on the MLM encoder of bench/train/gue_prom_core_all.sh (run that first).
# Seeds 1-3 (SEEDS), JOBS runs side by side, one thread each; otherwise the main run's settings.
#
#   bench/train/gue_prom_core_all_frozen.sh [work_dir]      # from the repository root
set -euo pipefail
work=${1:-work/gue_prom_core_all}
export work bin=$PWD/target/release
frozen() { # adapter seed
    local out="$work/frozen_$1_s$2"
    [ -f "$out/test_metrics.tsv" ] && return 0
    /usr/bin/time -v "$bin/luminome-train" classify -q --adapter "$1" --freeze-encoder \
        --init "$work/mlm/best.safetensors" --train "$work/train.safetensors" \
        --dev "$work/dev.safetensors" --test "$work/test.safetensors" -o "$out" \
        --steps 2200 --batch-size 64 --lr 5e-4 --warmup 100 --eval-every 200 \
        --patience 4 --metric dev_mcc --seed "$2" --threads 1 2> "$out.log"
}
export -f frozen
for seed in ${SEEDS:-1 2 3}; do
    printf '%s\n' "gated $seed" "mean $seed" "max $seed" "cls $seed"
done | xargs -P "${JOBS:-2}" -L 1 bash -c 'frozen $0 $1'
# The same table as the main run (summarize.py reads ft_<adapter>_s<seed>): a view with those names.
view="$work/frozen_view"
mkdir -p "$view"
for run in "$work"/frozen_*_s*/; do
    run=${run%/}
    ln -sfn "$(realpath "$run")" "$view/ft_${run##*/frozen_}"
    cp "$run.log" "$view/ft_${run##*/frozen_}.log"
done
python3 bench/train/summarize.py "$view"
