# shellcheck shell=bash
# Shared by the scale-out measurements in this folder (sourced; $out is the output folder).
# shellcheck disable=SC2154  # out is set by the script that sources this file

# timed LABEL COMMAND...: runs COMMAND and appends LABEL, wall, user and system seconds and peak
# RSS (KB) to $out/times.tsv.
timed() {
    local label=$1
    shift
    /usr/bin/time -f "$label\t%e\t%U\t%S\t%M" -a -o "$out/times.tsv" "$@"
}

# start_record: a fresh times.tsv header and conditions.txt line (date, cores, CPU model, load).
start_record() {
    printf 'step\twall_s\tuser_s\tsys_s\tmax_rss_kb\n' > "$out/times.tsv"
    local model
    model="$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | xargs)"
    echo "# $(date -u +%FT%TZ) $(nproc) cores ($model), load $(cut -d' ' -f1-3 /proc/loadavg)" > "$out/conditions.txt"
}

# parts_side_by_side PREFIX N COMMAND...: runs `COMMAND --threads 1 --shard I/N -o pI.part.safetensors`
# for I = 1..N at once, each timed as PREFIXpart_I_of_N, then appends the wall time of them all as
# PREFIXparts_N_side_by_side_wall to $out/times.tsv.
parts_side_by_side() {
    local prefix=$1 n=$2 start end i pid
    shift 2
    local pids=()
    start=$(date +%s.%N)
    for i in $(seq 1 "$n"); do
        timed "${prefix}part_${i}_of_$n" "$@" --threads 1 --shard "$i/$n" -o "p$i.part.safetensors" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    end=$(date +%s.%N)
    printf '%sparts_%s_side_by_side_wall\t%.2f\t\t\t\n' "$prefix" "$n" "$(echo "$end - $start" | bc)" >> "$out/times.tsv"
}
