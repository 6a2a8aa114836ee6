#!/usr/bin/env bash
# scan_loop.c's ways to compute the forward's inner loop, each compiled and run ROUNDS times in
# turn (mode 1, prefetches on: the Rust kernel's forward), at the clock GHZ (peak_fma.c's rate /
# 64): cycles per 16 state elements and the rate by the roofline's count, per variant.
#
#   bench/roofline/scan_loop_variants.sh GHZ [ROUNDS] > OUT.txt
set -euo pipefail
ghz=$1 rounds=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
variants=("kernel:" "table:-DEXP_TABLE" "integer:-DEXP_INTEGER" "integer-noclamp:-DEXP_INTEGER -DEXP_NOCLAMP"
    "integer-magic:-DEXP_INTEGER -DEXP_MAGIC" "noscale:-DEXP_NOSCALE" "two-accumulators:-DTWO_ACCUMULATORS")
for v in "${variants[@]}"; do
    # shellcheck disable=SC2086
    gcc -O2 -march=native ${v#*:} -o "$tmp/${v%%:*}" "$here/scan_loop.c" -lm
done
echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$rounds"); do
    for v in "${variants[@]}"; do
        echo "${v%%:*} $("$tmp/${v%%:*}" 300 1 1 "$ghz")"
    done
done
