#!/usr/bin/env bash
# Builds the benchmark peer bench/peers/supraseal (supraseal-c2, the CUDA Groth16 prover that
# bellperson's `cuda-supraseal` feature uses) and copies its stripped binary to OUT.
#
#   scripts/build-peers.sh [OUT]        OUT defaults to carry/supraseal-bench
#
# The peer is its own cargo workspace with its own target dir (bench/target, git-ignored), so
# `cuda-supraseal` never reaches libcuzk through feature unification.
# Environment (defaults in brackets):
#   CUZK_PEERS_TARGET      cargo target dir [bench/target]
#   NVCC_APPEND_FLAGS      extra nvcc flags for every CUDA compile; supraseal-c2's own list has
#                          no Hopper code, so [-gencode arch=compute_90,code=sm_90] adds it
#   EC_GPU_CUDA_NVCC_ARGS  ec-gpu-gen's kernels (bellperson/neptune `cuda`, unused by the
#                          supraseal prover but built anyway): [sm_90 only, to save build time
#                          and binary size]
# From scratch on 2 cores: ~15 min (Rust deps; ec-gpu-gen kernels ~4 min; groth16_cuda.cu
# ~3 min); afterwards only the peer's own crate is rebuilt (~3 min after a change).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
out="${1:-$root/carry/supraseal-bench}"
peer="$root/bench/peers/supraseal"
stub="$peer/stub"

cuda_toolchain

# filecoin-proofs' `cuda-supraseal` also enables bellperson's `cuda`, which links -lcuda (the
# driver); the PyPI wheels ship none. Link against a stub instead: found via LIBRARY_PATH (the
# equivalent of -L), never via an rpath, so at run time the real libcuda.so.1 is loaded.
step "CUDA driver stub for linking ($stub)"
if [ ! -e "$stub/libcuda.so.1" ] || [ "$stub/cuda_stub.c" -nt "$stub/libcuda.so.1" ]; then
    cc -std=c11 -O2 -fPIC -shared -Wl,-soname,libcuda.so.1 -o "$stub/libcuda.so.1" "$stub/cuda_stub.c"
fi
ln -sfn libcuda.so.1 "$stub/libcuda.so"
export LIBRARY_PATH="$stub${LIBRARY_PATH:+:$LIBRARY_PATH}"

export CARGO_TARGET_DIR="${CUZK_PEERS_TARGET:-$root/bench/target}"
export NVCC_APPEND_FLAGS="${NVCC_APPEND_FLAGS:--gencode arch=compute_90,code=sm_90}"
export EC_GPU_CUDA_NVCC_ARGS="${EC_GPU_CUDA_NVCC_ARGS:---optimize=6 --fatbin --generate-code=arch=compute_90,code=sm_90}"
locked=()
[ -f "$peer/Cargo.lock" ] && locked=(--locked)

step "cargo build --release: supraseal-bench (target dir $CARGO_TARGET_DIR)"
(cd "$peer" && cargo build --release ${locked[@]+"${locked[@]}"} --bin supraseal-bench)

mkdir -p "$(dirname "$out")"
rm -f "$out"
cp "$CARGO_TARGET_DIR/release/supraseal-bench" "$out"
strip "$out"
if readelf -d "$out" | grep -qE 'RPATH|RUNPATH'; then
    echo "build-peers.sh: error: $out has an rpath; it could shadow the real CUDA driver" >&2
    exit 1
fi
size=$(stat -c %s "$out")
[ "$size" -lt $((40 << 20)) ] || { echo "build-peers.sh: error: $out is $size bytes (limit 40 MiB)" >&2; exit 1; }
echo "build-peers.sh: $out ($((size >> 20)) MiB; needs $(readelf -d "$out" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' '))"
