#!/usr/bin/env bash
# FLOP rates of the engine benchmark models on one core against that core's measured peak: the
# roofline a user can reason with. Runs, on one thread, each Luminome bench example (median
# training step and inference batch), counts each model's FLOPs with flops.py (PyTorch's
# FlopCounterMode on the benchmarks' PyTorch mirrors, the scan added by hand), measures the core's
# FMA peak (peak_fma.c, 8- and, where the CPU has AVX-512, 16-wide) and PyTorch's one-thread
# matrix-product rate (gemm_ceiling.py), and prints
# a TSV (OUT_DIR/table.tsv): workload, ms, GFLOP/s, percent of the FMA peak. OUT_DIR also keeps
# ceilings.txt, bench.txt (the examples' output) and flops.tsv.
#
#   TORCH_PYTHON=/path/to/python bench/roofline/run.sh OUT_DIR [STEPS]    # from the repo root
#
# STEPS (default 10) timed steps per bench after its own warm-up. Release examples are built
# (cargo build --release -p luminome-engine --examples) unless BIN_DIR names built ones.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
steps=${2:-10}
py=${TORCH_PYTHON:-python3}
bin=${BIN_DIR:-target/release/examples}
[[ -n "${BIN_DIR:-}" ]] || cargo build --release --locked -q -p luminome-engine --examples
gcc -O2 -mavx2 -mfma -o "$out/peak_fma" bench/roofline/peak_fma.c
# Where the core has AVX-512 its peak is the 16-wide one (the engine's kernels have AVX-512
# clones and gemm uses it); the table takes the larger of the two.
avx512=$(grep -qw avx512f /proc/cpuinfo && echo 1 || true)
[[ -z $avx512 ]] || gcc -O2 -mavx2 -mfma -mavx512f -o "$out/peak_fma512" bench/roofline/peak_fma.c
{
    echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2) model $(grep -m1 '^model' /proc/cpuinfo | cut -d: -f2); load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$out/peak_fma"
    [[ -z $avx512 ]] || "$out/peak_fma512"
    "$py" bench/roofline/gemm_ceiling.py
} | tee "$out/ceilings.txt"
one() { RAYON_NUM_THREADS=1 "$bin/$1" "${@:2}" 2>&1 | tee -a "$out/bench.txt"; }
{
    echo "== transformer"; one bench_step "$steps" 0.1 transformer
    echo "== cnn"; one bench_step "$steps" 0.1 cnn
    echo "== expression"; one bench_expression "$steps"
    echo "== bistrand"; one bench_bistrand "$steps" 64 2 256 8
    # The scan alone, at the bi-strand model's shapes; prints its own GFLOP/s (not in the table).
    echo "== scan"; one bench_scan 50
    echo "== dual"; one bench_dual "$steps" standard
} > /dev/null
echo "# load after the benches $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/ceilings.txt"
"$py" bench/roofline/flops.py > "$out/flops.tsv"
"$py" - "$out" > "$out/table.tsv" << 'PY'
import re, sys
out = sys.argv[1]
peak = max(map(float, re.findall(r"peak_fma_gflops ([\d.]+)", open(f"{out}/ceilings.txt").read())))
times, name = {}, None
for line in open(f"{out}/bench.txt"):
    m = re.search(r"train_step_ms median ([\d.]+)", line)
    if m:
        times.setdefault(len(times), {})["train"] = float(m.group(1))
    m = re.search(r"(?:inference|embed)_batch_ms median ([\d.]+)", line)
    if m:
        times[len(times) - 1]["infer"] = float(m.group(1))
rows = [l.rstrip("\n").split("\t") for l in open(f"{out}/flops.tsv")][1:]
# The benches above run in flops.py's row order, one training and one inference line each.
assert len(times) == len(rows) and all(len(t) == 2 for t in times.values()), (times, rows)
print("workload\tpass\tGFLOP\tms\tGFLOP/s\t% of FMA peak\tscan's share of the FLOPs")
for i, (name, tf, inf, stf, sinf) in enumerate(rows):
    for kind, flops, scan in (("train", float(tf), float(stf)), ("infer", float(inf), float(sinf))):
        ms = times[i][kind]
        rate = flops / ms / 1e6
        print(f"{name}\t{kind}\t{flops / 1e9:.2f}\t{ms:.1f}\t{rate:.1f}\t{100 * rate / peak:.0f}\t"
              f"{100 * scan / flops:.0f} %")
PY
cat "$out/table.tsv"
