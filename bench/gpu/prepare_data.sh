#!/usr/bin/env bash
# The data of a GPU session (bench/gpu/run_gpu.sh), made with the CPU build on any machine, so
# the GPU host needs nothing but the binaries and this folder (a few MB).
#
#   bench/gpu/prepare_data.sh DATA_DIR          # from the repository root; needs ../shared/data
#
# DATA_DIR receives
#   train/dev/test.safetensors   GUE prom_core_all in non-overlapping 3-mers (the classifier and
#                                masked-LM recipes of bench/train/gue_prom_core_all.sh);
#   bistrand_train.safetensors   C. elegans (1 % slice) windows of 512 with their complementary
#                                strands, for the bi-strand model;
#   snvs_small.*, snvs_large.*   every SNV at 40 / 2,000 sampled coding positions of C. elegans
#                                chromosomes V and X (bench/bistrand/coding_snvs.py, seed 1), as
#                                windows of 512 (luminome-mask-pairs --variants).
#   plantcad_l20_shrunk/,        when CAD_CKPT (default /work/bench-data/plantcad_l20_random,
#   snvs_cad_small.*,            bench/caduceus/make_random_checkpoint.py --size l20) exists: that
#   snvs_cad_large.*             checkpoint shrunk by bench/gpu/regrow_checkpoint.py, and the SNVs
#                                of the first 12 / all 2,000 positions in its vocabulary (--like).
# BIN (default target/release) holds luminome-tokenize and luminome-mask-pairs (built if missing).
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
data=${DATA:-../shared/data}
bin=${BIN:-target/release}
[[ -x $bin/luminome-tokenize && -x $bin/luminome-mask-pairs ]] ||
    cargo build --release --locked -q -p luminome-tokenize -p luminome-mask-pairs
for s in train dev test; do
    "$bin/luminome-tokenize" "$data/gue/prom/prom_core_all/$s.csv" -q --scheme kmer -k 3 \
        --kmer-mode non-overlapping -o "$out/$s.safetensors"
done
ce=$data/genomes/celegans_1pct
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
zcat "$ce/C.elegans.fa.gz" > "$tmp/celegans.fa"
"$bin/luminome-mask-pairs" --quiet --fasta "$tmp/celegans.fa" --window 512 --seed 1 \
    -o "$out/bistrand_train.safetensors"
for set in small:40 large:2000; do
    python3 bench/bistrand/coding_snvs.py "$tmp/celegans.fa" "$ce/C.elegans.gff.gz" \
        "$out/snvs_${set%%:*}" --chroms V,X --positions "${set##*:}" --seed 1
    "$bin/luminome-mask-pairs" --quiet --reference "$tmp/celegans.fa" \
        --variants "$out/snvs_${set%%:*}.tsv" --window 512 -o "$out/snvs_${set%%:*}.pairs.safetensors"
done
cad=${CAD_CKPT:-/work/bench-data/plantcad_l20_random}
if [[ -f $cad/model.safetensors ]]; then
    python3 bench/gpu/regrow_checkpoint.py shrink "$cad" "$out/plantcad_l20_shrunk"
    head -n 12 "$out/snvs_small.tsv" > "$out/snvs_cad_small.tsv"
    cp "$out/snvs_large.tsv" "$out/snvs_cad_large.tsv"
    for set in small large; do
        "$bin/luminome-mask-pairs" --quiet --reference "$tmp/celegans.fa" --like "$cad" \
            --variants "$out/snvs_cad_$set.tsv" --window 512 -o "$out/snvs_cad_$set.pairs.safetensors"
    done
fi
ls -la "$out"
