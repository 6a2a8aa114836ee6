#!/usr/bin/env bash
# The selective scan alone (bench_scan) and the bi-strand model it runs in (bench_bistrand), two
# builds side by side on one thread, alternating run by run so that drift in the machine's speed
# falls on both: BEFORE and AFTER are directories holding each build's release examples. Also
# times the transformer benchmark (bench_step, AFTER's build) on the same core, the rate the
# scan's FLOP rate is compared with (docs/benchmarks.md, "FLOP rates against the core's peak").
#
#   bench/roofline/scan_ab.sh BEFORE_DIR AFTER_DIR OUT_DIR [ROUNDS]
#
# Writes OUT_DIR/runs.txt (every run's line, labelled) and OUT_DIR/machine.txt.
set -euo pipefail
before=$1 after=$2
out=$(mkdir -p "$3" && cd "$3" && pwd)
rounds=${4:-5}
{
    echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load $(cut -d' ' -f1-3 /proc/loadavg)"
    grep -o 'avx512f\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' '
    echo
} > "$out/machine.txt"
one() { echo "$1 $(RAYON_NUM_THREADS=1 "$2/$3" "${@:4}" 2>&1 | tr '\n' ' ')"; }
for _ in $(seq "$rounds"); do
    one before "$before" bench_scan 50
    one after "$after" bench_scan 50
    one before "$before" bench_bistrand 10 64 2 256 8
    one after "$after" bench_bistrand 10 64 2 256 8
    one transformer "$after" bench_step 10 0.1 transformer
done | tee "$out/runs.txt"
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"
