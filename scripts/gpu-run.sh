#!/usr/bin/env bash
# Runs on the GPU machine (which has no cargo): the GPU test target and the 2KiB benchmark,
# from binaries built here by scripts/gpu-build.sh into carry/. Logs go to $OUT.
#   device: run "scripts/gpu-run.sh" with carry ["carry"]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${OUT:-/tmp/cuzk-out}"
mkdir -p "$out"
export CUZK_TEST_PARAMS=/tmp/cuzk-params FIL_PROOFS_PARAMETER_CACHE=/tmp/cuzk-params RUST_LOG=cuzk=info
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    nproc
    git rev-parse HEAD 2>/dev/null || cat carry/COMMIT
} >"$out/machine.txt" 2>&1

start=$SECONDS
carry/cuzk-fixtures params --sector-size 2KiB --dir /tmp/cuzk-params >"$out/params.log" 2>&1 || { echo "params failed"; tail "$out/params.log"; exit 1; }
echo "params: $((SECONDS - start)) s"

start=$SECONDS
carry/gpu-tests --test-threads=1 --nocapture >"$out/gpu-tests.log" 2>&1
status=$?
echo "gpu tests: exit $status in $((SECONDS - start)) s"
grep -E "^test |test result|panicked" "$out/gpu-tests.log"

carry/cuzk-fixtures seal --sector-size 2KiB --out /tmp/fx --sector 7 >/dev/null 2>&1
for system in cuzk cuzk-cpu bellperson; do
    repeat=1; [[ $system == cuzk ]] && repeat=3
    carry/cuzk-bench c2 --system "$system" --fixture /tmp/fx --params /tmp/cuzk-params --repeat "$repeat" >>"$out/bench.jsonl" 2>>"$out/bench.log"
done
tail -n 20 "$out/bench.log"
exit $status
