#!/usr/bin/env bash
# Coverage-guided fuzzing of the input checks and the C ABI (fuzz/, cargo-afl), seeded from
# fuzz/seeds/: runs each target for CUZK_FUZZ_SECONDS (default 60) in CUZK_FUZZ_INSTANCES
# parallel AFL++ instances (default 1; one main, the others secondaries sharing the queue),
# at most one process per core at a time, then prints each target's figures and fails on any
# crash or hang, or on a target that ran nothing.
#
#   scripts/fuzz.sh [TARGET[:N]...]  (default: every target in fuzz/src/bin; N: instances of it)
#   scripts/fuzz.sh --carry DIR      only build: the targets, stripped, and an afl-fuzz without
#                                    Python (with its libz) into DIR, for a machine without cargo
#
# Installs cargo-afl 0.18.2 and AFL++ when missing, then builds the targets. With CUZK_FUZZ_BIN
# set it builds nothing and runs the instrumented targets and the afl-fuzz found there (the GPU
# machine: scripts/gpu-run.sh fuzz, from DIR = fuzz-carry). Findings stay in CUZK_FUZZ_OUT
# (default fuzz/out; each target's directory is emptied first).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

seconds="${CUZK_FUZZ_SECONDS:-60}"
instances="${CUZK_FUZZ_INSTANCES:-1}"
out="${CUZK_FUZZ_OUT:-$root/fuzz/out}"
carry=""
if [[ "${1:-}" == --carry ]]; then
    carry="${2:?--carry DIR}"
    shift 2
fi
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

if [[ -n "$carry" ]]; then
    step "carrying the targets and afl-fuzz into $carry"
    rm -rf "$carry" && mkdir -p "$carry"
    for spec in "${targets[@]}"; do
        target="${spec%%:*}"
        strip -o "$carry/$target" "$bin/$target"
    done
    # cargo-afl's afl-fuzz links libpython (custom mutators), which the GPU machine lacks.
    afl_source=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cargo-afl-common-0.18.2/AFLplusplus | head -1)
    build=$(mktemp -d)
    cp -r "$afl_source/." "$build"
    make -C "$build" -j"$(nproc)" afl-fuzz NO_PYTHON=1 >"$build/make.log" 2>&1 || { tail "$build/make.log" >&2; exit 1; }
    cp "$build/afl-fuzz" "$carry/"
    cp -L "$(ldd "$carry/afl-fuzz" | awk '/libz\.so/ { print $3 }')" "$carry/"
    rm -rf "$build"
    du -sh "$carry"
    exit 0
fi

export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1
cores=$(nproc)
jobs=()
names=()
for spec in "${targets[@]}"; do
    target="${spec%%:*}"
    count="$instances"
    [[ "$spec" == *:* ]] && count="${spec#*:}"
    [[ -x "$bin/$target" ]] || { echo "no fuzz target $bin/$target" >&2; exit 1; }
    rm -rf "${out:?}/$target"
    mkdir -p "$out/$target"
    names+=("$target")
    for ((i = 0; i < count; i++)); do
        jobs+=("$target $i")
    done
done

step "fuzzing ${targets[*]}: $seconds s, ${#jobs[@]} instance(s), $cores at a time"
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
stat() { awk -v key="$1" '$1 == key { print $3 }' "$2"; }
for target in "${names[@]}"; do
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
