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
