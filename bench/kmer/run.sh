#!/usr/bin/env bash
# The k-mer floor on the three GUE tasks of docs/results.md ("The k-mer floor"): tokenize each
# task in single nucleotides, fit `luminome-train kmer-linear --k 1-6 --select-k` (the penalty
# and the upper k chosen on dev by MCC, scored on test), then the scikit-learn character n-gram
# baseline on the same split (bench/kmer/sklearn_kmer.py; needs scikit-learn and pandas).
#
#   bench/kmer/run.sh [gue_dir] [work_dir] [python]      # from the repository root
set -euo pipefail
gue=${1:-../shared/data/gue}
work=${2:-work/kmer}
py=${3:-python3}
cargo build --release -q -p luminome-tokenize -p luminome-train
bin=$PWD/target/release
mkdir -p "$work"
for task in prom/prom_core_all tf/0 mouse/0; do
    name=${task//\//_}
    mkdir -p "$work/$name"
    for s in train dev test; do
        "$bin/luminome-tokenize" "$gue/$task/$s.csv" -q --scheme nucleotide -o "$work/$name/$s.safetensors"
    done
    /usr/bin/time -v "$bin/luminome-train" kmer-linear -q --train "$work/$name/train.safetensors" \
        --dev "$work/$name/dev.safetensors" --test "$work/$name/test.safetensors" \
        -o "$work/$name/kmer" --k 1-6 --select-k 2> "$work/$name/kmer.log"
    printf '%s\t%s\t%s\n' "$task" \
        "$(awk -F'\t' '$11 == 1 {print "k 1-" $2 ", l2 " $3 ", dev mcc " $10}' "$work/$name/kmer/metrics.tsv")" \
        "$(awk -F'\t' '$1 == "mcc" {print "test mcc " $2}' "$work/$name/kmer/test_metrics.tsv")"
    grep -E "Elapsed|Maximum resident" "$work/$name/kmer.log"
done
"$py" bench/kmer/sklearn_kmer.py "$gue/prom/prom_core_all" "$gue/tf/0" "$gue/mouse/0"
