#!/usr/bin/env bash
# Bi-strand masked LM on real genomes (docs/results.md, "Bi-strand masked LM"): E. coli (train the
# first 85 % of the chromosome, dev the next 5 %, test the last 10 %) and the C. elegans slice
# (train I-IV, dev V, test X), with and without cross-attention, seeds 1-3; each model scored on
# its test windows by luminome-predict (masked-base accuracy and perplexity per strand), and the
# unigram and 5-mer-context baselines on the same windows and masked positions.
#
#   bench/bistrand/run_mlm.sh OUT_DIR [JOBS]
#
# Needs release binaries (cargo build --release), python3 with numpy and safetensors, and
# ../shared/data. JOBS runs at a time, one thread each (default 2).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
jobs="${2:-2}"
bin="${BIN:-$repo/target/release}"
data="${DATA:-$repo/../shared/data}"
python3 "$repo/bench/bistrand/prepare.py" "$data" "$out/data"

window=256
for g in ecoli celegans; do
    for split in train dev test; do
        # Fixed masks for dev and test (seeds 2, 3); training re-draws them every batch.
        seed=$([ "$split" = train ] && echo 1 || ([ "$split" = dev ] && echo 2 || echo 3))
        [ -f "$out/${g}_$split.safetensors" ] || "$bin/luminome-mask-pairs" --quiet \
            --fasta "$out/data/${g}_$split.fa" --window $window --seed "$seed" \
            -o "$out/${g}_$split.safetensors"
    done
done

# The model: d 64 x 2 layers per strand (d_state 16, expand 2, conv 4), 4 cross-attention heads;
# 1,200 steps of 16 windows (dynamic masking, 15 %), lr 2e-3 with 100 warmup steps, the best of
# six dev evaluations kept. STEPS_ECOLI=N trains the E. coli models N steps instead (dev every
# N/6); docs/results.md says which was run.
train() {
    local g=$1 cross=$2 seed=$3
    local name="$g.$cross.seed$seed"
    local flag=""
    [ "$cross" = nocross ] && flag="--no-cross-attention"
    local steps=1200
    [ "$g" = ecoli ] && steps=${STEPS_ECOLI:-1200}
    [ -f "$out/$name/test_metrics.tsv" ] && return 0
    "$bin/luminome-train" bistrand --train "$out/${g}_train.safetensors" --dev "$out/${g}_dev.safetensors" \
        -o "$out/$name" --d-model 64 --layers 2 --batch-size 16 --steps "$steps" --lr 2e-3 --warmup 100 \
        --eval-every $((steps / 6)) --eval-records 1024 --dynamic-masking --seed "$seed" --threads 1 $flag \
        > "$out/$name.log" 2>&1
    "$bin/luminome-predict" --checkpoint "$out/$name/best.safetensors" --dataset "$out/${g}_test.safetensors" \
        -o "$out/$name/test_predictions.tsv" --metrics "$out/$name/test_metrics.tsv" --threads 1 --quiet
}

pids=()
for g in celegans ecoli; do
    for seed in 1 2 3; do
        for cross in cross nocross; do
            train "$g" "$cross" "$seed" &
            pids+=($!)
            if [ "${#pids[@]}" -ge "$jobs" ]; then
                wait "${pids[0]}"
                pids=("${pids[@]:1}")
            fi
        done
    done
done
wait

for g in ecoli celegans; do
    python3 "$repo/bench/bistrand/baselines.py" "$out/${g}_train.safetensors" "$out/${g}_test.safetensors" \
        > "$out/$g.baselines.tsv"
done
python3 "$repo/bench/bistrand/summarize_mlm.py" "$out"
