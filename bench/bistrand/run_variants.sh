#!/usr/bin/env bash
# Variant effects of the C. elegans bi-strand models of run_mlm.sh (docs/results.md): every
# possible SNV at 20,000 sampled coding positions of chromosomes V and X (not trained on), and the
# 8,713 Million Mutation Project SNVs of the slice, scored with each seed's cross-attention model
# and annotated by consequence.
#
#   bench/bistrand/run_variants.sh OUT_DIR     (the OUT_DIR of run_mlm.sh)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$(cd "$1" && pwd)"
bin="${BIN:-$repo/target/release}"
data="${DATA:-$repo/../shared/data}"
ce="$data/genomes/celegans_1pct"
py="$repo/bench/bistrand"
genome="$out/data/celegans_genome.fa"

python3 "$py/coding_snvs.py" "$genome" "$ce/C.elegans.gff.gz" "$out/coding_snvs" --chroms V,X --positions 20000 --seed 1
zcat "$ce/C.elegans.vcf.gz" > "$out/mmp_snvs.tsv"
python3 "$py/annotate_snvs.py" "$genome" "$ce/C.elegans.gff.gz" "$out/mmp_snvs.tsv" > "$out/mmp_snvs.annotation.tsv"
for set in coding_snvs mmp_snvs; do
    [ -f "$out/$set.pairs.safetensors" ] || "$bin/luminome-mask-pairs" --reference "$genome" \
        --variants "$out/$set.tsv" --window 256 -o "$out/$set.pairs.safetensors"
    for seed in 1 2 3; do
        m="$out/celegans.cross.seed$seed/best.safetensors"
        [ -f "$out/$set.seed$seed.scores.tsv" ] || /usr/bin/time -v "$bin/luminome-predict" --checkpoint "$m" \
            --dataset "$out/$set.pairs.safetensors" -o "$out/$set.seed$seed.scores.tsv" \
            --vcf "$out/$set.seed$seed.scores.vcf.gz" --bedgraph "$out/$set.seed$seed.llr.bedgraph" \
            --batch-size 64 --quiet 2> "$out/$set.seed$seed.time.txt"
    done
done
for set in coding_snvs mmp_snvs; do
    echo "## $set"
    python3 "$py/analyze_variants.py" "$out/$set.seed"{1,2,3}.scores.tsv --annotation "$out/$set.annotation.tsv" \
        --train "$out/data/celegans_train.fa" --genome "$genome"
done
