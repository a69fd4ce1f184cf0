#!/usr/bin/env bash
# Runs on the GPU machine (which has no cargo), from binaries built here by
# scripts/gpu-build.sh into carry/; logs and JSON lines go to $OUT.
#   scripts/gpu-run.sh tests      2KiB params, the GPU test target, the 2KiB C2 benchmark
#                                 (cuzk GPU — also with the 0/1 split forced —, cuzk CPU,
#                                 bellperson, supraseal-c2 in one run); ~9 min
#   scripts/gpu-run.sh circuits   per-phase timings of 2^24 (GPU and CPU) and 2^26 (GPU)
#                                 PoRep-like circuits with synthetic keys (performance only)
# device tool: run "scripts/gpu-run.sh tests" with carry ["carry"]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${OUT:-/tmp/cuzk-out}"
mkdir -p "$out"
export CUZK_TEST_PARAMS=/tmp/cuzk-params FIL_PROOFS_PARAMETER_CACHE=/tmp/cuzk-params RUST_LOG=cuzk=info
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    echo "cores: $(nproc)"
    echo "commit: $(cat carry/COMMIT)"
} >"$out/machine.txt" 2>&1

bench() { carry/cuzk-bench "$@" >>"$out/bench.jsonl" 2>>"$out/bench.log"; }

case "${1:-tests}" in
tests)
    start=$SECONDS
    carry/cuzk-fixtures params --sector-size 2KiB --dir /tmp/cuzk-params >"$out/params.log" 2>&1 || { tail "$out/params.log"; exit 1; }
    echo "params: $((SECONDS - start)) s"
    start=$SECONDS
    carry/gpu-tests --test-threads=1 --nocapture >"$out/gpu-tests.log" 2>&1
    status=$?
    echo "gpu tests: exit $status in $((SECONDS - start)) s"
    grep -E "^test |test result|constraints|porep-2k" "$out/gpu-tests.log"
    carry/cuzk-fixtures seal --sector-size 2KiB --out /tmp/fx --sector 7 >/dev/null 2>&1
    bench c2 --system cuzk --fixture /tmp/fx --params /tmp/cuzk-params --repeat 4
    # The GPU's 0/1-split cost model against both forced choices, same sector.
    CUZK_GPU_SPLIT=always bench c2 --system cuzk --fixture /tmp/fx --params /tmp/cuzk-params --repeat 3
    CUZK_GPU_SPLIT=never bench c2 --system cuzk --fixture /tmp/fx --params /tmp/cuzk-params --repeat 3
    bench c2 --system cuzk-cpu --fixture /tmp/fx --params /tmp/cuzk-params --repeat 2
    bench c2 --system bellperson --fixture /tmp/fx --params /tmp/cuzk-params --repeat 2
    if [ -x carry/supraseal-bench ]; then
        carry/supraseal-bench c2 --fixture /tmp/fx --params /tmp/cuzk-params --repeat 3 >>"$out/bench.jsonl" 2>>"$out/bench.log"
    fi
    ;;
circuits)
    # Each process builds its circuit, synthesizes it once for its key's shape and proves it;
    # the CPU path is measured at 2^24 only, to stay inside one device command.
    status=0
    timeout 200 carry/cuzk-bench circuit --system cuzk --log-constraints 24 --repeat 2 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    timeout 200 carry/cuzk-bench circuit --system cuzk-cpu --log-constraints 24 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    timeout 280 carry/cuzk-bench circuit --system cuzk --log-constraints 26 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
*) echo "unknown mode $1"; exit 2 ;;
esac
cat "$out/bench.log"
exit $status
