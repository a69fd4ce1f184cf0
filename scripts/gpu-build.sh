#!/usr/bin/env bash
# Builds what scripts/gpu-run.sh runs on the GPU machine into carry/ (git-ignored, gzipped,
# < 64 MiB with the working tree):
# the GPU test target built with CUZK_GPU_TESTS=1 and the fault injector, cuzk-fixtures,
# cuzk-bench and gpu-hog (tools/cuda/gpu_hog.cu), stripped, and the supraseal-c2 peer
# (scripts/build-peers.sh).
# CUZK_CARRY_GO=1: also the Curio-shaped Go program (cuzkffi/cmd/curio-shaped) linked to
# libcuzk.a, in place of the supraseal-c2 peer (both would pass the 64 MiB carry limit).
# CUZK_CARRY_DAEMON=1: instead, carry-daemon/ for `gpu-run.sh daemon`: cuzk-daemon,
# cuzk-daemon-fault (the same with the test-only `fault-injection` feature), cuzk-fixtures and
# the daemon's Go end-to-end test (daemon/e2e) linked to libcuzk.a.
# CUZK_CUDA_ARCHS narrows the GPU architectures (default: all of cuda/build.rs's list).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
"$root/scripts/install-cuda.sh" >/dev/null
source "$root/scripts/nvcc-env.sh"
cd "$root"
export CUZK_GPU_TESTS=1
if [ "${CUZK_CARRY_DAEMON:-0}" = 1 ]; then
    rm -rf carry-daemon && mkdir -p carry-daemon
    # The daemon with the test fault hook (CUZK_DAEMON_TEST_FAULT) for TestDaemonExitsOnQuarantine:
    # cuzk is compiled again with its fault-injection feature. First, so that the shipped build
    # below is the one left in target/release.
    cargo build --release --locked -p cuzk-daemon --features fault-injection --bin cuzk-daemon
    cp "${CARGO_TARGET_DIR:-target}/release/cuzk-daemon" carry-daemon/cuzk-daemon-fault
    cargo build --release --locked -p cuzk-daemon -p cuzk-tools --bin cuzk-daemon --bin cuzk-fixtures
    cp "${CARGO_TARGET_DIR:-target}/release/cuzk-daemon" "${CARGO_TARGET_DIR:-target}/release/cuzk-fixtures" carry-daemon/
    prefix="$root/target/cuzk-prefix"
    "$root/scripts/install.sh" "$prefix" >/dev/null
    pc_dir=$(mktemp -d)
    sed -e 's/^Name: cuzk-static$/Name: cuzk/' -e "s#\${pcfiledir}/../..#$prefix#" \
        "$prefix/lib/pkgconfig/cuzk-static.pc" >"$pc_dir/cuzk.pc"
    # -a: the build cache may hold cuzkffi linked against the shared library.
    (cd "$root/daemon/e2e" && PKG_CONFIG_PATH="$pc_dir" go test -c -a -tags cuzk -ldflags "-s -w" -o "$root/carry-daemon/daemon-e2e" .)
    rm -r "$pc_dir"
    strip carry-daemon/cuzk-daemon carry-daemon/cuzk-daemon-fault carry-daemon/cuzk-fixtures
    git rev-parse HEAD >carry-daemon/COMMIT
    du -sh carry-daemon
    bytes=$(du -sb carry-daemon | cut -f1)
    if [ "$bytes" -gt $((64 << 20)) ]; then
        echo "carry-daemon/ is $bytes bytes: over the 64 MiB a device command carries" >&2
        exit 1
    fi
    exit 0
fi
cargo build --release --locked -p cuzk-tools --bins
tests_bin=$(cargo test --release --locked -p cuzk --features fault-injection --test gpu --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gpu" and m.get("executable"):
        print(m["executable"])')
rm -rf carry && mkdir -p carry
cp "$tests_bin" carry/gpu-tests
cp "${CARGO_TARGET_DIR:-target}/release/cuzk-fixtures" "${CARGO_TARGET_DIR:-target}/release/cuzk-bench" carry/
# The other process of `cuzk-bench pressure`, holding the device's memory (no kernels: any GPU).
"$NVCC" -O2 -o carry/gpu-hog "$root/tools/cuda/gpu_hog.cu"
strip carry/*
if [ "${CUZK_CARRY_GO:-0}" = 1 ]; then
    prefix="$root/target/cuzk-prefix"
    "$root/scripts/install.sh" "$prefix" >/dev/null
    # The static library under the name the package's `#cgo pkg-config: cuzk` asks for.
    pc_dir=$(mktemp -d)
    sed -e 's/^Name: cuzk-static$/Name: cuzk/' -e "s#\${pcfiledir}/../..#$prefix#" \
        "$prefix/lib/pkgconfig/cuzk-static.pc" >"$pc_dir/cuzk.pc"
    # -a: the build cache may hold cuzkffi linked against the shared library.
    (cd "$root/cuzkffi" && PKG_CONFIG_PATH="$pc_dir" go build -a -tags cuzk -ldflags "-s -w" -o "$root/carry/curio-shaped" ./cmd/curio-shaped)
    rm -r "$pc_dir"
else
    "$root/scripts/build-peers.sh" carry/supraseal-bench >/dev/null
fi
# Unpacked they pass the 64 MiB a device command carries (≈ 68 MB with the peer): gzipped
# ≈ 26 MB; scripts/gpu-run.sh unpacks them there.
find carry -type f -exec gzip -6 {} +
git rev-parse HEAD >carry/COMMIT
du -sh carry
bytes=$(du -sb carry | cut -f1)
if [ "$bytes" -gt $((56 << 20)) ]; then
    echo "carry/ is $bytes bytes: with the working tree, over the 64 MiB a device command carries" >&2
    exit 1
fi
