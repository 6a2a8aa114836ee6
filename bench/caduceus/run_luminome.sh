#!/usr/bin/env bash
# Luminome's side of the Caduceus zero-shot SNV benchmark (docs/benchmarks.md, "Caduceus on the
# CPU"): N SNVs of test-data's C. elegans VCF in 512-base windows, in the checkpoint's vocabulary,
# scored by luminome-predict at 1 and 2 threads, both strands and forward only; whole-process wall
# time, CPU time and peak RSS from /usr/bin/time.
#
#   bench/caduceus/run_luminome.sh [CKPT] [N] [OUT]      # from the repository root
#
# CKPT defaults to the random PlantCaduceus_l20-sized checkpoint made by make_random_checkpoint.py.
set -euo pipefail
ckpt=${1:-/work/bench-data/plantcad_l20_random}
n=${2:-32}
out=${3:-bench-out/caduceus}
bin=${BIN:-target/release}
mkdir -p "$out"
vcf=test-data/celegans/celegans_small.snv.vcf
(grep '^#' "$vcf"; grep -v '^#' "$vcf" | head -n "$n") > "$out/snvs.vcf"
"$bin/luminome-mask-pairs" --reference test-data/celegans/celegans_small.fa --variants "$out/snvs.vcf" \
    --window 512 --like "$ckpt" -o "$out/snvs.safetensors" -q
for strands in both forward; do
    for t in 1 2; do
        /usr/bin/time -f "strands=$strands threads=$t n=$n wall_s=%e user_s=%U sys_s=%S maxrss_kb=%M" \
            "$bin/luminome-predict" --checkpoint "$ckpt" --dataset "$out/snvs.safetensors" \
            -o "$out/scores.$strands.$t.tsv" --threads "$t" --strands "$strands" --batch-size 16 -q
    done
done
