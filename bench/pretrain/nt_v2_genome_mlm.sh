#!/usr/bin/env bash
# docs/results.md, "The four adapters on a Nucleotide Transformer v2 pretrained here": masked-LM
# pretraining of an NT-v2-architecture encoder (pre-LN, rotary, SwiGLU; the published parameter
# names) on one human chromosome, in the published 6-mer vocabulary.
#
#   bench/pretrain/nt_v2_genome_mlm.sh FASTA NAME          # from the repository root
#   e.g. bench/pretrain/nt_v2_genome_mlm.sh ../shared/data/hg38_chr22/chr22.fa.gz chr22
#
# Windows of 148 bp without N: 24 6-mers + 4 single bases + <cls> = 29 tokens, so the single-base
# tokens that end a 70-bp GUE prom_core_all row (11 6-mers + 4) are trained too. Dev = each
# record's last ~10 % (chr22: from 46,000,000), as bench/pretrain/genome_mlm.sh cuts it.
# The vocabulary is the published one (vocab.txt, tokenizer_config.json and
# special_tokens_map.json of InstaDeepAI/nucleotide-transformer-v2-*, in the test fixture).
#
# Environment: WORK (default work/nt_v2_mlm), BIN (default target/release), STEPS (default 2000),
# BATCH (default 128), THREADS (default 1), EVAL_EVERY (default 250), D/LAYERS/HEADS/FFN
# (default 128/4/4/512).
set -euo pipefail
fasta=$1 name=$2
work=${WORK:-work/nt_v2_mlm}/$name
bin=${BIN:-target/release}
vocab=tools/luminome-engine/tests/fixtures/nt_v2/tiny
mkdir -p "$work"
# shellcheck source=bench/pretrain/split.sh
. "$(dirname "$0")/split.sh"
split_genome "$fasta" "$work"
for s in train dev; do
    [ -f "$work/$s.safetensors" ] ||
        "$bin/luminome-tokenize" "$work/$s.bed" --reference "$fasta" --scheme hf --tokenizer "$vocab" \
            --max-length 29 --overflow window --window 148 --max-n 0 --threads 2 \
            -o "$work/$s.safetensors" 2>> "$work/tokenize.log"
done
if [ ! -f "$work/mlm/best.safetensors" ]; then
    /usr/bin/time -v "$bin/luminome-train" mlm --backbone nt-v2 --train "$work/train.safetensors" \
        --dev "$work/dev.safetensors" --eval-records 2000 -o "$work/mlm" \
        --d-model "${D:-128}" --layers "${LAYERS:-4}" --heads "${HEADS:-4}" --ffn "${FFN:-512}" \
        --dropout 0.1 --batch-size "${BATCH:-128}" --steps "${STEPS:-2000}" --lr 1e-3 --warmup 100 \
        --eval-every "${EVAL_EVERY:-250}" --seed 1 --threads "${THREADS:-1}" 2> "$work/mlm.log"
fi
