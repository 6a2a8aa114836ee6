#!/usr/bin/env bash
# Tokenizing throughput: luminome-tokenize vs needletail's raw parse (ceiling) and HuggingFace
# tokenizers from Python (peer), whole-process wall time, on the E. coli genome and hg38 chr22.
# Run from the repository root after:
#   cargo build --release -p luminome-tokenize --bins --examples
#   pip install tokenizers numpy
# Prints one line per command: median wall seconds and median CPU seconds (user + system: what a
# core budget counts; luminome-tokenize --threads 1 still reads on one thread and tokenizes and
# writes on another) over 5 runs (after 1 warm-up), and peak RSS. PEERS=0 skips the Python peer.
# Each luminome run writes a fresh output: the previous run's files are removed inside the timed
# command (so the removal is counted). Replacing an existing output is timed on its own line: on
# ext4, renaming over an existing file makes the filesystem allocate and start writing the new
# file's blocks at the rename (auto_da_alloc), which the fresh runs do not pay.
set -euo pipefail
PYTHON=${PYTHON:-python3}
DATA=${DATA:-../shared/data}
BIN=${BIN:-target/release}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
ECOLI=$DATA/genomes/ecoli_k12_mg1655/GCF_000005845.2_ASM584v2_genomic.fna.gz
CHR22=$DATA/hg38_chr22/chr22.fa.gz

RUNS=${RUNS:-5}
time_cmd() { # label, command...: median wall time and max RSS of $RUNS runs after a warm-up
  local label=$1; shift
  "$@" >/dev/null 2>&1
  local t=() c=() rss=0 s u y m
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f '%e %U %S %M' -o "$OUT/t" "$@" >/dev/null 2>&1
    read -r s u y m < "$OUT/t"; t+=("$s"); c+=("$(echo "$u + $y" | bc)"); (( m > rss )) && rss=$m
  done
  local mid=$(( (RUNS + 1) / 2 ))
  local med; med=$(printf '%s\n' "${t[@]}" | sort -g | sed -n "${mid}p")
  local cpu; cpu=$(printf '%s\n' "${c[@]}" | sort -g | sed -n "${mid}p")
  printf '%-58s median %6.2f s  CPU %6.2f s  peak RSS %7d KiB\n' "$label" "$med" "$cpu" "$rss"
}

FRESH=(sh -c 'rm -f "$1" "${1%.safetensors}.index.tsv"; shift; exec "$@"' fresh)

for f in "$ECOLI" "$CHR22"; do
  n=$(basename "$f")
  for th in 1 2; do
    time_cmd "$n luminome nucleotide w512 threads=$th" "${FRESH[@]}" "$OUT/a.safetensors" $BIN/luminome-tokenize "$f" --overflow window --window 512 --threads "$th" -q -o "$OUT/a.safetensors"
    time_cmd "$n luminome 6-mer overlapping w512 threads=$th" "${FRESH[@]}" "$OUT/b.safetensors" $BIN/luminome-tokenize "$f" --scheme kmer -k 6 --overflow window --window 512 --threads "$th" -q -o "$OUT/b.safetensors"
  done
  time_cmd "$n luminome nucleotide w512 threads=1, replacing the output" $BIN/luminome-tokenize "$f" --overflow window --window 512 --threads 1 -q -o "$OUT/c.safetensors"
  time_cmd "$n needletail parse+count (ceiling)" $BIN/examples/needletail_count "$f"
  [ "${PEERS:-1}" = 0 ] && continue
  RUNS=3 time_cmd "$n HF tokenizers char (peer)" "$PYTHON" bench/tokenize/hf_tokenize.py "$f" char 512
  RUNS=3 time_cmd "$n HF tokenizers 6-mer WordLevel (peer)" "$PYTHON" bench/tokenize/hf_tokenize.py "$f" 6mer 512
done
