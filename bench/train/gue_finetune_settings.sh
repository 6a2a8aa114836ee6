# Fine-tuning settings shared by the GUE prom_core_all scripts (sourced, not run): the main run,
# its controls and the frozen-encoder comparison differ only in what they add to these.
#   finetune_args WORK SEED  ->  the array FT_ARGS
finetune_args() {
    FT_ARGS=(--train "$1/train.safetensors" --dev "$1/dev.safetensors" --test "$1/test.safetensors"
        --batch-size 64 --lr 5e-4 --warmup 100 --eval-every 200 --patience 4 --metric dev_mcc
        --seed "$2" -q)
}
