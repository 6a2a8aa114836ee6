#!/usr/bin/env bash
# Scatter-gather measured (docs/scale-out.md): the 8,713 Million Mutation Project SNVs of the
# C. elegans slice scored by one luminome-predict job and as 2 and 4 shards (--shard I/N, run
# side by side on this machine, one thread each, then --gather), with the cost of building the
# variant dataset and of the gather; every gathered output compared byte for byte with the one
# job's. The model is the size of docs/results.md's C. elegans bi-strand models (d 64 x 2
# layers, cross-attention, windows of 256), trained 40 steps: the scores measure time, not
# quality.
#
#   bench/scale/variant_shards.sh OUT_DIR
#
# Needs release binaries (cargo build --release) and ../shared/data.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
bin="${BIN:-$repo/target/release}"
ce="${DATA:-$repo/../shared/data}/genomes/celegans_1pct"
timed() { # label, command...: wall, user and system seconds, peak RSS, to $out/times.tsv
    local label=$1
    shift
    /usr/bin/time -f "$label\t%e\t%U\t%S\t%M" -a -o "$out/times.tsv" "$@"
}
cd "$out"
printf 'step\twall_s\tuser_s\tsys_s\tmax_rss_kb\n' > times.tsv
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" > conditions.txt

zcat "$ce/C.elegans.fa.gz" > genome.fa
zcat "$ce/C.elegans.vcf.gz" > snvs.tsv
"$bin/luminome-mask-pairs" --quiet --fasta genome.fa --window 256 --seed 1 -o train.safetensors
"$bin/luminome-train" bistrand --train train.safetensors --dev train.safetensors -o model \
    --d-model 64 --layers 2 --batch-size 16 --steps 40 --eval-every 40 --eval-records 64 \
    --dynamic-masking --seed 1 --quiet > /dev/null
timed mask_pairs "$bin/luminome-mask-pairs" --quiet --reference genome.fa --variants snvs.tsv \
    --window 256 -o snvs.pairs.safetensors

predict=("$bin/luminome-predict" --checkpoint "$out/model/best.safetensors" --dataset "$out/snvs.pairs.safetensors"
    --batch-size 64 --quiet)
outputs=(-o scores.tsv --vcf scores.vcf.gz --bedgraph scores.bedgraph)
for threads in 1 2; do
    mkdir -p "one_t$threads"
    (cd "one_t$threads" && timed "one_job_${threads}_threads" "${predict[@]}" --threads "$threads" "${outputs[@]}")
done
for n in 2 4; do
    mkdir -p "shards_$n"
    (
        cd "shards_$n"
        start=$(date +%s.%N)
        pids=()
        for i in $(seq 1 "$n"); do
            timed "shard_${i}_of_$n" "${predict[@]}" --threads 1 --shard "$i/$n" -o "p$i.part.safetensors" &
            pids+=($!)
        done
        for pid in "${pids[@]}"; do wait "$pid"; done
        end=$(date +%s.%N)
        printf 'shards_%s_parallel_wall\t%.2f\t\t\t\n' "$n" "$(echo "$end - $start" | bc)" >> "$out/times.tsv"
        timed "gather_$n" "${predict[@]}" --threads 2 --gather p*.part.safetensors "${outputs[@]}"
    )
    # The gather records the command without --gather: compare with the two-thread job's.
    for f in scores.tsv scores.vcf.gz scores.vcf.gz.tbi scores.bedgraph; do
        cmp "one_t2/$f" "shards_$n/$f" || exit 1
        echo "shards_$n/$f: the same bytes as one job"
    done
done
cat conditions.txt times.tsv
