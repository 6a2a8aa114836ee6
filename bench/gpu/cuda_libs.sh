# Sourced by the GPU host scripts (run_gpu.sh, published_peer.sh) with $bin set to the binaries:
# puts the CUDA 13 libraries on LD_LIBRARY_PATH — lib/ beside the binaries when build_cuda.sh's
# copy travelled with them, else the host's own (a CUDA toolkit, or the nvidia-* wheels PyTorch
# installed).
libs=$bin/lib
for d in /usr/local/cuda/lib64 \
    "$(python3 -c 'import nvidia.cu13 as m; print(m.__path__[0] + "/lib")' 2> /dev/null)"; do
    [[ -d $d ]] && libs=$libs:$d
done
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
