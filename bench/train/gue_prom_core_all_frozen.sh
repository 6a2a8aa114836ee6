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
    source bench/train/gue_finetune_settings.sh
    finetune_args "$work" "$2"
    /usr/bin/time -v "$bin/luminome-train" classify "${FT_ARGS[@]}" --adapter "$1" \
        --freeze-encoder --init "$work/mlm/best.safetensors" --steps 2200 --threads 1 \
        -o "$out" 2> "$out.log"
}
export -f frozen
for seed in ${SEEDS:-1 2 3}; do
    printf '%s\n' "gated $seed" "mean $seed" "max $seed" "cls $seed"
done | xargs -P "${JOBS:-2}" -L 1 bash -c 'frozen $0 $1'
python3 bench/train/summarize.py "$work" frozen
