#!/usr/bin/env bash
# CPU time of luminome-tokenize builds against the raw-parse ceiling, side by side: ROUNDS
# rounds, each running the ceiling (needletail parse + count, one thread, writes nothing) and
# then every build once, so a load that comes and goes reaches all of them alike. Issue #43
# asks for the tokenizer's CPU per base at most 1.3x the ceiling's for nucleotides.
#
#   bench/tokenize/cpu_ab.sh ROUNDS OUT BIN_DIR...   (run from the repository root)
#
# BIN_DIR: a directory holding a luminome-tokenize build (target/release, or a copy of an
# older build); the ceiling is target/release/examples/needletail_count
# (`cargo build --release -p luminome-tokenize --examples`). ARGS replaces the tokenizing
# arguments (default: nucleotide, 512-base windows, --threads 1); INPUT the FASTA (default:
# hg38 chr22, BGZF). Writes OUT/runs.tsv (round, variant, wall s, CPU ms as perf's task-clock,
# or user + sys from /usr/bin/time where perf is missing) and prints, per build, the median CPU
# and the median of its round-by-round ratio to the ceiling. Each run writes a fresh output
# (the previous one is removed before the timed command).
set -euo pipefail
ROUNDS=$1 OUT=$2
shift 2
DATA=${DATA:-../shared/data}
INPUT=${INPUT:-$DATA/hg38_chr22/chr22.fa.gz}
ARGS=${ARGS:---overflow window --window 512 --threads 1 -q}
CEILING=${CEILING:-target/release/examples/needletail_count}
mkdir -p "$OUT"
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

cpu_ms() { # command...: prints "wall_s cpu_ms"
  if command -v perf >/dev/null; then
    local t0 t1 line
    t0=$(date +%s.%N)
    line=$(perf stat -x, -e task-clock "$@" 2>&1 >/dev/null | grep task-clock)
    t1=$(date +%s.%N)
    echo "$(echo "$t1 - $t0" | bc) ${line%%,*}"
  else
    /usr/bin/time -f '%e %U %S' -o "$SCRATCH/t" "$@" >/dev/null 2>&1
    read -r e u s < "$SCRATCH/t"
    echo "$e $(echo "($u + $s) * 1000" | bc)"
  fi
}

printf 'round\tvariant\twall_s\tcpu_ms\n' > "$OUT/runs.tsv"
for r in $(seq "$ROUNDS"); do
  printf '%s\tceiling\t%s\n' "$r" "$(cpu_ms "$CEILING" "$INPUT" | tr ' ' '\t')" >> "$OUT/runs.tsv"
  for b in "$@"; do
    rm -f "$SCRATCH"/o.*
    # shellcheck disable=SC2086 # ARGS is a list of arguments
    printf '%s\t%s\t%s\n' "$r" "$b" \
      "$(cpu_ms "$b/luminome-tokenize" "$INPUT" $ARGS -o "$SCRATCH/o.safetensors" | tr ' ' '\t')" \
      >> "$OUT/runs.tsv"
  done
done

python3 - "$OUT/runs.tsv" "$@" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
cpu = {}
for r, v, _wall, c in rows:
    cpu.setdefault(v, {})[r] = float(c)
print(f"ceiling: median CPU {statistics.median(cpu['ceiling'].values()):.0f} ms")
for b in sys.argv[2:]:
    ratios = [cpu[b][r] / cpu["ceiling"][r] for r in cpu[b]]
    print(f"{b}: median CPU {statistics.median(cpu[b].values()):.0f} ms, "
          f"ratio to the ceiling median {statistics.median(ratios):.2f} "
          f"(quartiles {statistics.quantiles(ratios, n=4)[0]:.2f}-{statistics.quantiles(ratios, n=4)[2]:.2f})")
PY
