#!/usr/bin/env bash
# The adapter spec's table (specs/adapters-dynamic-gated.md, "prom_core_all": accuracy, AUROC,
# F1, MCC of the four adapters) on a published foundation model, for a user who has its weights:
# tokenize GUE's train/dev/test with the model's own tokenizer, fine-tune each adapter for SEEDS
# seeds, keep the best dev MCC checkpoint, report test metrics (mean ± sd) as a markdown table.
#
#   bench/published/gue_adapters.sh MODEL GUE_TASK_DIR OUT [SEEDS] [STEPS]
#
# MODEL: hf:InstaDeepAI/nucleotide-transformer-v2-50m-multi-species, hf:zhihan1996/DNABERT-2-117M
#   (fetched once into the Hugging Face cache) or a checkpoint folder.
# GUE_TASK_DIR: a folder with train.csv, dev.csv, test.csv (sequence,label), e.g. GUE's
#   prom/prom_core_all (https://github.com/MAGICS-LAB/DNABERT_2, the GUE download).
# SEEDS: default "1 2 3"; STEPS: default 3000 (batch 32, learning rate 3e-5 — the DNABERT-2
#   authors' GUE recipe; evaluated on dev every 250 steps). Extra flags for every run: EXTRA.
# Needs luminome-tokenize and luminome-train on PATH (or BIN=folder). On a GPU build add
#   EXTRA="--device cuda"; on a CPU expect hours per run at these sizes (docs/benchmarks.md).
set -euo pipefail
MODEL=$1
TASK=$2
OUT=$3
SEEDS=${4:-"1 2 3"}
STEPS=${5:-3000}
BIN=${BIN:-}
tok=${BIN:+$BIN/}luminome-tokenize
train=${BIN:+$BIN/}luminome-train
mkdir -p "$OUT"
for s in train dev test; do
    [ -s "$OUT/$s.safetensors" ] || "$tok" "$TASK/$s.csv" --scheme hf --tokenizer "$MODEL" -q \
        -o "$OUT/$s.safetensors"
done
for adapter in gated mean max cls; do
    for seed in $SEEDS; do
        run=$OUT/${adapter}_seed$seed
        [ -s "$run/test_metrics.tsv" ] && continue
        # shellcheck disable=SC2086
        "$train" classify --init "$MODEL" --adapter "$adapter" --seed "$seed" \
            --train "$OUT/train.safetensors" --dev "$OUT/dev.safetensors" --test "$OUT/test.safetensors" \
            --batch-size 32 --lr 3e-5 --steps "$STEPS" --eval-every 250 --metric dev_mcc -q \
            -o "$run" ${EXTRA:-}
    done
done
python3 - "$OUT" $SEEDS <<'PY'
import statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
names = {"gated": "DynamicGatedAdapter", "mean": "LinearMeanPoolAdapter",
         "max": "LinearMaxPoolAdapter", "cls": "LinearCLSAdapter"}
print("| Adapter | accuracy | auroc | f1 | mcc | seeds |")
print("|---|---|---|---|---|---|")
for a, name in names.items():
    runs = [dict(l.rstrip("\n").split("\t") for l in open(f"{out}/{a}_seed{s}/test_metrics.tsv"))
            for s in seeds]
    def cell(k):
        v = [float(r[k]) for r in runs]
        sd = statistics.stdev(v) if len(v) > 1 else 0.0
        return f"{statistics.mean(v):.4f} ± {sd:.4f}"
    print(f"| {name} | {cell('accuracy')} | {cell('auroc')} | {cell('f1')} | {cell('mcc')} | {len(runs)} |")
PY
