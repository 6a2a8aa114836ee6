#!/usr/bin/env bash
# The GPU session of the CUDA path (docs/engine.md, "CUDA"), run on a host with an NVIDIA GPU
# from the binaries bench/gpu/build_cuda.sh made elsewhere. Nothing here is built: a GPU host
# needs no Rust toolchain.
#
#   bench/gpu/run_gpu.sh BIN_DIR DATA_DIR OUT_DIR        # from the repository root
#
# BIN_DIR   build_cuda.sh's output (luminome-train, -predict, -importance, bench_step, cuda_check;
#           lib/ optional: without it the host's CUDA 13 libraries are used).
# DATA_DIR  bench/gpu/prepare_data.sh's output, made on any machine with the CPU build:
#           train/dev/test.safetensors of GUE prom_core_all in non-overlapping 3-mers, and the
#           bi-strand windows and SNV windows of the variant stage.
# OUT_DIR   receives one file per stage, summary.tsv and stages.log (each stage's start).
#
# Stages (STAGES, default "check bench train variants profile"; SIZES, default "small large", the
# bench models, LARGE_BATCH the large one's batch (default 64); DEVICE, default cuda: cuda:N for another GPU, cpu for a dry run of the script
# itself). Each command runs under a time limit (LIMIT seconds, default 120), so one that hangs
# costs its limit, not the session; a command that fails or runs out is written in the summary
# and the next one runs.
#   check    cuda_check: every fused op and every step-trained family, forward and gradients,
#            CUDA against the CPU (relative tolerance 1e-4); exit status 1 when any differs.
#   bench    bench_step on CUDA: the benchmark model (d128 x 4, L72, B32) and the large one the
#            issue names (d512 x 8, L512, B64): training step, inference, sequences/s, the GPU's
#            peak memory and mean utilisation (nvidia-smi, sampled every 100 ms); with PyTorch
#            on the same GPU in f32 and bf16 autocast when python3 imports torch with CUDA
#            (bench/engine/torch_bench.py --device cuda).
#   train    the classifier recipe (gated adapter, batch 64, lr 5e-4, warm-up 100) and the masked
#            LM (d128 x 4, batch 64, lr 1e-3, warm-up 150; TRAIN_FAMILIES, default
#            "classify mlm", chooses) for STEPS steps (default 300), seed 1,
#            once on CUDA and once on the CPU (THREADS, default all cores): wall time of each and
#            the largest per-step difference of the training loss (metrics.tsv) between them.
#            f32 on two devices sums in other orders, so the curves agree to ~1e-5 at first and
#            drift apart within noise; the summary prints both curves' mean over the last 50
#            steps. Then the CUDA-trained classifier predicts the test set on CUDA and on the
#            CPU: the largest probability difference and both MCCs.
#   variants the bi-strand family at PlantCaduceus's small size (d 384 x 8, untied strands,
#            18.5 M parameters, windows of 512): VAR_STEPS (default 5) training steps on each
#            device (wall time; VAR_CPU_TRAIN=0: on CUDA alone),
#            then variant scoring (luminome-predict, log-likelihood ratios) of the same SNV
#            windows on both (SNVs/s, largest LLR difference), and of a larger set on CUDA alone.
#   caduceus zero-shot SNV scoring with a random checkpoint in PlantCaduceus_l20's published
#            layout (20.9 M parameters; regrown from DATA_DIR/plantcad_l20_shrunk by
#            bench/gpu/regrow_checkpoint.py): a few SNVs on both devices (SNVs/s, largest LLR
#            difference) and 6,000 on the device alone, one strand (PlantCaduceus' own score)
#            and both; CAD_BATCHES (default 64) the batch sizes tried on the device.
#   attrib   luminome-importance (saliency, ig, ism, deepliftshap; gates for the gated model) of
#            two CNN classifiers on the device and on the CPU: seconds and the largest score
#            difference; ism and deepliftshap of ATTRIB_LARGE records on the device alone.
#   saturate in-silico saturation mutagenesis (mask-pairs --saturate, predict --npz) with the
#            l20-sized checkpoint: 12 bases on both devices (largest `ism` difference), 2,000 on
#            the device alone; SAT_BATCH (default 128) the batch.
#   shards   the 6,000 SNVs with the l20-sized checkpoint in one job and as SHARDS (default 2)
#            `--shard I/N` parts running at once on the same GPU, gathered on the CPU: seconds,
#            and whether the gathered TSV and bedGraph are byte-identical to the one job's.
#   dnabert2 DNABERT-2 at its published size (116.5 M encoder parameters, random weights in the
#            published layout: bench/dnabert2/make_random_checkpoint.py, shrunk to travel) as
#            the backbone of `classify --init` (mean adapter, batch 32): DB2_STEPS (default 30)
#            fine-tuning steps on the device and on the CPU (seconds, loss curves), and the
#            test set predicted on the device.
#   profile  where CUDA training steps of the benchmark model spend their time: ncu's kernel
#            durations (one metric, clocks left alone) over the first PROFILE_LAUNCHES kernels
#            of bench_step (a few steps), when ncu can read the GPU's counters there.
set -uo pipefail
bin=$(realpath "$1")
data=$(realpath "$2")
out=$3
stages=${STAGES:-"check bench train variants profile"}
steps=${STEPS:-300}
threads=${THREADS:-$(nproc)}
device=${DEVICE:-cuda}
limit=${LIMIT:-120}
mkdir -p "$out"
out=$(realpath "$out")
source "$(dirname "${BASH_SOURCE[0]}")/cuda_libs.sh"
summary=$out/summary.tsv
check_failed=0
: > "$summary"
: > "$out/stages.log"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
printf 'host\t%s; %s cores; %s\n' "$(cat "$out/gpu.txt")" "$(nproc)" "$(date -u +%FT%TZ)" >> "$summary"

stage() {
    printf '%s\t%s\n' "$(date -u +%T)" "$*" | tee -a "$out/stages.log"
}

# limited CMD...: CMD under the time limit; a failure or time-out is noted in the summary.
limited() {
    local rc=0
    timeout "$limit" "$@" || rc=$?
    if [[ $rc != 0 ]]; then
        printf 'FAILED\t%s (exit %s%s)\n' "$*" "$rc" "$([[ $rc == 124 ]] && echo ", over ${limit} s")" >> "$summary"
    fi
    return $rc
}

# seconds CMD...: runs CMD (limited) and prints its wall time in seconds.
seconds() {
    local start rc=0
    start=$(date +%s.%N)
    limited "$@" > /dev/null || rc=$?
    awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f\n", b - a }'
    return $rc
}

# with_gpu_samples PREFIX CMD...: runs CMD (limited; its output into PREFIX.txt) while sampling
# the GPU's used memory and utilisation every 100 ms (PREFIX.mem); prints the peak memory in MiB
# and the mean utilisation in % over the samples.
with_gpu_samples() {
    local log=$1
    shift
    nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader,nounits -lms 100 \
        > "$log.mem" &
    local smi=$!
    local rc=0
    limited "$@" > "$log.txt" || rc=$?
    kill "$smi" 2> /dev/null || true
    wait "$smi" 2> /dev/null || true
    awk -F', ' '{ if ($1 > m) m = $1; u += $2; n++ } END { printf "peak GPU MiB %d, mean utilisation %.0f %%", m, n ? u / n : 0 }' "$log.mem"
    return $rc
}

if [[ " $stages " == *" check "* ]]; then
    stage "check: $device against the CPU"
    # A difference is reported (summary, exit status) but does not stop the other stages.
    limited "$bin/cuda_check" "$device" > "$out/cuda_check.tsv" 2> "$out/cuda_check.err" || check_failed=1
    cat "$out/cuda_check.tsv" "$out/cuda_check.err"
    printf 'check\t%s\n' "$(grep -c $'\tok$' "$out/cuda_check.tsv") ok of $(($(wc -l < "$out/cuda_check.tsv") - 1)): $(grep -v $'\tok$' "$out/cuda_check.tsv" | tail -n +2 | cut -f1 | tr '\n' ' ')" >> "$summary"
fi

if [[ " $stages " == *" bench "* ]]; then
    have_torch=0
    if python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
        have_torch=1
    fi
    for size in ${SIZES:-small large}; do
        if [[ $size == large ]]; then
            sizes=(BENCH_D=512 BENCH_LAYERS=8 BENCH_HEADS=8 BENCH_FFN=2048 BENCH_LEN=512
                BENCH_BATCH="${LARGE_BATCH:-64}")
        else
            sizes=()
        fi
        stage "bench $size: luminome"
        samples=$(with_gpu_samples "$out/bench_$size.luminome" \
            env "${sizes[@]}" BENCH_DEVICE="$device" "$bin/bench_step" 20 0.1)
        cat "$out/bench_$size.luminome.txt"
        printf 'bench %s luminome f32\t%s\t%s\n' "$size" \
            "$(tr '\n' ' ' < "$out/bench_$size.luminome.txt")" "$samples" >> "$summary"
        if [[ $have_torch == 1 ]]; then
            for precision in f32 bf16; do
                stage "bench $size: pytorch $precision"
                samples=$(with_gpu_samples "$out/bench_$size.torch_$precision" \
                    env "${sizes[@]}" python3 bench/engine/torch_bench.py --device cuda \
                    --precision "$precision" --steps 20)
                cat "$out/bench_$size.torch_$precision.txt"
                printf 'bench %s pytorch %s\t%s\t%s\n' "$size" "$precision" \
                    "$(tail -n +2 "$out/bench_$size.torch_$precision.txt" | tr '\n' ' ')" "$samples" >> "$summary"
            done
        else
            printf 'bench %s pytorch\tnot run: python3 cannot import torch with CUDA here\n' "$size" >> "$summary"
        fi
    done
fi

# compare_losses RUN_DEVICE RUN_CPU NAME: the summary line of two training runs' loss curves.
compare_losses() {
    python3 - "$@" << 'EOF'
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
}

# compare_columns A.tsv B.tsv PREFIX NAME: the largest difference of the columns whose names
# start with PREFIX between two prediction tables of the same records.
compare_columns() {
    python3 - "$@" << 'EOF'
import csv, sys
def cols(path):
    with open(path) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    keys = [k for k in rows[0] if k.startswith(sys.argv[3])]
    return [[num(r[k]) for k in keys] for r in rows], keys
def num(x):
    try:
        return float(x)
    except ValueError:  # NA: a column the run did not compute (llr_rc of one strand)
        return None
a, keys = cols(sys.argv[1])
b, _ = cols(sys.argv[2])
diff = max((abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)
            if x is not None and y is not None), default=float("nan"))
print(f"{sys.argv[4]}\t{len(a)} records against {len(b)}; columns {','.join(keys)}; max |device - cpu| {diff:.2e}")
EOF
}

if [[ " $stages " == *" train "* ]]; then
    common=(--train "$data/train.safetensors" --dev "$data/dev.safetensors" --batch-size 64
        --steps "$steps" --eval-every "$steps" --seed 1 -q)
    for family in ${TRAIN_FAMILIES:-classify mlm}; do
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
            stage "train $family on $dev"
            seconds "$bin/luminome-train" "${args[@]}" --device "$dev" --threads "$threads" -o "$run" > "$run.seconds"
        done
        compare_losses "$out/train_${family}_device" "$out/train_${family}_cpu" "$family" >> "$summary"
    done
    # The CUDA-trained classifier on both devices (the checkpoint is plain safetensors).
    ckpt=$out/train_classify_device/best.safetensors
    for dev in "$device" cpu; do
        stage "predict the test set with the $device-trained classifier on $dev"
        limited "$bin/luminome-predict" --checkpoint "$ckpt" --dataset "$data/test.safetensors" \
            --device "$dev" --threads "$threads" --quiet -o "$out/predict_classify.$dev.tsv" \
            --metrics "$out/predict_classify.$dev.metrics.tsv"
    done
    compare_columns "$out/predict_classify.$device.tsv" "$out/predict_classify.cpu.tsv" prob_ \
        "predict classifier trained on $device" >> "$summary"
    for dev in "$device" cpu; do
        printf 'predict classifier on %s\t%s\n' "$dev" \
            "$(grep -E '^(mcc|accuracy|auroc)\b' "$out/predict_classify.$dev.metrics.tsv" | tr '\t\n' '= ')" >> "$summary"
    done
fi

if [[ " $stages " == *" variants "* ]]; then
    vsize=(--d-model "${VAR_D:-384}" --layers "${VAR_LAYERS:-8}")
    vsteps=${VAR_STEPS:-5}
    for side in device cpu; do
        dev=$device
        [[ $side == cpu ]] && dev=cpu
        [[ $side == cpu && ${VAR_CPU_TRAIN:-1} == 0 ]] && continue
        run=$out/bistrand_$side
        rm -rf "$run"
        stage "variants: train the bi-strand model $vsteps steps on $dev"
        secs=$(seconds "$bin/luminome-train" bistrand --train "$data/bistrand_train.safetensors" \
            "${vsize[@]}" --batch-size 16 --steps "$vsteps" --seed 1 --device "$dev" \
            --threads "$threads" -q -o "$run")
        printf 'variants train %s\t%s steps of batch 16 x 512 (d %s x %s): %s s whole process\n' \
            "$dev" "$vsteps" "${VAR_D:-384}" "${VAR_LAYERS:-8}" "$secs" >> "$summary"
    done
    # Scoring with the CUDA-trained model when there is one (else the CPU's).
    model=$out/bistrand_device/last.safetensors
    [[ -f $model ]] || model=$out/bistrand_cpu/last.safetensors
    for set in small large; do
        snvs=$(awk -F'\t' '{n += split($5, a, ",")} END {print n}' "$data/snvs_$set.tsv")
        for dev in "$device" cpu; do
            [[ $set == large && $dev == cpu ]] && continue
            stage "variants: score $snvs SNVs ($set) on $dev"
            secs=$(seconds "$bin/luminome-predict" --checkpoint "$model" \
                --dataset "$data/snvs_$set.pairs.safetensors" --batch-size 64 --device "$dev" \
                --threads "$threads" --quiet -o "$out/variants_$set.$dev.tsv")
            printf 'variants score %s on %s\t%s SNVs in %s s whole process = %s SNVs/s\n' "$set" "$dev" \
                "$snvs" "$secs" "$(awk -v n="$snvs" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')" >> "$summary"
        done
    done
    compare_columns "$out/variants_small.$device.tsv" "$out/variants_small.cpu.tsv" llr \
        "variants LLR" >> "$summary"
fi

# regrow_caduceus: the random PlantCaduceus_l20-sized checkpoint at $cad, regrown once from the
# shrunk copy that travelled (stages caduceus, saturate, shards).
cad=$out/plantcad_l20
regrow_caduceus() {
    [[ -f $cad/model.safetensors ]] && return
    stage "caduceus: regrow the l20 checkpoint"
    limited python3 bench/gpu/regrow_checkpoint.py regrow "$data/plantcad_l20_shrunk" "$cad"
}

if [[ " $stages " == *" caduceus "* ]]; then
    regrow_caduceus
    for set in small large; do
        snvs=$(awk -F'\t' '{n += split($5, a, ",")} END {print n}' "$data/snvs_cad_$set.tsv")
        for strands in forward both; do
            for dev in "$device" cpu; do
                [[ $set == large && $dev == cpu ]] && continue
                for batch in ${CAD_BATCHES:-64}; do
                    [[ $dev == cpu && $batch != "${CAD_BATCHES%% *}" ]] && continue
                    stage "caduceus: score $snvs SNVs ($set, $strands, batch $batch) on $dev"
                    scores=$out/caduceus_$set.$strands.$dev.b$batch.tsv
                    secs=$(seconds "$bin/luminome-predict" --checkpoint "$cad" \
                        --dataset "$data/snvs_cad_$set.pairs.safetensors" --strands "$strands" \
                        --batch-size "$batch" --device "$dev" --threads "$threads" --quiet \
                        -o "$scores")
                    printf 'caduceus score %s %s on %s batch %s\t%s SNVs in %s s whole process = %s SNVs/s\n' \
                        "$set" "$strands" "$dev" "$batch" "$snvs" "$secs" \
                        "$(awk -v n="$snvs" -v s="$secs" 'BEGIN { printf "%.1f", n / s }')" >> "$summary"
                done
            done
            b=${CAD_BATCHES%% *}
            b=${b:-64}
            [[ $set == small ]] && compare_columns "$out/caduceus_small.$strands.$device.b$b.tsv" \
                "$out/caduceus_small.$strands.cpu.b$b.tsv" llr "caduceus LLR $strands" >> "$summary"
        done
    done
fi

if [[ " $stages " == *" attrib "* ]]; then
    # Attribution on the device against the CPU: the CNN classifiers prepare_data.sh trained
    # (GUE prom_core_all rows of 70 bp; `cnn` under the mean adapter, `gated` under DynamicGated),
    # every method, ATTRIB_RECORDS (default 200) test records on both: whole-process seconds and
    # the largest difference of the per-base scores; then ATTRIB_LARGE (default 2000) records on
    # the device alone for ism and deepliftshap (the costly methods).
    n=${ATTRIB_RECORDS:-200}
    for model in cnn gated; do
        methods="saliency ig ism deepliftshap"
        [[ $model == gated ]] && methods="gates $methods"
        for method in $methods; do
            for dev in "$device" cpu; do
                stage "attrib: $model $method, $n records on $dev"
                secs=$(seconds "$bin/luminome-importance" --checkpoint "$data/attrib/$model/best.safetensors" \
                    --dataset "$data/attrib/test.safetensors" --method "$method" --records "$n" \
                    --device "$dev" --threads "$threads" -q -o "$out/attrib_$model.$method.$dev.tsv")
                printf 'attrib %s %s on %s\t%s records in %s s whole process\n' "$model" "$method" \
                    "$dev" "$n" "$secs" >> "$summary"
            done
            compare_columns "$out/attrib_$model.$method.$device.tsv" "$out/attrib_$model.$method.cpu.tsv" \
                score "attrib $model $method scores" >> "$summary"
        done
        for method in ism deepliftshap; do
            large=${ATTRIB_LARGE:-2000}
            stage "attrib: $model $method, $large records on $device"
            secs=$(seconds "$bin/luminome-importance" --checkpoint "$data/attrib/$model/best.safetensors" \
                --dataset "$data/attrib/test.safetensors" --method "$method" --records "$large" \
                --device "$device" --threads "$threads" -q -o "$out/attrib_large_$model.$method.tsv")
            printf 'attrib large %s %s on %s\t%s records in %s s whole process = %s records/s\n' \
                "$model" "$method" "$device" "$large" "$secs" \
                "$(awk -v n="$large" -v s="$secs" 'BEGIN { printf "%.1f", n / s }')" >> "$summary"
            rm -f "$out/attrib_large_$model.$method.tsv"
        done
    done
fi

if [[ " $stages " == *" saturate "* ]]; then
    # In-silico saturation mutagenesis with the l20-sized checkpoint (luminome-mask-pairs
    # --saturate, one masked window per base): a short interval on both devices (seconds, the
    # largest difference of the npz `ism` arrays), the long intervals on the device alone.
    regrow_caduceus
    for set in small large; do
        bases=$(awk -F'\t' '{n += $3 - $2} END {print n}' "$data/saturate_$set.bed")
        for strands in forward both; do
            for dev in "$device" cpu; do
                [[ $set == large && $dev == cpu ]] && continue
                stage "saturate: $bases bases ($set, $strands) on $dev"
                secs=$(seconds "$bin/luminome-predict" --checkpoint "$cad" \
                    --dataset "$data/saturate_$set.safetensors" --strands "$strands" \
                    --batch-size "${SAT_BATCH:-128}" --device "$dev" --threads "$threads" --quiet \
                    -o "$out/saturate_$set.$strands.$dev.tsv" --npz "$out/saturate_$set.$strands.$dev.npz")
                printf 'saturate %s %s on %s\t%s bases (x3 substitutions) in %s s whole process = %s bases/s\n' \
                    "$set" "$strands" "$dev" "$bases" "$secs" \
                    "$(awk -v n="$bases" -v s="$secs" 'BEGIN { printf "%.1f", n / s }')" >> "$summary"
            done
            [[ $set == small ]] && python3 - "$out/saturate_small.$strands" "$device" "$strands" >> "$summary" << 'EOF'
import sys
import numpy as np
a, b = (np.load(f"{sys.argv[1]}.{d}.npz") for d in (sys.argv[2], "cpu"))
same = all(np.array_equal(a[k], b[k]) for k in ("onehot", "chrom", "start", "end"))
print(f"saturate npz {sys.argv[3]}\tism {a['ism'].shape}: max |device - cpu| "
      f"{np.abs(a['ism'] - b['ism']).max():.2e}; onehot/chrom/start/end equal: {same}")
EOF
        done
        rm -f "$out"/saturate_large.*.tsv
    done
fi

if [[ " $stages " == *" shards "* ]]; then
    # Sharded variant scoring on one GPU (docs/scale-out.md): the 6,000 SNVs (large set) in one job, then as
    # SHARDS (default 2) parts run at the same time on the same GPU and gathered; the gathered
    # outputs must be byte-identical to the one job's (each part is whole batches of one run).
    regrow_caduceus
    shards=${SHARDS:-2}
    b=${SHARD_BATCH:-256}
    one=(--checkpoint "$cad" --dataset "$data/snvs_cad_large.pairs.safetensors" --batch-size "$b"
        --device "$device" --threads "$threads" --quiet)
    stage "shards: one job"
    secs=$(seconds "$bin/luminome-predict" "${one[@]}" -o "$out/shards_one.tsv" --bedgraph "$out/shards_one.bedgraph")
    snvs=$(awk -F'\t' '{n += split($5, a, ",")} END {print n}' "$data/snvs_cad_large.tsv")
    printf 'shards one job\t%s SNVs, batch %s: %s s whole process\n' "$snvs" "$b" "$secs" >> "$summary"
    stage "shards: $shards parts at once on one GPU"
    start=$(date +%s.%N)
    for i in $(seq 1 "$shards"); do
        limited "$bin/luminome-predict" "${one[@]}" --shard "$i/$shards" -o "$out/shards_$i.part.safetensors" &
    done
    wait
    parts_s=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    gather_s=$(seconds "$bin/luminome-predict" --checkpoint "$cad" --batch-size "$b" \
        --dataset "$data/snvs_cad_large.pairs.safetensors" --device cpu --threads 1 --quiet \
        --gather "$out"/shards_*.part.safetensors -o "$out/shards_gathered.tsv" \
        --bedgraph "$out/shards_gathered.bedgraph")
    same=no
    cmp -s "$out/shards_one.tsv" "$out/shards_gathered.tsv" &&
        cmp -s "$out/shards_one.bedgraph" "$out/shards_gathered.bedgraph" && same=yes
    printf 'shards %s at once\tparts %s s (all running together), gather %s s on the CPU; TSV and bedGraph byte-identical to the one job: %s\n' \
        "$shards" "$parts_s" "$gather_s" "$same" >> "$summary"
    rm -f "$out"/shards_*.part.safetensors "$out"/shards_*.tsv
fi

if [[ " $stages " == *" dnabert2 "* ]]; then
    # DNABERT-2 at its published size (random weights in the published layout, regrown from the
    # shrunk copy that travelled) as a classifier backbone: DB2_STEPS (default 30) fine-tuning
    # steps of the mean adapter on GUE prom_core_all tokenized with the published tokenizer, on
    # the device and on the CPU (seconds, loss curves), then the test set predicted on the device.
    db2=$out/dnabert2_117m
    stage "dnabert2: regrow the 117M checkpoint"
    limited python3 bench/gpu/regrow_checkpoint.py regrow "$data/dnabert2_shrunk" "$db2"
    db2_steps=${DB2_STEPS:-30}
    for side in device cpu; do
        dev=$device
        [[ $side == cpu ]] && dev=cpu
        run=$out/train_dnabert2_$side
        rm -rf "$run"
        stage "dnabert2: fine-tune $db2_steps steps on $dev"
        seconds "$bin/luminome-train" classify --init "$db2" --adapter mean \
            --train "$data/dnabert2/train.safetensors" --dev "$data/dnabert2/dev.safetensors" \
            --batch-size 32 --steps "$db2_steps" --eval-every "$db2_steps" --warmup 5 --seed 1 \
            --device "$dev" --threads "$threads" -q -o "$run" > "$run.seconds"
    done
    compare_losses "$out/train_dnabert2_device" "$out/train_dnabert2_cpu" "dnabert2 (117M, batch 32)" >> "$summary"
    recs=$(python3 -c "import json,struct,sys; f=open(sys.argv[1],'rb'); n=struct.unpack('<Q',f.read(8))[0]; h=json.loads(f.read(n)); print(h['input_ids']['shape'][0])" "$data/dnabert2/test.safetensors" 2> /dev/null || echo '?')
    stage "dnabert2: predict $recs test records on $device"
    secs=$(seconds "$bin/luminome-predict" --checkpoint "$out/train_dnabert2_device/last.safetensors" \
        --dataset "$data/dnabert2/test.safetensors" --batch-size 128 --device "$device" \
        --threads "$threads" --quiet -o "$out/predict_dnabert2.tsv")
    printf 'dnabert2 predict on %s\t%s records in %s s whole process\n' "$device" "$recs" "$secs" >> "$summary"
    rm -rf "$db2" "$out"/train_dnabert2_*/*.safetensors "$out/predict_dnabert2.tsv"
fi

if [[ " $stages " == *" profile "* ]]; then
    stage "profile: ncu kernel durations of a training step (benchmark model)"
    if command -v ncu > /dev/null; then
        # bench_step 1: 4 training steps, then 4 inference passes; the first PROFILE_LAUNCHES
        # kernels (default 1500) are timed one by one within PROFILE_LIMIT seconds (default
        # 60). ncu serialises them: kernel durations, no wall time.
        limit=${PROFILE_LIMIT:-60}
        BENCH_DEVICE=$device limited ncu --clock-control none --metrics gpu__time_duration.sum \
            --launch-count "${PROFILE_LAUNCHES:-1500}" --csv --print-units base \
            "$bin/bench_step" 1 0.1 > "$out/profile_ncu.csv" 2> "$out/profile_ncu.err"
        python3 bench/gpu/ncu_summary.py "$out/profile_ncu.csv" >> "$summary" 2>> "$out/profile_ncu.err"
    else
        printf 'profile\tnot run: no ncu on this host\n' >> "$summary"
    fi
fi
stage "done"
echo "== summary ($summary)"
cat "$summary"
if [[ $check_failed == 1 ]]; then
    echo "cuda_check: $device and the CPU differ (see $out/cuda_check.tsv)" >&2
    exit 1
fi
