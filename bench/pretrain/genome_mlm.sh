#!/usr/bin/env bash
# The genome-pretraining recipe of docs/pretrained.md: cut a genome into 128-bp windows (no N),
# tokenize them in non-overlapping 3-mers, hold out the last ~10 % of every sequence as the dev
# set, and masked-LM pretrain the d128 x 4 transformer on them. The checkpoint it leaves
# (WORK/NAME/mlm/best.safetensors) carries its tokenizer: fine-tuning data is tokenized to match
# with `luminome-tokenize --like` that checkpoint, then trained with `classify --init` it.
#
#   bench/pretrain/genome_mlm.sh FASTA NAME            # from the repository root
#   e.g. curl -fsSLo work/chr22.fa.gz https://hgdownload.soe.ucsc.edu/goldenPath/hg38/chromosomes/chr22.fa.gz
#        bench/pretrain/genome_mlm.sh work/chr22.fa.gz chr22
#
# Environment: WORK (default work/genome_mlm), BIN (default target/release), STEPS (default 1500),
# THREADS (default 1: on the 2-core VM a second thread bought nothing; run a fine-tuning job on
# the other core instead), EVAL_EVERY (default 250).
set -euo pipefail
fasta=$1 name=$2
work=${WORK:-work/genome_mlm}/$name
bin=${BIN:-target/release}
mkdir -p "$work"
# shellcheck source=bench/pretrain/split.sh
. "$(dirname "$0")/split.sh"
split_genome "$fasta" "$work"
for s in train dev; do
    [ -f "$work/$s.safetensors" ] ||
        "$bin/luminome-tokenize" "$work/$s.bed" --reference "$fasta" --scheme kmer -k 3 \
            --kmer-mode non-overlapping --max-length 46 --overflow window --window 128 --max-n 0 \
            --threads 2 -o "$work/$s.safetensors" 2>> "$work/tokenize.log"
done
# 46 tokens = [CLS] + 42 3-mers + 2 single bases + [SEP]: the two single-base tokens that end a
# 101-bp GUE row (33 3-mers + 2) are trained too.
if [ ! -f "$work/mlm/best.safetensors" ]; then
    /usr/bin/time -v "$bin/luminome-train" mlm --train "$work/train.safetensors" \
        --dev "$work/dev.safetensors" --eval-records 2000 -o "$work/mlm" \
        --d-model 128 --layers 4 --heads 4 --ffn 512 --dropout 0.1 --batch-size 64 \
        --steps "${STEPS:-1500}" --lr 1e-3 --warmup 100 --eval-every "${EVAL_EVERY:-250}" --seed 1 \
        --threads "${THREADS:-1}" 2> "$work/mlm.log"
fi
