#!/usr/bin/env bash
# The GPU session of the CUDA path (docs/engine.md, "CUDA"), run on a host with an NVIDIA GPU
# from the binaries bench/gpu/build_cuda.sh made elsewhere. Nothing here is built: a GPU host
# needs no Rust toolchain.
#
#   bench/gpu/run_gpu.sh BIN_DIR DATA_DIR OUT_DIR        # from the repository root
#
# BIN_DIR   build_cuda.sh's output (luminome-train, bench_step, cuda_check, lib/).
# DATA_DIR  train/dev/test.safetensors of GUE prom_core_all in non-overlapping 3-mers, made on
#           any machine with the CPU build (bench/train/gue_prom_core_all.sh's first step):
#             for s in train dev test; do luminome-tokenize ../shared/data/gue/prom/prom_core_all/$s.csv \
#                 --scheme kmer -k 3 --kmer-mode non-overlapping -o DATA_DIR/$s.safetensors; done
# OUT_DIR   receives one file per stage and summary.tsv.
#
# Stages (STAGES, default "check bench train"; SIZES, default "small large", the bench models;
# DEVICE, default cuda: cuda:N for another GPU, cpu for a dry run of the script itself):
#   check   cuda_check: every fused op and every step-trained family, forward and gradients,
#           CUDA against the CPU (relative tolerance 1e-4); exit status 1 when any differs.
#   bench   bench_step on CUDA: the benchmark model (d128 x 4, L72, B32) and the large one the
#           issue names (d512 x 8, L512, B64): training step, inference, sequences/s, the GPU's
#           peak memory (nvidia-smi, sampled every 100 ms); with PyTorch on the same GPU when
#           python3 can import torch with CUDA (bench/engine/torch_bench.py --device cuda).
#   train   the classifier recipe (gated adapter, batch 64, lr 5e-4, warm-up 100) and the masked
#           LM (d128 x 4, batch 64, lr 1e-3, warm-up 150) for STEPS steps (default 300), seed 1,
#           once on CUDA and once on the CPU (THREADS, default all cores): wall time of each and
#           the largest per-step difference of the training loss (metrics.tsv) between them.
#           f32 on two devices sums in other orders, so the curves agree to ~1e-5 at first and
#           drift apart within noise; the summary prints both curves' mean over the last 50 steps.
set -euo pipefail
bin=$(realpath "$1")
data=$(realpath "$2")
out=$3
stages=${STAGES:-"check bench train"}
steps=${STEPS:-300}
threads=${THREADS:-$(nproc)}
device=${DEVICE:-cuda}
mkdir -p "$out"
out=$(realpath "$out")
export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
summary=$out/summary.tsv
check_failed=0
: > "$summary"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

# with_peak_memory PREFIX CMD...: runs CMD (its output into PREFIX.txt) while sampling the
# GPU's used memory every 100 ms (PREFIX.mem); prints the peak in MiB.
with_peak_memory() {
    local log=$1
    shift
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$log.mem" &
    local smi=$!
    local rc=0
    "$@" > "$log.txt" || rc=$?
    kill "$smi" 2> /dev/null || true
    wait "$smi" 2> /dev/null || true
    sort -n "$log.mem" | tail -1
    return $rc
}

if [[ " $stages " == *" check "* ]]; then
    echo "== check: $device against the CPU"
    # A difference is reported (summary, exit status) but does not stop the other stages.
    "$bin/cuda_check" "$device" | tee "$out/cuda_check.tsv" || check_failed=1
    printf 'check\t%s\n' "$(grep -c $'\tok$' "$out/cuda_check.tsv") ok of $(($(wc -l < "$out/cuda_check.tsv") - 1))" >> "$summary"
fi

if [[ " $stages " == *" bench "* ]]; then
    have_torch=0
    if python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
        have_torch=1
    fi
    for size in ${SIZES:-small large}; do
        if [[ $size == large ]]; then
            sizes=(BENCH_D=512 BENCH_LAYERS=8 BENCH_HEADS=8 BENCH_FFN=2048 BENCH_LEN=512 BENCH_BATCH=64)
        else
            sizes=()
        fi
        echo "== bench $size: luminome"
        peak=$(with_peak_memory "$out/bench_$size.luminome" \
            env "${sizes[@]}" BENCH_DEVICE="$device" "$bin/bench_step" 20 0.1)
        cat "$out/bench_$size.luminome.txt"
        printf 'bench %s luminome\t%s\tpeak GPU MiB %s\n' "$size" \
            "$(tr '\n' ' ' < "$out/bench_$size.luminome.txt")" "$peak" >> "$summary"
        if [[ $have_torch == 1 ]]; then
            for precision in f32 bf16; do
                echo "== bench $size: pytorch $precision"
                peak=$(with_peak_memory "$out/bench_$size.torch_$precision" \
                    env "${sizes[@]}" python3 bench/engine/torch_bench.py --device cuda \
                    --precision "$precision" --steps 20)
                cat "$out/bench_$size.torch_$precision.txt"
                printf 'bench %s pytorch %s\t%s\tpeak GPU MiB %s\n' "$size" "$precision" \
                    "$(tail -n +2 "$out/bench_$size.torch_$precision.txt" | tr '\n' ' ')" "$peak" >> "$summary"
            done
        else
            printf 'bench %s pytorch\tnot run: python3 cannot import torch with CUDA here\n' "$size" >> "$summary"
        fi
    done
fi

if [[ " $stages " == *" train "* ]]; then
    common=(--train "$data/train.safetensors" --dev "$data/dev.safetensors" --batch-size 64
        --steps "$steps" --eval-every "$steps" --seed 1 -q)
    for family in classify mlm; do
        if [[ $family == classify ]]; then
            args=(classify "${common[@]}" --test "$data/test.safetensors" --adapter gated
                --lr 5e-4 --warmup 100 --metric dev_mcc --no-kmer-floor)
        else
            args=(mlm "${common[@]}" --eval-records 1000 --d-model 128 --layers 4 --heads 4
                --ffn 512 --dropout 0.1 --lr 1e-3 --warmup 150)
        fi
        for side in device cpu; do
            dev=$device
            [[ $side == cpu ]] && dev=cpu
            run=$out/train_${family}_$side
            rm -rf "$run"
            echo "== train $family on $dev"
            start=$(date +%s.%N)
            "$bin/luminome-train" "${args[@]}" --device "$dev" --threads "$threads" -o "$run"
            awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }' > "$run.seconds"
        done
        python3 - "$out/train_${family}_device" "$out/train_${family}_cpu" "$family" >> "$summary" << 'EOF'
import csv, sys
def losses(run):
    with open(f"{run}/metrics.tsv") as f:
        return [float(r["loss"]) for r in csv.DictReader(f, delimiter="\t") if r["loss"]]
gpu, cpu = losses(sys.argv[1]), losses(sys.argv[2])
n = min(len(gpu), len(cpu))
diff = [abs(a - b) for a, b in zip(gpu[:n], cpu[:n])]
first = next((i + 1 for i, d in enumerate(diff) if d > 1e-4), None)
secs = [open(f"{r}.seconds").read().strip() for r in sys.argv[1:3]]
tail = lambda v: sum(v[-50:]) / len(v[-50:])
print(f"train {sys.argv[3]}\tsteps {n}; seconds device {float(secs[0]):.1f} cpu {float(secs[1]):.1f}; "
      f"loss step 1 device {gpu[0]:.6f} cpu {cpu[0]:.6f}; max |diff| {max(diff):.2e} "
      f"(first step > 1e-4: {first}); mean of last 50 device {tail(gpu):.4f} cpu {tail(cpu):.4f}")
EOF
    done
fi
echo "== summary ($summary)"
cat "$summary"
if [[ $check_failed == 1 ]]; then
    echo "cuda_check: $device and the CPU differ (see $out/cuda_check.tsv)" >&2
    exit 1
fi
