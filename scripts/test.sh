#!/usr/bin/env bash
# All tests: Rust unit and integration tests (C ABI, filecoin-proofs verification, bit-for-bit
# comparison with bellperson, bad input; cuzk-daemon's proto contract), the C example, the Go
# package, cuzk-daemon end to end (a Go client of Curio's proto), and a short fuzzing run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build_release
ensure_params 2KiB
# filecoin-proofs' own verifier (the tests' independent check) reads its keys from here.
export FIL_PROOFS_PARAMETER_CACHE="$CUZK_TEST_PARAMS"

step "style: cargo fmt --check, cargo clippy -D warnings (library alone, and every target with the tools)"
(cd "$root" && cargo fmt --all --check)
(cd "$root" && cargo clippy --release --locked -p cuzk --lib -- -D warnings)
(cd "$root" && cargo clippy --release --locked --workspace --all-targets -- -D warnings)
# The GPU test target with the test-only fault injector (scripts/gpu-build.sh builds it so).
# Its cuda/ differs (one more kernel), so nvcc runs again: for one architecture, as linting
# reads no device code.
(cd "$root" && CUZK_CUDA_ARCHS=90 cargo clippy --release --locked -p cuzk --features fault-injection --lib --test gpu -- -D warnings)

step "the shipped library's features: never cuzk's private \`internals\` or \`fault-injection\`"
shipped_features=$(cd "$root" && cargo tree --locked -p cuzk --edges features,no-dev --invert cuzk --prefix none)
if grep -qE 'cuzk feature "(internals|fault-injection)"' <<<"$shipped_features"; then
    echo "the shipped library is built with a private cuzk feature:" >&2
    echo "$shipped_features" >&2
    exit 1
fi

step "cargo test --release (CPU tests; the GPU target tests/gpu.rs is reported as ignored without CUZK_GPU_TESTS=1)"
(cd "$root" && cargo test --release --locked --workspace -- --test-threads=2)

fixture="$root/target/fixtures/test-2k"
seal_fixture 2KiB "$fixture"
build_c_example
step "C example: prove + verify"
run_c_example "$fixture"
update="$root/target/fixtures/update-2k"
update_fixture 2KiB "$update"
step "C update example: prove + verify"
run_update_example "$update"

step "Go package, and cuzk-daemon end to end (daemon/e2e, the binary cargo test built)"
CUZK_FIXTURE_DIR="$fixture" CUZK_DAEMON_BIN="$root/target/release/cuzk-daemon" "$root/scripts/test-go.sh"

step "packaging: libcuzk.a exports only cuzk_*, links next to another Rust static library; the prefix moves; the prebuilt tarball builds the Go package"
"$root/scripts/check-static-lib.sh" "$root/target/cuzk-prefix"
tarball="$("$root/scripts/package.sh")"
CUZK_TARBALL="$tarball" "$root/scripts/install-libcuzk.sh"
(cd "$root/cuzkffi" && PKG_CONFIG_PATH="$root/cuzkffi/libcuzk/lib/pkgconfig" go test -tags cuzk -count=1 -run 'TestVersion|TestDefaultConfig' .)

step "fuzzing: a short AFL++ run of every target (input checks and C ABI; fails on any crash or hang)"
CUZK_FUZZ_SECONDS=30 "$root/scripts/fuzz.sh"

step "all tests passed (${SECONDS} s in all)"
