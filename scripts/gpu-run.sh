#!/usr/bin/env bash
# Runs on the GPU machine (which has no cargo), from binaries built here by
# scripts/gpu-build.sh into carry/; logs and JSON lines go to $OUT. Each mode fits one
# 10-minute device command; the 2KiB params (106–141 s by bellperson's generator, ≈ 15–20 s
# predicted by cuzk_tools::setup) are made once per machine start.
#   scripts/gpu-run.sh tests [F]  2KiB params, the GPU test target (~7 min predicted; F: only
#                                 tests named *F*; CUZK_TESTS_SKIP="A B": without tests named *A*, *B*)
#   scripts/gpu-run.sh bench      the 2KiB C2 benchmark in one run: cuzk GPU cold + warm with
#                                 the key resident, with classic synthesis, with the key
#                                 streamed, with the 0/1 split forced either way;
#                                 supraseal-c2; bellperson (~2 min + params)
#   scripts/gpu-run.sh bench-8m   porep-8m: 8MiB params and sector, cuzk, supraseal-c2, bellperson
#   scripts/gpu-run.sh sha        the SHA-256 chain of 2^24 constraints (synthetic key, performance
#                                 only): cuzk, then supraseal-c2 on the same circuit and key
#   scripts/gpu-run.sh circuits   a 2^26 PoRep-like circuit with a synthetic key (performance
#                                 only): cold + warm with the key resident, then streamed
#   scripts/gpu-run.sh partition  one partition of the 32GiB PoRep circuit (130M constraints,
#                                 2^27) from made-up vanilla proofs, synthetic key (performance
#                                 only): shape extraction, then 4 proofs, a, b, c on the device
#                                 and on the host in turn (~6 min); then the same for the 2KiB
#                                 partition. CUZK_CHECK_SHAPE=1 also checks the
#                                 32GiB shape against filecoin-proofs' blank circuit (+90 s)
#   scripts/gpu-run.sh h-chunks   one 32GiB PoRep partition (as `partition`), each of 3 runs
#                                 proved with H's MSM in its chunks and again whole: the same
#                                 bytes, and the two timed (`cuzk[h=whole]`) (~4 min)
#   scripts/gpu-run.sh prep       one 32GiB PoRep partition (as `partition`), the witness's
#                                 classes found on the device (runs 0, 2, 4) and on the host
#                                 (runs 1, 3, 5) in one process (~6 min)
#   scripts/gpu-run.sh sector     whole 32GiB sectors (10 made-up partitions each, synthetic key,
#                                 performance only) through the engine's pipeline: 1, 2 and 4
#                                 sectors per call (throughput against sequential; GPU busy
#                                 fraction; per-partition timings) (~8 min; CUZK_SECTORS=1,2
#                                 for fewer; CUZK_LANES=N: N proving lanes, default automatic;
#                                 with several GPUs the partitions spread over them and each
#                                 record gives every device's busy fraction and partitions)
#   scripts/gpu-run.sh sector-file  issue 23's memory and cold start at 32GiB: the synthetic key
#                                 written in bellperson's format and read from that file, a
#                                 1-sector call that uploads it, then a 4-sector call (the key
#                                 resident where the device has room for it beside the call;
#                                 anonymous memory: the records' run_* fields); `dd` of
#                                 the file and a fresh 1-sector process, the page cache dropped
#                                 before each, then another fresh process with the file in the
#                                 page cache (time to the first proof against the read, cold
#                                 and warm) (~6 min on an H100)
#   scripts/gpu-run.sh post       2KiB WindowPoSt partitions (full, short) and WinningPoSt of a
#                                 fresh fixture: cuzk GPU, cuzk CPU, bellperson (filecoin-proofs-api),
#                                 supraseal-c2 (filecoin-proofs-api with cuda-supraseal) in one run; then the 32GiB WinningPoSt shape (made-up, synthetic
#                                 key, performance only), warm (~4 min)
#   scripts/gpu-run.sh update     2KiB SnapDeals update of a fresh fixture: cuzk GPU, cuzk CPU,
#                                 bellperson, supraseal-c2 (filecoin-proofs-api) in one run (~4 min)
#   scripts/gpu-run.sh update-8m  8MiB SnapDeals update of a fresh fixture (its random-setup
#                                 parameters first: 47 s): cuzk and supraseal-c2, then the GPU
#                                 test against bellperson's bytes (bellperson's proof timed)
#                                 and filecoin-proofs' verifier, then bellperson's own run
#                                 if the 10-minute command has room left
#   scripts/gpu-run.sh update-made-up  an update of CUZK_SECTOR_SIZE (default 8MiB) from made-up
#                                 vanilla proofs (synthetic key, performance only): shape, key,
#                                 3 runs (32GiB: ≈ 5 min)
#   scripts/gpu-run.sh keys       the keys of every proof kind of a 32GiB sector in use on one
#                                 engine (made-up, keys repeating a pool of random points,
#                                 performance only): 3 rounds of a WinningPoSt, a WindowPoSt
#                                 partition, a PoRep sector and an update (CUZK_PARTITIONS,
#                                 default 2, of their partitions); each call's key residency and
#                                 the device's resident keys (~6 min)
#   scripts/gpu-run.sh post-window  one 32GiB WindowPoSt partition (2 349 sectors × 10 challenges,
#                                 made-up, synthetic key, performance only), warm (~8 min)
#   scripts/gpu-run.sh post-during  32GiB WinningPoSts at random moments while a call proves
#                                 CUZK_SECTORS (default 4) made-up 32GiB PoRep sectors: their
#                                 latencies against the idle ones (~8 min)
#   scripts/gpu-run.sh soak       CUZK_SOAK_CALLS (default 1000) 2KiB C2 calls through one engine from
#                                 two threads, with malformed C1s, cancellations and key
#                                 evict/preload churn; every proof verified; memory drift (~6 min); then
#                                 the memory-pressure run (CUZK_SOAK_LOG: the soak's RUST_LOG): C2 calls while another process
#                                 (carry/gpu-hog) holds nearly all device memory (~1 min).
#                                 CUZK_SOAK_ARENAS=N: both with glibc's malloc arenas capped at N
#                                 (EngineConfig::malloc_arena_max), after 2KiB C2 timings with and
#                                 without the cap, in alternating processes
#   scripts/gpu-run.sh h-table    issue 22's H table (cuda/h_table.cuh, CUZK_H_TABLE): the GPU tests
#                                 that reach it with it on (cuzk's MSM over it against the CPU;
#                                 2^10/2^16 circuits, 2KiB PoRep, PoSt and update against
#                                 bellperson), then 2KiB C2 with it off and on in alternating
#                                 processes (records `cuzk` and `cuzk[h-table]`), and
#                                 `cuzk-bench msm` at 2^16 … 2^22 (~5 min)
#   scripts/gpu-run.sh curio      the Curio-shaped Go program (carry/curio-shaped: gpu-build.sh with
#                                 CUZK_CARRY_GO=1): C2 tasks on two workers, a 2KiB WindowPoSt
#                                 deadline and a WinningPoSt arriving during them; every proof
#                                 verified; per-call timings, GPU busy (~4 min with params)
#   scripts/gpu-run.sh daemon     from carry-daemon/ (gpu-build.sh with CUZK_CARRY_DAEMON=1; device
#                                 tool: carry ["carry-daemon"]): 2KiB params of every kind and
#                                 fixtures, then the daemon's Go end-to-end tests on the GPU:
#                                 TestDaemon (C2, SnapDeals, WindowPoSt partitions, WinningPoSt,
#                                 bad requests, cancellation, kill -9 and restart, SIGTERM; all
#                                 verified), TestDaemonOverhead (CUZK_DAEMON_CALLS, default 20,
#                                 warm C2s in process through cuzkffi, then as many through the
#                                 daemon's Prove) and TestDaemonExitsOnQuarantine (cuzk-daemon-fault
#                                 with an injected unrecoverable fault: the call fails, the
#                                 daemon exits 3, a restarted daemon proves the retry)
#   scripts/gpu-run.sh fuzz       no GPU: the fuzz targets on all cores from fuzz-carry/
#                                 (`scripts/fuzz.sh --carry fuzz-carry`; device tool: carry
#                                 ["fuzz-carry"]) for CUZK_FUZZ_SECONDS (default 480), instances
#                                 per target CUZK_FUZZ_TARGETS (default c_abi:8 c1:4 post:2 update:2)
#   scripts/gpu-run.sh micro      SHA chains of 2^16 and 2^20 with random-setup keys (verified),
#                                 then a per-phase sweep: random circuits of 2^20, 2^22, 2^24
#                                 constraints, PoRep-like (mostly 0/1) and uniform witnesses
#   scripts/gpu-run.sh msm        cuzk's MSM against sppark's, every sum held to sppark's: G1 at
#                                 2^16 … 2^27 points, G2 at 2^16 … 2^26, each at the digit
#                                 width cuzk picks and at the others (~6 min); then the 32GiB
#                                 WinningPoSt (its MSMs' size), warm
#   scripts/gpu-run.sh msm-affine cuzk's G1 MSM with batched-affine rounds (CUZK_MSM=cuzk-affine)
#                                 against cuzk's and sppark's in one process, every sum held to
#                                 sppark's: 2^20 … 2^27 points at the widths cuzk picks and at
#                                 20, 22 bits (~4 min); then a 32GiB partition under it (~4 min;
#                                 the `partition` mode gives the default MSM's)
# scripts/bench-table.py turns $OUT/bench.jsonl into the tables of docs/PERFORMANCE.md.
# device tool: run "scripts/gpu-run.sh tests" with carry ["carry"]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${OUT:-/tmp/cuzk-out}"
mkdir -p "$out"
export CUZK_TEST_PARAMS=/tmp/cuzk-params FIL_PROOFS_PARAMETER_CACHE=/tmp/cuzk-params RUST_LOG=cuzk=info
# The daemon mode runs from carry-daemon/, the others from carry/.
carried=carry
[ "${1:-tests}" = daemon ] && carried=carry-daemon
# gpu-build.sh gzips carry/'s binaries to fit the 64 MiB a device command carries.
for packed in "$carried"/*.gz; do
    [ -e "$packed" ] || continue
    gunzip -f "$packed" && chmod +x "${packed%.gz}"
done
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    echo "cores: $(nproc)"
    echo "commit: $(cat $carried/COMMIT)"
} >"$out/machine.txt" 2>&1

# Every JSON record names the commit and the CUDA driver it was measured with.
export CUZK_BENCH_COMMIT="$(cat $carried/COMMIT)"
export CUZK_BENCH_CUDA="$(nvidia-smi 2>/dev/null | sed -n 's/.*Driver Version: *\([0-9.]*\).*CUDA Version: *\([0-9.]*\).*/driver \1, CUDA \2/p' | head -1)"
bench() { carry/cuzk-bench "$@" >>"$out/bench.jsonl" 2>>"$out/bench.log"; }

# Device memory in use, the SM clock, the board power, the utilization and the clock event
# reasons, sampled every 100 ms for the whole mode: at the end every record gets the memory's
# peak over its process's lifetime and the clock and power while the GPU was busy
# (scripts/device-samples.py). Memory alone where the driver lacks one of the other fields.
sampled=timestamp,memory.used,clocks.sm,power.draw,utilization.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu="$sampled" --format=csv,noheader,nounits >/dev/null 2>&1 || sampled=timestamp,memory.used
nvidia-smi --query-gpu="$sampled" --format=csv,noheader,nounits -lms 100 >"$out/gpu-samples.csv" 2>/dev/null &
sampler=$!

params() {
    local start=$SECONDS size="${1:-2KiB}" kinds="${2:-porep,post,update}"
    $carried/cuzk-fixtures params --sector-size "$size" --kinds "$kinds" --dir /tmp/cuzk-params >>"$out/params.log" 2>&1 || { tail "$out/params.log"; exit 1; }
    echo "params $size: $((SECONDS - start)) s"
}

# For cold reads: the file pages the kernel caches go (the device machine runs us as root).
drop_page_cache() { sync && echo 3 >/proc/sys/vm/drop_caches; }

status=0
case "${1:-tests}" in
tests)
    # CUZK_PARAM_KINDS: the kinds' parameters to make (default all; a filtered run may need fewer).
    params 2KiB "${CUZK_PARAM_KINDS:-porep,post,update}"
    start=$SECONDS
    # An optional second argument runs only the tests whose names contain it; each fault test
    # runs in a process of its own: a fault may leave the device unusable to the
    # process that met it (docs/RELIABILITY.md), and its other tests would fail after it.
    fault_tests=(a_device_fault_fails_only_its_call_and_the_next_calls_prove a_device_fault_beside_the_split_msms_fails_only_its_call)
    status=0
    # CUZK_TESTS_SKIP: names (substrings) of tests to leave out, space-separated.
    skips=()
    for name in ${CUZK_TESTS_SKIP:-} "${fault_tests[@]}"; do skips+=(--skip "$name"); done
    carry/gpu-tests --test-threads=1 --nocapture "${skips[@]}" ${2:+"$2"} >>"$out/gpu-tests.log" 2>&1 || status=$?
    for fault_test in "${fault_tests[@]}"; do
        if [ -z "${2:-}" ] || [[ "$fault_test" == *"$2"* ]]; then
            carry/gpu-tests --test-threads=1 --nocapture --exact "$fault_test" >>"$out/gpu-tests.log" 2>&1 || status=$?
        fi
    done
    echo "gpu tests: exit $status in $((SECONDS - start)) s"
    grep -E "^test |test result|constraints|porep-2k|device memory|panicked|failed call|recovered|quarantine" "$out/gpu-tests.log"
    ;;
h-table)
    params 2KiB
    carry/cuzk-fixtures seal --sector-size 2KiB --out /tmp/fx --sector 7 >/dev/null 2>&1
    start=$SECONDS
    CUZK_H_TABLE=on carry/gpu-tests --test-threads=1 --nocapture own_msm porep_2k_gpu 2_pow_10_and_16 post_2k update_gpu_proof smallest >>"$out/gpu-tests.log" 2>&1 || status=$?
    echo "gpu tests: exit $status in $((SECONDS - start)) s"
    grep -E "^test |test result|panicked|h_table=" "$out/gpu-tests.log" | cut -c1-400
    for round in 1 2; do
        for table in off on; do
            CUZK_H_TABLE=$table RUST_LOG=cuzk=warn bench c2 --system cuzk --fixture /tmp/fx --params /tmp/cuzk-params --repeat 6 || status=1
        done
    done
    RUST_LOG=cuzk=warn bench msm --curve g1 --log-points 16,18,20,22 --repeat 2 || status=1
    ;;
soak)
    params 2KiB porep
    carry/cuzk-fixtures seal --sector-size 2KiB --out /tmp/fx --sector 7 >/dev/null 2>&1
    arenas=()
    if [ -n "${CUZK_SOAK_ARENAS:-}" ]; then
        arenas=(--malloc-arena-max "$CUZK_SOAK_ARENAS")
        # What the cap costs: warm 2KiB C2s without and with it, in alternating processes.
        for cap in none "$CUZK_SOAK_ARENAS" none "$CUZK_SOAK_ARENAS"; do
            capped=()
            [ "$cap" = none ] || capped=(--malloc-arena-max "$cap")
            RUST_LOG=cuzk=warn bench c2 --system cuzk --fixture /tmp/fx --params /tmp/cuzk-params --repeat 8 "${capped[@]}" || status=1
        done
    fi
    start=$SECONDS
    RUST_LOG="${CUZK_SOAK_LOG:-cuzk=warn}" bench soak --system cuzk --fixture /tmp/fx --params /tmp/cuzk-params --repeat "${CUZK_SOAK_CALLS:-1000}" "${arenas[@]}" || status=1
    echo "soak: exit $status in $((SECONDS - start)) s"
    tail -1 "$out/bench.jsonl" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); r.pop("samples"); print(json.dumps(r))'
    start=$SECONDS
    RUST_LOG=cuzk=warn bench pressure --system cuzk --fixture /tmp/fx --params /tmp/cuzk-params --hog carry/gpu-hog --repeat 10 "${arenas[@]}" || status=1
    echo "pressure: exit $status in $((SECONDS - start)) s"
    tail -1 "$out/bench.jsonl"
    tail -5 "$out/bench.log"
    ;;
daemon)
    # Every kind is proved through the daemon (TestDaemon), so every kind's parameters.
    params 2KiB porep,post,update
    fx=carry-daemon/cuzk-fixtures
    $fx seal --sector-size 2KiB --out /tmp/fx --miner 1000 --sector 7 >/dev/null 2>&1 || status=1
    $fx post --sector-size 2KiB --out /tmp/pf --miner 1000 --sectors 3 >/dev/null 2>&1 || status=1
    $fx update --sector-size 2KiB --out /tmp/uf --miner 1000 >/dev/null 2>&1 || status=1
    start=$SECONDS
    # The tests' daemons log into their temporary directories; a failed test prints the log.
    CUZK_DAEMON_BIN=carry-daemon/cuzk-daemon CUZK_DAEMON_FAULT_BIN=carry-daemon/cuzk-daemon-fault \
        CUZK_TEST_PARAMS=/tmp/cuzk-params CUZK_FIXTURE_DIR=/tmp/fx CUZK_POST_FIXTURE_DIR=/tmp/pf CUZK_UPDATE_FIXTURE_DIR=/tmp/uf \
        CUZK_DAEMON_OVERHEAD_CALLS="${CUZK_DAEMON_CALLS:-20}" \
        carry-daemon/daemon-e2e -test.run '^(TestDaemon|TestDaemonOverhead|TestDaemonExitsOnQuarantine)$' -test.v -test.timeout 6m \
        >"$out/daemon-e2e.txt" 2>&1 || status=1
    echo "daemon: exit $status in $((SECONDS - start)) s"
    grep -E "^ *(=== RUN|--- |PASS|FAIL|ok)|overhead|median|GPU\(s\)|quarantine|exited with status|retry|panic" "$out/daemon-e2e.txt"
    ;;
curio)
    params 2KiB porep,post
    carry/cuzk-fixtures seal --sector-size 2KiB --out /tmp/fx --sector 7 >/dev/null 2>&1 || status=1
    carry/cuzk-fixtures post --sector-size 2KiB --out /tmp/pf --miner 1000 --sectors 3 >/dev/null 2>&1 || status=1
    start=$SECONDS
    carry/curio-shaped -c1 /tmp/fx/c1.json -sector 7 -miner 1000 -post /tmp/pf/post.json -params /tmp/cuzk-params \
        -c2 "${CUZK_CURIO_C2:-24}" -window-after 1s -winning-after 2s >"$out/curio-shaped.txt" 2>&1 || status=1
    echo "curio-shaped: exit $status in $((SECONDS - start)) s"
    cat "$out/curio-shaped.txt"
    ;;
fuzz)
    # The machine's cores for the fuzz targets (no GPU involved); findings and stats to $OUT.
    # shellcheck disable=SC2086
    LD_LIBRARY_PATH=fuzz-carry CUZK_FUZZ_BIN=fuzz-carry CUZK_FUZZ_OUT=/tmp/fuzz-out CUZK_FUZZ_SECONDS="${CUZK_FUZZ_SECONDS:-480}" \
        scripts/fuzz.sh ${CUZK_FUZZ_TARGETS:-c_abi:8 c1:4 post:2 update:2} >"$out/fuzz.txt" 2>&1 || status=1
    tail -8 "$out/fuzz.txt"
    (cd /tmp/fuzz-out && find . -name fuzzer_stats -o -path '*/crashes/*' -o -path '*/hangs/*' | tar -czf "$out/fuzz-findings.tgz" -T -)
    ;;
bench)
    params 2KiB porep
    carry/cuzk-fixtures seal --sector-size 2KiB --out /tmp/fx --sector 7 >/dev/null 2>&1
    c2() { bench c2 --fixture /tmp/fx --params /tmp/cuzk-params "$@" || status=1; }
    c2 --system cuzk --repeat 4
    # a, b, c computed on the host and sent, against the device's resident matrices above.
    CUZK_SPMV=host c2 --system cuzk --repeat 3
    # Synthesis the classic way (every linear combination built) against the R1CS path.
    CUZK_SYNTHESIS=classic c2 --system cuzk --repeat 3
    c2 --system cuzk-streamed --repeat 3
    # The GPU's 0/1-split cost model against both forced choices, same sector, key resident.
    CUZK_GPU_SPLIT=always c2 --system cuzk --repeat 2
    CUZK_GPU_SPLIT=never c2 --system cuzk --repeat 2
    if [ -x carry/supraseal-bench ]; then
        carry/supraseal-bench c2 --fixture /tmp/fx --params /tmp/cuzk-params --repeat 3 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    fi
    c2 --system bellperson --repeat 1
    ;;
bench-8m)
    # porep-8m: a freshly sealed 8MiB sector (domain 2^22, 3.8M constraints), not run yet.
    params 8MiB
    carry/cuzk-fixtures seal --sector-size 8MiB --out /tmp/fx8 --sector 8 >/dev/null 2>&1
    bench c2 --fixture /tmp/fx8 --params /tmp/cuzk-params --system cuzk --repeat 3 || status=1
    if [ -x carry/supraseal-bench ]; then
        carry/supraseal-bench c2 --fixture /tmp/fx8 --params /tmp/cuzk-params --repeat 2 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    fi
    bench c2 --fixture /tmp/fx8 --params /tmp/cuzk-params --system bellperson --repeat 1 || status=1
    ;;
sha)
    # cuzk writes its synthetic key in bellperson's format; supraseal-c2 proves the same circuit
    # (same seed) with it. cuzk's run 0 synthesizes classically (for the key's shape), later
    # runs on the R1CS path; the chain is sequential, so the witness is one thread.
    timeout 200 carry/cuzk-bench circuit --system cuzk --witness sha --log-constraints 24 --repeat 3 --write-key /tmp/sha24.params \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    if [ -x carry/supraseal-bench ]; then
        timeout 200 carry/supraseal-bench circuit --workload sha --log-constraints 24 --params /tmp/sha24.params --repeat 2 \
            >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    fi
    rm -f /tmp/sha24.params
    timeout 180 carry/cuzk-bench circuit --system bellperson --witness sha --log-constraints 24 --repeat 1 \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
partition)
    # CUZK_CHECK_SHAPE=1: also compare the shape with filecoin-proofs' blank circuit (+90 s).
    # Runs 1 and 3 compute a, b, c on the host, runs 0 and 2 on the device.
    timeout 420 carry/cuzk-bench porep-partition --system cuzk --sector-size 32GiB ${CUZK_CHECK_SHAPE:+--check-shape} --compare-spmv --repeat 4 \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    # The 2KiB partition the same way: its records carry the scalar counts of a 2^22 PoRep.
    timeout 100 carry/cuzk-bench porep-partition --system cuzk --sector-size 2KiB --compare-spmv --repeat 5 \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
h-chunks)
    # Every run proves its circuit with H's MSM in chunks (the parts of one MSM) and again whole,
    # and fails unless the proofs are the same bytes (records `cuzk[h=whole]`).
    timeout 540 carry/cuzk-bench porep-partition --system cuzk --sector-size 32GiB --compare-h-chunks --repeat 3 \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
prep)
    # The log has each query's classes' device time (debug records of witness_classes).
    RUST_LOG=cuzk=info,cuzk::backend::gpu::witness_classes=debug timeout 540 carry/cuzk-bench porep-partition --system cuzk --sector-size 32GiB --compare-prep --repeat 6 \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
sector)
    timeout 560 carry/cuzk-bench porep-sector --system cuzk --sector-size 32GiB --sectors "${CUZK_SECTORS:-1,2,4}" --lanes "${CUZK_LANES:-0}" \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
sector-file)
    key=/tmp/k32.params
    timeout 400 carry/cuzk-bench porep-sector --system cuzk --sector-size 32GiB --sectors 1,4 --write-key "$key" \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    drop_page_cache
    # Into bench.log, which the mode prints at its end.
    timeout 60 dd if="$key" of=/dev/null bs=64M 2>&1 | tail -1 | sed 's/^/dd of the key file, page cache dropped: /' >>"$out/bench.log"
    # A fresh process with the page cache cold, then one with it warm (the cold one read the file into it).
    drop_page_cache
    for cache in cold warm; do
        echo "fresh process, page cache $cache:" >>"$out/bench.log"
        timeout 120 carry/cuzk-bench porep-sector --system cuzk --sector-size 32GiB --sectors 1 --write-key "$key" \
            >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    done
    ;;
post)
    params 2KiB post
    carry/cuzk-fixtures post --sector-size 2KiB --out /tmp/pf --miner 1000 --sectors 3 >/dev/null 2>&1 || status=1
    for system in cuzk cuzk-cpu bellperson; do
        bench post --system $system --fixture /tmp/pf --params /tmp/cuzk-params --repeat 3 || status=1
    done
    if [ -x carry/supraseal-bench ]; then
        carry/supraseal-bench post --fixture /tmp/pf --params /tmp/cuzk-params --repeat 3 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    fi
    timeout 240 carry/cuzk-bench post --system cuzk --sector-size 32GiB --post winning --repeat 5 \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
update)
    # 2KiB SnapDeals update of a fresh CC sector: cuzk GPU, cuzk CPU, bellperson and
    # supraseal-c2 (both through filecoin-proofs-api) in one run.
    params 2KiB update
    carry/cuzk-fixtures update --sector-size 2KiB --out /tmp/uf --miner 1000 >/dev/null 2>&1 || status=1
    for system in cuzk cuzk-cpu bellperson; do
        bench update --system $system --fixture /tmp/uf --params /tmp/cuzk-params --repeat 3 || status=1
    done
    if [ -x carry/supraseal-bench ]; then
        carry/supraseal-bench update --fixture /tmp/uf --params /tmp/cuzk-params --repeat 3 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    fi
    ;;
update-8m)
    # An 8MiB SnapDeals update of a fresh CC sector (4 partitions of 10M constraints, domain
    # 2^24), its random-setup parameters made first (47 s in run 109): a fresh sector proven by
    # cuzk (every proof self-verified) and supraseal-c2 (filecoin-proofs-api), then the GPU
    # test's proof with fixed r, s against bellperson's bytes and filecoin-proofs' verifier
    # (≈ 270 s, most of it bellperson's proof, which it times), then bellperson through
    # filecoin-proofs-api on the first sector in what is left of the 10-minute command.
    params 8MiB update
    carry/cuzk-fixtures update --sector-size 8MiB --out /tmp/uf8 --miner 1000 >/dev/null 2>&1 || status=1
    bench update --system cuzk --fixture /tmp/uf8 --params /tmp/cuzk-params --repeat 3 || status=1
    if [ -x carry/supraseal-bench ]; then
        carry/supraseal-bench update --fixture /tmp/uf8 --params /tmp/cuzk-params --repeat 2 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    fi
    start=$SECONDS
    CUZK_TEST_UPDATE_SECTOR_SIZE=8MiB carry/gpu-tests --test-threads=1 --nocapture update_gpu_proof >"$out/gpu-tests.log" 2>&1 || status=1
    echo "gpu test: exit $status in $((SECONDS - start)) s"
    grep -E "^test |test result|update-8MiB|panicked" "$out/gpu-tests.log"
    left=$((580 - SECONDS))
    if [ "$left" -gt 60 ]; then
        timeout "$left" carry/cuzk-bench update --system bellperson --fixture /tmp/uf8 --params /tmp/cuzk-params --repeat 1 \
            >>"$out/bench.jsonl" 2>>"$out/bench.log" || echo "bellperson's run: cut at the command's limit (the GPU test's time above stands for it)"
    fi
    ;;
update-made-up)
    # An update of CUZK_SECTOR_SIZE (default 8MiB) from made-up vanilla proofs, all its
    # partitions, synthetic key (performance only): shape extraction and key (not timed; the
    # 32GiB blank circuit's 81M constraints record in one piece), then 3 updates, the first
    # with the key's upload.
    timeout 560 carry/cuzk-bench update --system cuzk --sector-size "${CUZK_SECTOR_SIZE:-8MiB}" --repeat 3 \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
keys)
    timeout 560 carry/cuzk-bench keys --system cuzk --sector-size 32GiB --partitions "${CUZK_PARTITIONS:-2}" --repeat 3 \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
post-window)
    timeout 560 carry/cuzk-bench post --system cuzk --sector-size 32GiB --post window --repeat 3 \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
post-during)
    timeout 560 carry/cuzk-bench post --system cuzk --sector-size 32GiB --during-batch "${CUZK_SECTORS:-4}" \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
micro)
    # SHA chains with keys from a random setup: every proof verified.
    for k in 16 20; do
        timeout 200 carry/cuzk-bench circuit --system cuzk --witness sha --setup-key --log-constraints $k --repeat 2 \
            >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    done
    for k in 20 22 24; do
        for witness in porep uniform; do
            timeout 150 carry/cuzk-bench circuit --system cuzk --witness $witness --log-constraints $k --repeat 2 \
                >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
        done
    done
    ;;
circuits)
    # Each process builds its circuit, synthesizes it once for its key's shape and proves it.
    timeout 330 carry/cuzk-bench circuit --system cuzk --log-constraints 26 --repeat 2 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    timeout 250 carry/cuzk-bench circuit --system cuzk-streamed --log-constraints 26 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
msm)
    timeout 330 carry/cuzk-bench msm --system cuzk --curve g1 --log-points 16,18,19,20,21,22,23,24,25,26,27 \
        --digit-bits 12,14,16,18,20,22 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    timeout 150 carry/cuzk-bench msm --system cuzk --curve g2 --log-points 16,18,20,22,24,26 \
        --digit-bits 14,16,18,20,22 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    timeout 90 carry/cuzk-bench post --system cuzk --sector-size 32GiB --post winning --repeat 6 \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
msm-affine)
    CUZK_MSM=cuzk-affine timeout 270 carry/cuzk-bench msm --system cuzk --curve g1 --log-points 20,22,24,25,26,27 \
        --digit-bits 20,22 >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    CUZK_MSM=cuzk-affine timeout 240 carry/cuzk-bench porep-partition --system cuzk --sector-size 32GiB --repeat 3 \
        >>"$out/bench.jsonl" 2>>"$out/bench.log" || status=1
    ;;
*) echo "unknown mode $1"; exit 2 ;;
esac
kill "$sampler" 2>/dev/null
[ -f "$out/bench.jsonl" ] && python3 scripts/device-samples.py "$out/bench.jsonl" "$out/gpu-samples.csv"
[ -f "$out/bench.log" ] && cat "$out/bench.log"
exit $status
