#!/usr/bin/env bash
# Scatter-gather of importance, measured (docs/scale-out.md): in-silico saturation mutagenesis
# (every base to every other base) of the 500 GUE prom_core_all test records (70 bases) under
# the default classifier trained on test-data (the README's recipe, seed 1), as one
# luminome-importance job and as 2 and 4 parts (--shard I/N side by side on this machine, one
# thread each, then --gather), TSV and npz compared byte for byte with the one job's.
#
#   bench/scale/importance_shards.sh OUT_DIR
#
# Needs release binaries (cargo build --release).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
bin="${BIN:-$repo/target/release}"
# shellcheck source=bench/scale/lib.sh
. "$repo/bench/scale/lib.sh"
cd "$out"
start_record

data="$repo/test-data/gue_prom_core_all"
"$bin/luminome-tokenize" "$data/train.csv" --max-length 72 --quiet -o train.safetensors
"$bin/luminome-tokenize" "$data/dev.csv" --max-length 72 --quiet -o dev.safetensors
"$bin/luminome-tokenize" "$data/test.csv" --max-length 72 --quiet -o test.safetensors
"$bin/luminome-train" classify --adapter gated --train train.safetensors --dev dev.safetensors \
    --seed 1 --quiet -o model > /dev/null
explain=("$bin/luminome-importance" --checkpoint "$out/model/best.safetensors" --dataset "$out/test.safetensors"
    --method ism --batch-size 16 --quiet)
mkdir -p one
(cd one && timed one_job_threads_1 "${explain[@]}" --threads 1 -o ism.tsv --npz ism.npz)
for n in 2 4; do
    mkdir -p "shards_$n"
    (
        cd "shards_$n"
        parts_side_by_side "" "$n" "${explain[@]}" --npz ism.npz
        du -cb p*.part.safetensors | tail -1 | sed "s/^/part files of $n: bytes /;s/\ttotal//" >> "$out/conditions.txt"
        timed "gather_$n" "${explain[@]}" --threads 1 -o ism.tsv --npz ism.npz --gather p*.part.safetensors
        rm -f p*.part.safetensors
    )
    for f in ism.tsv ism.npz; do
        cmp "one/$f" "shards_$n/$f"
    done
    echo "shards_$n: TSV and npz the same bytes as one job" >> conditions.txt
done
du -cb one/ism.* | tail -1 | sed "s/^/one job's outputs: bytes /;s/\ttotal//" >> conditions.txt
cat conditions.txt times.tsv
