#!/usr/bin/env bash
# Two controls beside the main GUE prom_core_all run (docs/results.md), on its work folder
# (run bench/train/gue_prom_core_all.sh first): the DynamicGated adapter, seed 1,
#   scratch  same fine-tuning settings, no --init (does masked-LM pretraining help?)
#   long     from the same MLM encoder, 4,400 steps ≈ 6 epochs instead of 2,200 (was the main
#            run stopped too early? most of its best checkpoints are at the last step)
# both side by side, one thread each.
#
#   bench/train/gue_prom_core_all_controls.sh [work_dir]      # from the repository root
set -euo pipefail
work=${1:-work/gue_prom_core_all}
bin=$PWD/target/release
source bench/train/gue_finetune_settings.sh
finetune_args "$work" 1
common=("${FT_ARGS[@]}" --adapter gated --threads 1)
/usr/bin/time -v "$bin/luminome-train" classify "${common[@]}" --steps 2200 \
    -o "$work/control_scratch_gated_s1" 2> "$work/control_scratch_gated_s1.log" &
/usr/bin/time -v "$bin/luminome-train" classify "${common[@]}" --steps 4400 \
    --init "$work/mlm/best.safetensors" \
    -o "$work/control_long_gated_s1" 2> "$work/control_long_gated_s1.log" &
wait
for run in control_scratch_gated_s1 control_long_gated_s1; do
    printf '%s\t' "$run"
    awk -F'\t' '$1=="mcc" || $1=="auroc" || $1=="checkpoint_step" {printf "%s=%s ", $1, $2}' \
        "$work/$run/test_metrics.tsv"
    echo
done
