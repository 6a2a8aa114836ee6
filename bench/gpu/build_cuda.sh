#!/usr/bin/env bash
# Builds the model tools with CUDA (`--features cuda`) on a machine without a GPU or a CUDA
# installation: nvcc, the CUDA headers and the libraries the binaries load come from PyPI,
# pinned to CUDA 13.0 (the toolkit of the GPU machines this was made for).
#
#   bench/gpu/build_cuda.sh [OUT_DIR] [COMPUTE_CAP]     # from the repository root
#
# OUT_DIR (default target/cuda-bin) receives luminome-train, luminome-predict,
# luminome-importance and the bench_step / bench_dual / cuda_check examples (built in
# target/cuda, apart from the CPU build). COMPUTE_CAP
# (default 90: H100/H200) is the compute capability candle's kernels are compiled for (as PTX for
# compute_<CAP>, which the driver JIT-compiles for that GPU and newer ones: 80 = A100, 89 = L4/L40,
# 90 = H100/H200).
#
# What is taken from PyPI: nvidia-cuda-nvcc, -crt, -cccl, -runtime, nvidia-nvvm (the compiler and
# headers; nvvm pinned too: nvcc's unpinned dependency on it pulls the newest, whose PTX the 13.0
# ptxas refuses: "Unsupported .version 9.5"),
# nvidia-cublas, -curand, -cuda-nvrtc (their headers and, copied beside the binaries as lib/, the
# libraries for a GPU host that has a driver but no CUDA 13 toolkit).
#
# Nothing CUDA is linked: cudarc loads the driver (libcuda.so.1) and the libraries (libcublas.so.13,
# libcublasLt.so.13, libcurand.so.10, libnvrtc.so.13) at run time, only when `--device cuda` asks
# for them (vendor/README.md: the vendored candle-core selects cudarc's dynamic loading). So the
# binaries start on any machine, a CPU node without a driver included, and run `--device cpu`
# there as the CPU build does; `--device cuda` there is refused with a message naming what is
# missing. On a GPU host they find the libraries through the usual search path: a CUDA 13
# toolkit, the nvidia-* wheels of a PyTorch install, or LD_LIBRARY_PATH=OUT_DIR/lib.
set -euo pipefail
out=${1:-target/cuda-bin}
cap=${2:-90}
venv=${CUDA_VENV:-target/cuda-venv}
if [[ ! -x $venv/bin/python ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-cccl==13.0.85 \
        nvidia-cuda-runtime==13.0.96 nvidia-cublas==13.0.2.14 nvidia-curand==10.4.0.35 \
        nvidia-cuda-nvrtc==13.0.88 nvidia-nvvm==13.0.88
fi
cuda=$(cd "$venv"/lib/python3*/site-packages/nvidia/cu13 && pwd)
# A CUDA_ROOT layout cudarc's build script searches: lib64/lib<name>.so for each library.
root=$(mkdir -p "$venv/cuda-root/lib64" && cd "$venv/cuda-root" && pwd)
for l in cublas.so.13 cublasLt.so.13 curand.so.10 nvrtc.so.13 cudart.so.13; do
    ln -sf "$cuda/lib/lib$l" "$root/lib64/lib${l%%.so*}.so"
done
ln -sfn "$cuda/include" "$root/include"
ln -sfn "$cuda/bin" "$root/bin"
export CUDA_ROOT=$root CUDA_PATH=$root CUDA_COMPUTE_CAP=$cap
export PATH=$root/bin:$PATH
export LIBRARY_PATH=$root/lib64${LIBRARY_PATH:+:$LIBRARY_PATH}
# A target folder of its own: the CPU build's binaries stay as they are (no CUDA code in them).
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/cuda}
echo "== $(nvcc --version | tail -1); compute capability $cap; into $CARGO_TARGET_DIR"
cargo build --release --locked --features cuda \
    -p luminome-train -p luminome-predict -p luminome-importance
cargo build --release --locked --features cuda -p luminome-engine \
    --example bench_step --example bench_dual
cargo build --release --locked --features cuda -p luminome-train --example cuda_check
mkdir -p "$out/lib"
rel=$CARGO_TARGET_DIR/release
cp "$rel"/luminome-train "$rel"/luminome-predict "$rel"/luminome-importance \
    "$rel"/examples/bench_step "$rel"/examples/bench_dual "$rel"/examples/cuda_check "$out/"
cp -L "$cuda"/lib/lib{cublas,cublasLt}.so.13 "$cuda/lib/libcurand.so.10" "$cuda/lib/libnvrtc.so.13" \
    "$cuda"/lib/libnvrtc-builtins.so.13.0 "$out/lib/"
echo "== built into $out (LD_LIBRARY_PATH=$out/lib on a GPU host without a CUDA 13 toolkit):"
ls -la "$out"
