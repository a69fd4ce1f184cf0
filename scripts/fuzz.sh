#!/usr/bin/env bash
# Coverage-guided fuzzing of the input checks and the C ABI (fuzz/, cargo-afl), seeded from
# fuzz/seeds/: runs each target for CUZK_FUZZ_SECONDS (default 60) in CUZK_FUZZ_INSTANCES
# parallel AFL++ instances (default 1; one main, the others secondaries sharing the queue),
# at most one process per core at a time, then prints each target's figures and fails on any
# crash or hang, or on a target that ran nothing.
#
#   scripts/fuzz.sh [TARGET...]      (default: every target in fuzz/src/bin)
#
# Installs cargo-afl 0.18.2 and AFL++ when missing, then builds the targets. With CUZK_FUZZ_BIN
# set it builds nothing and runs the instrumented targets and the afl-fuzz found there (the GPU
# machine has no cargo: scripts/gpu-run.sh fuzz). Findings stay in CUZK_FUZZ_OUT (default
# fuzz/out; each target's directory is emptied first).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

seconds="${CUZK_FUZZ_SECONDS:-60}"
instances="${CUZK_FUZZ_INSTANCES:-1}"
out="${CUZK_FUZZ_OUT:-$root/fuzz/out}"
if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    targets=()
    for source in "$root"/fuzz/src/bin/*.rs; do
        targets+=("$(basename "$source" .rs)")
    done
fi

if [[ -n "${CUZK_FUZZ_BIN:-}" ]]; then
    bin="$CUZK_FUZZ_BIN"
    afl_fuzz=("$bin/afl-fuzz")
else
    step "cargo-afl and AFL++"
    if ! cargo afl --version 2>/dev/null | grep -q '^cargo-afl 0\.18\.'; then
        cargo install --locked cargo-afl --version 0.18.2
    fi
    if ! built=$(cargo afl config --build 2>&1); then
        grep -q "already built" <<<"$built" || { echo "$built" >&2; exit 1; }
    fi
    step "cargo afl build --release (fuzz/, its own workspace)"
    (cd "$root/fuzz" && cargo afl build --release --locked)
    bin="$root/fuzz/target/release"
    afl_fuzz=(cargo afl fuzz)
fi

export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1
cores=$(nproc)
jobs=()
for target in "${targets[@]}"; do
    [[ -x "$bin/$target" ]] || { echo "no fuzz target $bin/$target" >&2; exit 1; }
    rm -rf "${out:?}/$target"
    mkdir -p "$out/$target"
    for ((i = 0; i < instances; i++)); do
        jobs+=("$target $i")
    done
done

step "fuzzing ${targets[*]}: $seconds s, $instances instance(s) each, $cores at a time"
for ((first = 0; first < ${#jobs[@]}; first += cores)); do
    pids=()
    for job in "${jobs[@]:first:cores}"; do
        read -r target i <<<"$job"
        role=(-M main)
        [[ $i -gt 0 ]] && role=(-S "s$i")
        "${afl_fuzz[@]}" "${role[@]}" -V "$seconds" -t 5000 -i "$root/fuzz/seeds/$target" -o "$out/$target" \
            "$bin/$target" >"$out/$target/afl-$i.log" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || { echo "afl-fuzz failed: see $out/*/afl-*.log" >&2; exit 1; }
    done
done

step "results (execs and findings summed over the instances; corpus and coverage of the main one)"
failed=0
printf '%-8s %12s %10s %8s %10s %8s %6s\n' target execs execs/s corpus coverage crashes hangs
for target in "${targets[@]}"; do
    stat() { awk -v key="$1" '$1 == key { print $3 }' "$2"; }
    execs=0 rate=0 crashes=0 hangs=0
    for stats in "$out/$target"/*/fuzzer_stats; do
        execs=$((execs + $(stat execs_done "$stats")))
        rate=$(awk -v a="$rate" -v b="$(stat execs_per_sec "$stats")" 'BEGIN { printf "%.0f", a + b }')
        crashes=$((crashes + $(stat saved_crashes "$stats")))
        hangs=$((hangs + $(stat saved_hangs "$stats")))
    done
    main="$out/$target/main/fuzzer_stats"
    printf '%-8s %12s %10s %8s %10s %8s %6s\n' "$target" "$execs" "$rate" \
        "$(stat corpus_count "$main")" "$(stat bitmap_cvg "$main")" "$crashes" "$hangs"
    if [[ $crashes -gt 0 || $hangs -gt 0 || $execs -eq 0 ]]; then
        echo "$target: $crashes crash(es), $hangs hang(s), $execs execs: inputs in $out/$target/*/{crashes,hangs}" >&2
        failed=1
    fi
done
exit "$failed"
