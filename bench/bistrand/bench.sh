#!/usr/bin/env bash
# Bi-strand performance, side by side in one session (docs/benchmarks.md, "Bi-strand masked LM").
#
#   bench/bistrand/bench.sh OUT_DIR [steps] [repeats]     # from the repository root
#
# 1. Training step and inference, PyTorch (bench/bistrand/torch_bistrand.py with its vectorised
#    selective scan: a parallel prefix with its own reverse-scan backward; TORCH_SCAN=ref for
#    mamba_ssm's loop-based reference scan, a correctness check, not a timing peer) vs Luminome
#    (tools/luminome-engine/examples/bench_bistrand.rs): same model, same random inputs and thread
#    count; for each repeat and thread count PyTorch then Luminome, so both see the same load.
#    SIZE="d_model layers length batch" (default "64 2 256 8": the model and windows of
#    run_mlm.sh; the examples' own default is 128 2 512 8). Each process runs under
#    /usr/bin/time: a "process" line gives its wall s, user s, sys s and peak RSS KB (the whole
#    process: start-up, 2 warm-up steps, the timed steps and inference batches). The load
#    average is printed before and after.
# 2. Variant scoring: luminome-predict on every SNV of 2,000 sampled C. elegans coding positions
#    (6,000 SNVs, window 256) with the run_mlm.sh model size (d 64 x 2), whole process, 1 and 2
#    threads: SNVs/s and peak RSS.
# 3. luminome-mask-pairs on E. coli (4.6 Mb) and on E. coli x 8 (37 Mb, eight renamed copies):
#    MB/s and peak RSS, which should not grow with the genome.
#
# PARTS="1 2 3" (default) picks the parts. Needs release binaries and the bench example (built if
# missing), python3 with torch (PyTorch side) and with numpy (coding_snvs.py), and ../shared/data.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
steps=${2:-10}
repeats=${3:-2}
read -r -a size <<< "${SIZE:-64 2 256 8}"
bin="${BIN:-$repo/target/release}"
example="${BENCH_BIN:-$repo/target/release/examples/bench_bistrand}"
torch_python="${TORCH_PYTHON:-python3}"
torch_scan="${TORCH_SCAN:-vectorised}"
parts=" ${PARTS:-1 2 3} "
data="${DATA:-$repo/../shared/data}"
[ -x "$example" ] || (cd "$repo" && cargo build --release -q -p luminome-engine --example bench_bistrand)
if [[ $parts == *" 2 "* || $parts == *" 3 "* ]]; then
    [ -x "$bin/luminome-train" ] || (cd "$repo" && cargo build --release -q --workspace --bins)
fi
rss() { awk -F': ' '/Maximum resident/ {printf "%.0f MB", $2 / 1024}' "$1"; }
wall() { awk -F': ' '/Elapsed \(wall/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$1"; }

echo "# $(date -u +%FT%TZ) $(uname -m) $(nproc) cores; git $(cd "$repo" && git rev-parse --short HEAD)"
timed() { # label command...: the command's output, then "label process wall user sys maxrss_kb"
    local label=$1 log
    shift
    log=$(mktemp)
    /usr/bin/time -f "%e %U %S %M" -o "$log" "$@" | sed "s/^/$label /"
    echo "$label process wall_s user_s sys_s maxrss_kb $(cat "$log")"
    rm -f "$log"
}

if [[ $parts == *" 1 "* ]]; then
echo "## training step and inference (steps=$steps; d_model layers length batch = ${size[*]}; torch scan $torch_scan)"
echo "# $(lscpu | sed -n 's/^Model name: *//p'); torch $("$torch_python" -c 'import torch; print(torch.__version__)'); $example built $(date -u -r "$example" +%FT%TZ)"
echo "load before: $(cat /proc/loadavg)"
for r in $(seq 1 "$repeats"); do
    for t in 1 2; do
        timed "repeat $r threads $t pytorch " "$torch_python" "$repo/bench/bistrand/torch_bistrand.py" "$steps" \
            "${size[@]}" --threads "$t" --scan "$torch_scan"
        RAYON_NUM_THREADS=$t timed "repeat $r threads $t luminome" "$example" "$steps" "${size[@]}"
    done
done
echo "load after: $(cat /proc/loadavg)"
fi

if [[ $parts == *" 2 "* ]]; then
echo "## variant scoring"
ce="$data/genomes/celegans_1pct"
zcat "$ce/C.elegans.fa.gz" > "$out/celegans.fa"
python3 "$repo/bench/bistrand/coding_snvs.py" "$out/celegans.fa" "$ce/C.elegans.gff.gz" "$out/snvs" \
    --chroms V,X --positions 2000 --seed 1
"$bin/luminome-mask-pairs" --quiet --reference "$out/celegans.fa" --variants "$out/snvs.tsv" --window 256 \
    -o "$out/snvs.pairs.safetensors"
"$bin/luminome-mask-pairs" --quiet --fasta "$out/celegans.fa" --window 256 --seed 1 -o "$out/train.safetensors"
"$bin/luminome-train" bistrand --train "$out/train.safetensors" -o "$out/model" --d-model 64 --layers 2 \
    --batch-size 16 --steps 2 --threads 2 --quiet
# SNVs = ALT alleles (three per position); the model runs once per position's window.
n=$(awk -F'\t' '{n += split($5, a, ",")} END {print n}' "$out/snvs.tsv")
for t in 1 2; do
    /usr/bin/time -v "$bin/luminome-predict" --checkpoint "$out/model/last.safetensors" \
        --dataset "$out/snvs.pairs.safetensors" -o "$out/scores.t$t.tsv" --batch-size 64 --threads "$t" \
        --quiet 2> "$out/predict.t$t.time"
    s=$(wall "$out/predict.t$t.time")
    echo "predict threads $t: $n SNVs in $s s = $(awk -v n="$n" -v s="$s" 'BEGIN {printf "%.0f", n / s}') SNVs/s, peak RSS $(rss "$out/predict.t$t.time")"
done

fi

[[ $parts == *" 3 "* ]] || exit 0
echo "## mask-pairs"
zcat "$data/genomes/ecoli_k12_mg1655/GCF_000005845.2_ASM584v2_genomic.fna.gz" > "$out/ecoli.fa"
for i in 1 2 3 4 5 6 7 8; do sed "s/^>\([^ ]*\)/>\1_copy$i/" "$out/ecoli.fa"; done > "$out/ecoli_x8.fa"
for g in ecoli ecoli_x8; do
    mb=$(awk '!/^>/ {n += length($0)} END {printf "%.2f", n / 1e6}' "$out/$g.fa")
    /usr/bin/time -v "$bin/luminome-mask-pairs" --quiet --fasta "$out/$g.fa" --window 512 --seed 1 \
        -o "$out/$g.pairs.safetensors" 2> "$out/$g.time"
    s=$(wall "$out/$g.time")
    echo "mask-pairs $g: $mb Mb in $s s = $(awk -v m="$mb" -v s="$s" 'BEGIN {printf "%.1f", m / s}') Mb/s, peak RSS $(rss "$out/$g.time"), output $(du -m "$out/$g.pairs.safetensors" | cut -f1) MB"
done
