#!/usr/bin/env bash
# The genomic retrieval task of docs/dual.md, end to end: make the task from E. coli, score the
# non-learned baselines, train the dual encoder with standard and genetic attention (seeds 1-3,
# all else equal), evaluate each on the test queries (mixed strands, all forward, all reverse-
# complemented) against every test window, and summarise (bench/dual/summarize.py).
#
#   bench/dual/run.sh OUT [steps]        # from the repository root; needs release binaries and
#                                        # python3 with numpy (the baselines)
#   THREADS=1 ATTENTIONS=genetic bench/dual/run.sh OUT 500   # one arm, one thread (two arms can
#                                        # then run side by side once the task is tokenised)
#
# Each training run takes ~20 min on two cores of the 2-core VM (1,500 steps).
set -euo pipefail
out=${1:?usage: bench/dual/run.sh OUT [steps]}
steps=${2:-1500}
bin=${BIN:-target/release}
py=${PYTHON:-python3}
threads=${THREADS:-2}               # threads per training run
attentions=${ATTENTIONS:-standard genetic}  # e.g. ATTENTIONS=genetic to run one arm
mkdir -p "$out"
python3 bench/dual/make_task.py --out "$out/task" > "$out/task.log"
t=$out/task
for s in train dev test test.fwd test.rc; do
    [[ -f $t/$s.pairs.safetensors ]] || "$bin/luminome-tokenize" "$t/$s.pairs.tsv" --format pairs \
        --scheme kmer -k 6 -o "$t/$s.pairs.safetensors" --quiet
done
for s in dev test; do
    [[ -f $t/$s.corpus.safetensors ]] || "$bin/luminome-tokenize" "$t/$s.corpus.fa" \
        --like "$t/train.pairs.safetensors" -o "$t/$s.corpus.safetensors" --quiet
done
[[ -f $out/baselines.tsv ]] || "$py" bench/dual/baselines.py \
    --pairs "$t/test.pairs.tsv" "$t/test.fwd.pairs.tsv" "$t/test.rc.pairs.tsv" \
    --corpus "$t/test.corpus.fa" --dev-pairs "$t/dev.pairs.tsv" --dev-corpus "$t/dev.corpus.fa" \
    --out "$out/baselines.tsv" > "$out/baselines.log"
for seed in 1 2 3; do
    for attention in $attentions; do
        run=$out/$attention.seed$seed
        if [[ ! -f $run/best.safetensors ]]; then
            /usr/bin/time -v "$bin/luminome-train" dual --train "$t/train.pairs.safetensors" \
                --dev "$t/dev.pairs.safetensors" -o "$run" --shared-encoder --attention "$attention" \
                --d-model 64 --layers 1 --heads 4 --ffn 256 --dropout 0.1 --temperature 0.05 \
                --batch-size 32 --lr 1e-3 --warmup 100 --steps "$steps" --eval-every 250 \
                --seed "$seed" --threads "$threads" --quiet 2> "$run.time.log"
        fi
        for q in test test.fwd test.rc; do
            [[ -f $run/$q.metrics.tsv ]] || "$bin/luminome-predict" --checkpoint "$run/best.safetensors" \
                --dataset "$t/$q.pairs.safetensors" --corpus "$t/test.corpus.safetensors" \
                -o "$run/$q.ranks.tsv" --metrics "$run/$q.metrics.tsv" --in-batch-size 32 \
                --threads "$threads" --quiet
        done
    done
done
python3 bench/dual/summarize.py "$out" | tee "$out/summary.md"
