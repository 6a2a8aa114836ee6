#!/usr/bin/env bash
# Scatter-gather of tokenizing, measured (docs/scale-out.md): the E. coli K-12 genome (4.6 Mb,
# gzip) and hg38 chr22 (50.8 Mb, BGZF, soft-masked) tokenized as one luminome-tokenize job and
# as 2 and 4 parts (--shard I/N side by side on this machine, one worker thread each, then
# --gather); every gathered file compared byte for byte with the one job's. Two workloads:
#   kmer6: overlapping 6-mers in 512-base windows every 256 bases with the soft mask (the
#          README's genome recipe; cheap per base, 460 MB written);
#   bpe:   a byte-pair tokenizer.json (test-data/tokenizers/dna_bpe_256.json, DNABERT-2's
#          model type at a small vocabulary) on 2,048-base windows without N (CPU-bound).
#
#   bench/scale/tokenize_shards.sh OUT_DIR
#
# Needs release binaries (cargo build --release) and ../shared/data.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
bin="${BIN:-$repo/target/release}"
data="$(cd "${DATA:-$repo/../shared/data}" && pwd)"
# shellcheck source=bench/scale/lib.sh
. "$repo/bench/scale/lib.sh"
cd "$out"
start_record

conditions="$out/conditions.txt"
times="$out/times.tsv"
for workload in kmer6 bpe; do
    mkdir -p "$out/$workload"
    cd "$out/$workload"
    genomes=("$data/genomes/ecoli_k12_mg1655/GCF_000005845.2_ASM584v2_genomic.fna.gz" "$data/hg38_chr22/chr22.fa.gz")
    case "$workload" in
    kmer6) options=(--scheme kmer -k 6 --window 512 --stride 256 --overflow window --soft-mask --shard-records 50000) ;;
    bpe) options=(--scheme hf --tokenizer "$repo/test-data/tokenizers/dna_bpe_256.json" --window 2048
        --overflow window --max-length 2050 --max-n 0.01) ;;
    esac
    tokenize=("$bin/luminome-tokenize" "${genomes[@]}" "${options[@]}" --quiet)
    # The same relative -o in every folder: the dataset records its command line.
    # --threads 3 starts the tokenizing pool for every scheme where the machine has 3 cores or
    # more; --threads is capped at the cores (on 2 cores this row repeats --threads 2).
    for threads in 1 2 3; do
        mkdir -p "one_t$threads"
        (cd "one_t$threads" && timed "${workload}_one_job_threads_$threads" "${tokenize[@]}" --threads "$threads" -o genomes.safetensors)
    done
    for n in 2 4; do
        mkdir -p "shards_$n"
        (
            cd "shards_$n"
            parts_side_by_side "${workload}_" "$n" "${tokenize[@]}"
            du -cb p*.part.safetensors | tail -1 | sed "s/^/$workload: part files of $n: bytes /;s/\ttotal//" >> "$conditions"
            timed "${workload}_gather_$n" "${tokenize[@]}" --threads 1 -o genomes.safetensors --gather p*.part.safetensors
            rm -f p*.part.safetensors
        )
        # The gather records the command without --gather: the --threads 1 job's.
        for f in one_t1/genomes*; do
            cmp "$f" "shards_$n/$(basename "$f")"
        done
        echo "$workload: shards_$n: $(find one_t1 -type f | wc -l) files, the same bytes as one job" >> "$conditions"
    done
    du -cb one_t1/genomes* | tail -1 | sed "s/^/$workload: one job's dataset: bytes /;s/\ttotal//" >> "$conditions"
done
cat "$conditions" "$times"
