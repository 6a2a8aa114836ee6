#!/usr/bin/env bash
# Runs every Luminome tool on test-data/ with fixed seeds and prints the sha256 of every output
# file, one "hash  path" line each, sorted by path. Two commits that print the same lines produce
# byte-identical outputs: this is how a refactor proves it changed no behaviour.
#
#   scripts/output-fingerprint.sh [BIN_DIR] > after.sha256
#   scripts/refactor-check.sh BASE_COMMIT      # builds BASE and HEAD, runs this on both, diffs
#
# A training log's examples_per_s column (a timing) is left out of its hash.
# BIN_DIR holds the luminome-* binaries (default: target/release, built if missing). The run
# covers: tokenize (nucleotide, overlapping and non-overlapping k-mers, hf, BED + reference with
# RC, soft mask, shards), MLM (learned and rotary positions), classify with all four adapters
# (from an MLM checkpoint, frozen encoder, from scratch, paused and resumed), predict, importance
# (gates, saliency, integrated gradients; TSV, bedGraph, npz), regions (gene windows, a rerun on
# its own region table, tiles), region-pretrain and expression (both heads, --init), their predict
# and importance, mask-pairs (genome and variant windows), bistrand training and variant scoring,
# tabular CV and split training, its predict and importance, the bag-of-tokens and k-mer linear
# classifiers (an ensemble, ISM), the dual encoder (ranking, embeddings). Every luminome-train
# subcommand runs here (luminome-train's tests/registry.rs checks it). Small models, --threads 1:
# about a minute on a laptop core.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$repo/target/release}"
if [[ ! -x "$bin/luminome-train" ]]; then
    (cd "$repo" && cargo build --release --locked --workspace --bins >&2)
fi
bin="$(cd "$bin" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Paths enter the outputs' metadata (sources, command line): run in a fixed layout, relative paths.
ln -s "$repo/test-data" "$work/test-data"
cd "$work"
mkdir out
export PATH="$bin:$PATH"
q=(--quiet)
tiny=(--d-model 32 --layers 2 --heads 4 --ffn 64 --batch-size 16 --warmup 3 --threads 1 --seed 7)
run() { "$@" >>log.txt 2>&1 || { echo "output-fingerprint: failed: $*" >&2; tail -20 log.txt >&2; exit 1; }; }

gue=test-data/gue_prom_core_all
for split in train dev test; do
    run luminome-tokenize $gue/$split.csv --max-length 72 --threads 1 -o out/nt_$split.safetensors
done
run luminome-tokenize $gue/dev.csv --scheme kmer -k 3 --kmer-mode non-overlapping --threads 1 -o out/k3_dev.safetensors
run luminome-tokenize $gue/dev.csv --scheme kmer -k 6 --threads 1 --shard-records 400 -o out/k6_dev.safetensors
run luminome-tokenize $gue/dev.csv --scheme hf --tokenizer test-data/tokenizers/dna_bpe_256.json --threads 1 -o out/bpe_dev.safetensors
run luminome-tokenize test-data/chr22_slice/intervals.bed --reference test-data/chr22_slice/chr22_slice.fa \
    --max-length 72 --overflow window --rc both --soft-mask --threads 1 -o out/tss.safetensors
run luminome-tokenize test-data/ecoli/ecoli_50kb.fa.gz --overflow window --window 510 --stride 255 --threads 1 -o out/ecoli.safetensors

run luminome-train mlm --train out/nt_train.safetensors --dev out/nt_dev.safetensors -o out/mlm \
    "${tiny[@]}" --steps 12 --eval-every 6 --eval-records 128 "${q[@]}"
run luminome-train mlm --train out/nt_train.safetensors -o out/mlm_rotary --position rotary \
    "${tiny[@]}" --steps 6 --eval-every 3 "${q[@]}"
run luminome-train classify --adapter gated --init out/mlm/best.safetensors --train out/nt_train.safetensors \
    --dev out/nt_dev.safetensors --test out/nt_test.safetensors -o out/gated "${tiny[@]}" --steps 12 --eval-every 6 "${q[@]}"
run luminome-train classify --adapter mean --init out/mlm/best.safetensors --freeze-encoder \
    --train out/nt_train.safetensors --dev out/nt_dev.safetensors -o out/mean "${tiny[@]}" --steps 8 --eval-every 4 "${q[@]}"
run luminome-train classify --adapter max --train out/nt_train.safetensors --dev out/nt_dev.safetensors \
    -o out/max "${tiny[@]}" --position rotary --steps 8 --eval-every 4 --metric dev_loss --patience 1 "${q[@]}"
run luminome-train classify --adapter cls --train out/nt_train.safetensors --dev out/nt_dev.safetensors \
    -o out/cls "${tiny[@]}" --steps 10 --eval-every 5 --stop-after-steps 5 "${q[@]}"
run luminome-train classify --adapter cls --train out/nt_train.safetensors --dev out/nt_dev.safetensors \
    -o out/cls "${tiny[@]}" --steps 10 --eval-every 5 --resume out/cls/last.safetensors "${q[@]}"

for m in gated mean max cls; do
    run luminome-predict --checkpoint out/$m/best.safetensors --dataset out/nt_test.safetensors \
        -o out/$m.predictions.tsv --metrics out/$m.metrics.tsv --threads 1 "${q[@]}"
done
run luminome-predict --checkpoint out/gated/best.safetensors --dataset out/tss.safetensors \
    -o out/tss.predictions.tsv --threads 1 "${q[@]}"
run luminome-importance --checkpoint out/gated/best.safetensors --dataset out/nt_test.safetensors \
    --method gates --reduce l2 -o out/gates.tsv --npz out/gates.npz --threads 1 "${q[@]}"
run luminome-importance --checkpoint out/gated/best.safetensors --dataset out/tss.safetensors \
    --method ig --ig-steps 4 -o out/tss.ig.tsv --bedgraph out/tss.ig.bedgraph --npz out/tss.ig.npz --threads 1 "${q[@]}"
run luminome-importance --checkpoint out/mean/best.safetensors --dataset out/nt_test.safetensors \
    --method saliency --only-label 1 --records 50 -o out/saliency.tsv --threads 1 "${q[@]}"

# The other token classifiers on the same rows: the bag-of-tokens baseline (ISM explains it) and
# the k-mer floor, predicted alone and as an ensemble with the gated classifier.
run luminome-train bag-of-tokens --train out/nt_train.safetensors --dev out/nt_dev.safetensors -o out/bag \
    --batch-size 16 --steps 12 --eval-every 6 --no-kmer-floor --threads 1 --seed 7 "${q[@]}"
run luminome-train kmer-linear --train out/nt_train.safetensors --dev out/nt_dev.safetensors \
    --test out/nt_test.safetensors --k 2-4 --max-iter 30 -o out/kmer --threads 1 "${q[@]}"
run luminome-predict --checkpoint out/bag/best.safetensors --dataset out/nt_test.safetensors \
    -o out/bag.predictions.tsv --metrics out/bag.metrics.tsv --threads 1 "${q[@]}"
run luminome-predict --checkpoint out/gated/best.safetensors out/kmer/best.safetensors --dataset out/nt_test.safetensors \
    -o out/ensemble.predictions.tsv --metrics out/ensemble.metrics.tsv --threads 1 "${q[@]}"
run luminome-importance --checkpoint out/bag/best.safetensors --dataset out/nt_test.safetensors \
    --method ism --records 3 -o out/bag.ism.tsv --threads 1 "${q[@]}"

s=test-data/chr22_slice
acc=(--peaks $s/peaks.narrowPeak
    --accessibility K562=$s/acc.K562.bedgraph --accessibility GM12878=$s/acc.GM12878.bedgraph)
regions=(--reference $s/chr22_slice.fa --genes $s/genes_tss.bed --bed-tss center
    --expression K562=test-data/expression/k562_tpm_slice.tsv
    --expression GM12878=test-data/expression/gm12878_rampage_slice.tsv
    --window 200000 --n-regions 50 --threads 1)
run luminome-regions "${regions[@]}" "${acc[@]}" --motifs test-data/motifs/vierstra_small.meme \
    --motif-clusters test-data/motifs/vierstra_small_clusters.csv -o out/regions.safetensors
run luminome-regions "${regions[@]}" --reuse-regions out/regions.regions.tsv -o out/regions_reuse.safetensors
run luminome-regions "${regions[@]}" "${acc[@]}" --motifs test-data/motifs/jaspar_small.jaspar -o out/regions_jaspar.safetensors

run luminome-regions --reference $s/chr22_slice.fa --reuse-regions out/regions.regions.tsv --tile-step 20000 \
    --window 200000 --n-regions 50 --threads 1 -o out/tiles.safetensors

# Region models: masked-region pretraining on the tiles, expression with both heads (one from the
# pretrained encoder), predict on the held-out genes, importance by each method.
rtiny=(--d-model 16 --layers 1 --heads 2 --ffn 32 --batch-size 8 --warmup 2 --threads 1 --seed 7)
run luminome-train region-pretrain --train out/tiles.safetensors --holdout genes --blocks 3 -o out/pretrain \
    "${rtiny[@]}" --steps 8 --eval-every 4 "${q[@]}"
run luminome-train expression --train out/regions.safetensors --holdout genes --blocks 3 -o out/expr_pool \
    --head attention-pool "${rtiny[@]}" --steps 8 --eval-every 4 "${q[@]}"
run luminome-train expression --train out/regions.safetensors --holdout cell-type --test-cell-type GM12878 \
    --blocks 3 -o out/expr_tss --head tss-region --init out/pretrain/best.safetensors --batch-size 8 \
    --warmup 2 --threads 1 --seed 7 --steps 8 --eval-every 4 "${q[@]}"
for m in expr_pool expr_tss; do
    run luminome-predict --checkpoint out/$m/best.safetensors --dataset out/regions.safetensors --subset test \
        -o out/$m.predictions.tsv --metrics out/$m.metrics.tsv --threads 1 "${q[@]}"
done
run luminome-importance --checkpoint out/expr_pool/best.safetensors --dataset out/regions.safetensors \
    --method pooling -o out/pool.tsv --bedgraph out/pool.bedgraph --threads 1 "${q[@]}"
run luminome-importance --checkpoint out/expr_tss/best.safetensors --dataset out/regions.safetensors \
    --method ig --ig-steps 4 --top 5 -o out/expr.ig.tsv --npz out/expr.ig.npz --threads 1 "${q[@]}"

# Bi-strand masked LM: genome windows and variant windows, training, variant scoring.
c=test-data/celegans
run luminome-mask-pairs --fasta $c/celegans_small.fa --window 128 --seed 1 -o out/pairs.safetensors "${q[@]}"
run luminome-mask-pairs --fasta test-data/ecoli/ecoli_50kb.fa.gz --window 128 --bert-replacement --seed 2 \
    -o out/pairs_ecoli.safetensors "${q[@]}"
run luminome-mask-pairs --reference $c/celegans_small.fa --variants $c/celegans_small.snv.vcf --window 128 \
    -o out/snvs.safetensors "${q[@]}"
run luminome-train bistrand --train out/pairs.safetensors --dev out/pairs_ecoli.safetensors -o out/bistrand \
    --d-model 16 --layers 1 --cross-heads 2 --batch-size 8 --steps 8 --eval-every 4 --dynamic-masking \
    --threads 1 --seed 7 "${q[@]}"
run luminome-predict --checkpoint out/bistrand/best.safetensors --dataset out/snvs.safetensors \
    -o out/snvs.scores.tsv --vcf out/snvs.scores.vcf --bedgraph out/snvs.llr.bedgraph --threads 1 "${q[@]}"

# Tabular: CV of the MLP, a split of the FT-Transformer with the Youden threshold, its predict
# and importance.
bc=(--train test-data/tabular/breast_cancer.tsv --label diagnosis --id sample --classes benign,malignant)
run luminome-train tabular "${bc[@]}" --folds 3 --model mlp --steps 30 --threads 1 --seed 7 \
    -o out/tab_mlp "${q[@]}"
run luminome-train tabular "${bc[@]}" --d-model 16 --layers 1 --heads 2 --steps 20 --threshold youden \
    --threads 1 --seed 7 -o out/tab_ft "${q[@]}"
run luminome-predict --checkpoint out/tab_ft/best.safetensors --dataset test-data/tabular/breast_cancer.tsv \
    -o out/tab_ft.predictions.tsv --metrics out/tab_ft.metrics.tsv --threads 1 "${q[@]}"
run luminome-importance --checkpoint out/tab_ft/best.safetensors --dataset test-data/tabular/breast_cancer.tsv \
    --method ig --ig-steps 8 --records 20 -o out/tab_ft.ig.tsv --ranking out/tab_ft.ranking.tsv --threads 1 "${q[@]}"
run luminome-importance --checkpoint out/tab_ft/best.safetensors --dataset test-data/tabular/breast_cancer.tsv \
    --method attention --top 5 -o out/tab_ft.attention.tsv --threads 1 "${q[@]}"

# Dual encoder: (query, passage) pairs and a corpus as 3-mers, training, ranking and embeddings.
for split in train dev test; do
    run luminome-tokenize test-data/retrieval/$split.pairs.tsv --format pairs --scheme kmer -k 3 --threads 1 \
        -o out/$split.pairs.safetensors
done
run luminome-tokenize test-data/retrieval/test.corpus.fa --like out/train.pairs.safetensors --threads 1 \
    -o out/corpus.safetensors
run luminome-train dual --train out/train.pairs.safetensors --dev out/dev.pairs.safetensors -o out/dual \
    --shared-encoder --attention genetic --d-model 16 --layers 1 --heads 2 --ffn 32 --batch-size 16 \
    --steps 8 --eval-every 4 --threads 1 --seed 7 "${q[@]}"
run luminome-predict --checkpoint out/dual/best.safetensors --dataset out/test.pairs.safetensors \
    --corpus out/corpus.safetensors -o out/dual.ranks.tsv --metrics out/dual.metrics.tsv \
    --embeddings out/dual.emb.safetensors --threads 1 "${q[@]}"

# A training log's examples_per_s column is a wall-clock measurement: it is left out of the hash.
without_timing() {
    awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "examples_per_s") t = i }
        { if (t) { for (i = t; i < NF; i++) $i = $(i + 1); NF-- } print }' "$1"
}
cd out
find . -type f | LC_ALL=C sort | while read -r f; do
    case "$f" in
        */metrics.tsv) h=$(without_timing "$f" | sha256sum) ;;
        *) h=$(sha256sum < "$f") ;;
    esac
    echo "${h%% *}  $f"
done
