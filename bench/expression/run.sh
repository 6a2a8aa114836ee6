#!/usr/bin/env bash
# The region expression transformer on chr22 x K562 and GM12878 (docs/results.md, "Expression").
#
#   bench/expression/run.sh OUT_DIR [JOBS]
#
# Region matrices: all protein-coding genes of hg38 chr22 (ABC TSS table), peaks called on both
# accessibility bigWigs, Vierstra v1.0 motifs collapsed to 282 clusters + accessibility (logCPM),
# N = 200 regions in a 2 Mbp window; expression from ENCODE RAMPAGE in both cell types (summed RPKM
# of same-strand rPeaks within TSS +- 500 bp, log1p), one assay so that a model trained on one cell
# type predicts on the other's scale. Pretraining windows: the same regions, tiled every 50 kb.
# Two splits: held-out genes (5 chromosome blocks; test = the last, dev = the fourth) and
# leave-one-cell-type-out (train K562, test GM12878; dev = a block of K562 genes). For each:
# attention-pool and TSS-region heads, with and without the linear path (ARMS), from scratch and
# (INITS=pretrained) from a pretrained encoder, seeds 1-3;
# test metrics from luminome-predict --subset test; baselines (TSS accessibility, ridge, gradient-
# boosted trees, the same gene's expression in the other cell type) on the same split; summary
# printed at the end.
#
# Needs release binaries (cargo build --release), python3 with numpy, safetensors, scipy and
# scikit-learn, and ../shared/data. JOBS runs at a time, one thread each (default 2).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
jobs="${2:-2}"
bin="${BIN:-$repo/target/release}"
data="${DATA:-$repo/../shared/data}"
H=$data/hg38_chr22
V=$data/motifs/vierstra_v1.0
GENES=$H/abc_hg38_gene_tss/RefSeqCurated.170308.bed.CollapsedGeneBounds.chr22.hg38.TSS500bp.bed
R=$H/rampage_hg38_tss_expression
# Sizes and regularisation chosen on the dev block of the genes split, seed 1 (sweep.sh): with
# ~500 training genes a larger encoder (d 64 x 2, dropout 0.1, 600 steps) peaked at dev Pearson
# 0.51 at step 100 and then overfitted.
PRESET=(--d-model "${D_MODEL:-32}" --layers "${LAYERS:-1}" --heads 4 --ffn "${FFN:-64}" --dropout "${DROPOUT:-0.3}")
PRE_STEPS=${PRE_STEPS:-600}
STEPS=${STEPS:-300}

# Expression per gene and the two datasets.
for ct in K562:ENCSR000AER GM12878:ENCSR000AEI; do
    [ -f "$out/${ct%%:*}.rampage.tsv" ] || python3 "$repo/bench/regions/rampage_gene_table.py" "$GENES" \
        "$R/hg38-rPeaks.bed.gz" "$R/${ct#*:}.txt.gz" "$out/${ct%%:*}.rampage.tsv"
done
[ -f "$out/genes.safetensors" ] || "$bin/luminome-regions" --reference "$H/chr22.fa.gz" \
    --accessibility "K562=$H/acc.K562.chr22.bw" --accessibility "GM12878=$H/acc.GM12878.chr22.bw" \
    --motifs "$V/vierstra_v1.0_motifs_2174_from_GET_NrMotifV1.meme" \
    --motif-clusters "$V/vierstra_v1.0_motif_annotations.csv" \
    --genes "$GENES" --bed-tss center --gene-type protein_coding \
    --expression "K562=$out/K562.rampage.tsv" --expression "GM12878=$out/GM12878.rampage.tsv" \
    --threads 2 -o "$out/genes.safetensors" 2> "$out/genes.log"
[ -f "$out/tiles.safetensors" ] || "$bin/luminome-regions" --reference "$H/chr22.fa.gz" \
    --reuse-regions "$out/genes.regions.tsv" --tile-step 50000 \
    --threads 2 -o "$out/tiles.safetensors" 2> "$out/tiles.log"

split_args() {
    case $1 in
        genes) echo "--holdout genes --blocks 5" ;;
        loco) echo "--holdout cell-type --test-cell-type GM12878 --blocks 5" ;;
    esac
}

common=(--batch-size 16 --lr 1e-3 --warmup 25 --weight-decay 0.1 --eval-every 25 --threads 1 --quiet)

pretrain() {
    local split=$1 seed=$2 name="pretrain.$1.seed$2"
    [ -f "$out/$name/best.safetensors" ] && return 0
    # shellcheck disable=SC2046
    "$bin/luminome-train" region-pretrain --train "$out/tiles.safetensors" $(split_args "$split") \
        "${PRESET[@]}" "${common[@]}" --steps "$PRE_STEPS" --seed "$seed" -o "$out/$name" \
        > "$out/$name.log" 2>&1
}

# Fine-tuning arms: head and linear path (docs/expression.md, "The linear path").
arm_args() {
    case $1 in
        attention-pool) echo "--head attention-pool --linear-path none" ;;
        tss-region) echo "--head tss-region --linear-path none" ;;
        tss-region+acc) echo "--head tss-region --linear-inputs tss-accessibility" ;;
        tss-region+acc-fixed) echo "--head tss-region --linear-inputs tss-accessibility --linear-path fixed" ;;
        tss-region+region) echo "--head tss-region --linear-inputs tss-region" ;;
        tss-region+window) echo "--head tss-region --linear-inputs tss-region-window" ;;
        attention-pool+acc) echo "--head attention-pool --linear-inputs tss-accessibility" ;;
        *) echo "unknown arm $1" >&2; exit 2 ;;
    esac
}

finetune() {
    local split=$1 arm=$2 init=$3 seed=$4 name="expr.$1.$2.$3.seed$4"
    [ -f "$out/$name/test_metrics.tsv" ] && return 0
    local from=("${PRESET[@]}")
    [ "$init" = pretrained ] && from=(--init "$out/pretrain.$split.seed$seed/best.safetensors")
    # shellcheck disable=SC2046
    "$bin/luminome-train" expression --train "$out/genes.safetensors" $(split_args "$split") \
        $(arm_args "$arm") "${from[@]}" "${common[@]}" --steps "$STEPS" --seed "$seed" -o "$out/$name" \
        > "$out/$name.log" 2>&1
    "$bin/luminome-predict" --checkpoint "$out/$name/best.safetensors" --dataset "$out/genes.safetensors" \
        --subset test -o "$out/$name/test_predictions.tsv" --metrics "$out/$name/test_metrics.tsv" \
        --threads 1 --quiet
}

pids=()
wait_slot() {
    if [ "${#pids[@]}" -ge "$jobs" ]; then
        wait "${pids[0]}"
        pids=("${pids[@]:1}")
    fi
}
# ARMS (space-separated, default all) and INITS (scratch and/or pretrained) narrow the runs.
ARMS=${ARMS:-"attention-pool tss-region tss-region+acc tss-region+acc-fixed tss-region+region tss-region+window attention-pool+acc"}
INITS=${INITS:-"scratch"}
if [[ " $INITS " == *" pretrained "* ]]; then
    for split in genes loco; do
        for seed in 1 2 3; do
            pretrain "$split" "$seed" &
            pids+=($!)
            wait_slot
        done
    done
    wait
fi
pids=()
for split in genes loco; do
    for seed in 1 2 3; do
        for arm in $ARMS; do
            for init in $INITS; do
                finetune "$split" "$arm" "$init" "$seed" &
                pids+=($!)
                wait_slot
            done
        done
    done
done
wait

# Baselines on each split (the split of the seed-1 run of the first arm: every run of a split
# holds out the same samples).
first_arm=${ARMS%% *}
first_init=${INITS%% *}
for split in genes loco; do
    ref="$out/expr.$split.$first_arm.$first_init.seed1"
    "$bin/luminome-predict" --checkpoint "$ref/best.safetensors" --dataset "$out/genes.safetensors" \
        -o "$ref/all_predictions.tsv" --threads 1 --quiet
    python3 "$repo/bench/expression/baselines.py" "$out/genes.safetensors" "$ref/all_predictions.tsv" \
        > "$out/baselines.$split.tsv"
done
python3 "$repo/bench/expression/summarize.py" "$out"
