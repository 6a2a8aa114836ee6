#!/usr/bin/env bash
# Whole-process throughput of luminome-predict and luminome-importance (integrated gradients)
# against the PyTorch scripts doing the same on the same checkpoint (docs/benchmarks.md,
# "Prediction and integrated gradients"). Alternating, two runs each, 1 and 2 threads.
#
#   bench/engine/run_throughput.sh WORKDIR [repeats]     # from the repository root
#
# WORKDIR holds test.safetensors (GUE prom_core_all test, `luminome-tokenize --max-length 72`)
# and clf/best.safetensors (`luminome-train classify --adapter gated --d-model 128 --layers 4
# --heads 4 --ffn 512 --steps 100`); outputs are written there. Needs python3 with torch and
# /usr/bin/time. LUMINOME_BIN: the folder of the binaries (default: build this checkout's).
set -euo pipefail
work=$1
repeats=${2:-2}
root=$(pwd)
bin=${LUMINOME_BIN:-$root/target/release}
if [[ -z "${LUMINOME_BIN:-}" ]]; then
    cargo build --release -q -p luminome-predict -p luminome-importance
fi
timed() { /usr/bin/time -f "%e s %M KB" -o "$work/.time" "$@" > /dev/null; cat "$work/.time"; }
echo "# $(date -u +%FT%TZ) $(nproc) cores; git $(git rev-parse --short HEAD)"
cd "$work"
for r in $(seq 1 "$repeats"); do
    for t in 1 2; do
        echo "repeat $r threads $t predict luminome $(timed "$bin/luminome-predict" --checkpoint clf/best.safetensors --dataset test.safetensors --threads "$t" -q -o lum_predict.tsv)"
        echo "repeat $r threads $t predict pytorch $(timed python3 "$root/bench/engine/torch_predict.py" --checkpoint clf/best.safetensors --dataset test.safetensors --threads "$t" -o torch_predict.tsv --compare lum_predict.tsv)"
    done
done
for r in $(seq 1 "$repeats"); do
    for t in 1 2; do
        echo "repeat $r threads $t ig luminome $(timed "$bin/luminome-importance" --checkpoint clf/best.safetensors --dataset test.safetensors --method ig --records 300 --threads "$t" -q -o lum_ig.tsv)"
        echo "repeat $r threads $t ig pytorch $(timed python3 "$root/bench/engine/torch_importance.py" --checkpoint clf/best.safetensors --dataset test.safetensors --threads "$t" --limit 300 -o torch_ig.tsv --compare lum_ig.tsv)"
    done
done
# The agreement of the last pair of each (largest absolute differences).
python3 "$root/bench/engine/torch_predict.py" --checkpoint clf/best.safetensors --dataset test.safetensors --threads 2 -o torch_predict.tsv --compare lum_predict.tsv | tail -1
python3 "$root/bench/engine/torch_importance.py" --checkpoint clf/best.safetensors --dataset test.safetensors --threads 2 --limit 300 -o torch_ig.tsv --compare lum_ig.tsv | tail -1
