#!/usr/bin/env bash
# Tests the Go binding (cuzkffi/) in both of its builds: the stub mode (no build tag, pure Go,
# CGO_ENABLED=0: every library call returns ErrNotBuilt), then against the release build of
# libcuzk (-tags cuzk).
#
# Needs `cargo build --release` to have run. Installs the library into target/cuzk-prefix
# (scripts/install.sh), points pkg-config there, then runs `go vet` and `go test` in cuzkffi/,
# stub mode first; Go fetches its modules from the module proxy by itself.
#
# The proving tests need 2KiB fixtures and their parameters, from the environment:
#   CUZK_TEST_PARAMS       parameter cache directory (cuzk-fixtures params makes one)
#   CUZK_FIXTURE_DIR       directory with c1.json and sector.json (cuzk-fixtures seal makes
#                          one); when unset but CUZK_TEST_PARAMS is set, one is made here.
#   CUZK_POST_FIXTURE_DIR  directory with post.json (cuzk-fixtures post makes one); when unset
#                          but CUZK_TEST_PARAMS is set, one is made here, and the PoSt
#                          parameters are added to CUZK_TEST_PARAMS (when cuzk-fixtures knows
#                          `post`).
#   CUZK_UPDATE_FIXTURE_DIR directory with update.json (cuzk-fixtures update makes one); when
#                          unset but CUZK_TEST_PARAMS is set, one is made here.
# Without them the proving tests skip (and say so); the other tests still run.
#
# Then cuzk-daemon's end-to-end test (daemon/e2e: the daemon binary driven by a gRPC client
# generated from Curio's proving.proto, its proofs verified through cuzkffi):
#   CUZK_DAEMON_BIN        the cuzk-daemon binary; default target/release/cuzk-daemon (cargo
#                          test --release --workspace builds it). It needs CUZK_TEST_PARAMS and
#                          the three fixtures above. When CUZK_DAEMON_BIN is set they must be
#                          there; when it is unset and the default binary or the parameters are
#                          missing, the daemon test is skipped (and says so).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$root/target/cuzk-prefix"

command -v go >/dev/null 2>&1 || { echo "test-go.sh: go is not installed" >&2; exit 1; }
command -v pkg-config >/dev/null 2>&1 || { echo "test-go.sh: pkg-config is not installed" >&2; exit 1; }

"$root/scripts/install.sh" "$prefix"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CGO_ENABLED=1

if [[ -n "${CUZK_TEST_PARAMS:-}" && -z "${CUZK_FIXTURE_DIR:-}" ]]; then
    fixtures="$root/target/release/cuzk-fixtures"
    if [[ -x "$fixtures" ]]; then
        export CUZK_FIXTURE_DIR="$root/target/cuzk-go-fixture"
        "$fixtures" seal --sector-size 2KiB --out "$CUZK_FIXTURE_DIR" --miner 1000 --sector 1
    fi
fi
if [[ -n "${CUZK_TEST_PARAMS:-}" && -z "${CUZK_POST_FIXTURE_DIR:-}" ]]; then
    fixtures="$root/target/release/cuzk-fixtures"
    post_dir="$root/target/cuzk-go-post-fixture"
    # An older cuzk-fixtures answers `post` (without flags, which it would refuse first) with
    # "unknown command": then the PoSt tests skip.
    probe="$([[ -x "$fixtures" ]] && "$fixtures" post 2>&1 || true)"
    if [[ -x "$fixtures" && "$probe" != *"unknown command"* ]]; then
        export CUZK_POST_FIXTURE_DIR="$post_dir"
        "$fixtures" post --sector-size 2KiB --out "$CUZK_POST_FIXTURE_DIR" --miner 1000 --sectors 3
        # `params` makes only what is missing: here the WindowPoSt and WinningPoSt parameters.
        "$fixtures" params --sector-size 2KiB --dir "$CUZK_TEST_PARAMS"
    elif [[ -x "$fixtures" ]]; then
        echo "test-go.sh: $fixtures has no \`post\` command: no PoSt fixture" >&2
    fi
fi
if [[ -n "${CUZK_TEST_PARAMS:-}" && -z "${CUZK_UPDATE_FIXTURE_DIR:-}" && -x "$root/target/release/cuzk-fixtures" ]]; then
    export CUZK_UPDATE_FIXTURE_DIR="$root/target/cuzk-go-update-fixture"
    "$root/target/release/cuzk-fixtures" update --sector-size 2KiB --out "$CUZK_UPDATE_FIXTURE_DIR" --miner 1000
    # `params` makes only what is missing: here the update parameters.
    "$root/target/release/cuzk-fixtures" params --sector-size 2KiB --dir "$CUZK_TEST_PARAMS"
fi
if [[ -z "${CUZK_UPDATE_FIXTURE_DIR:-}" ]]; then
    echo "test-go.sh: CUZK_UPDATE_FIXTURE_DIR is not set: the update proving tests will be skipped" >&2
fi
if [[ -z "${CUZK_POST_FIXTURE_DIR:-}" ]]; then
    echo "test-go.sh: CUZK_POST_FIXTURE_DIR is not set: the PoSt proving tests will be skipped" >&2
else
    echo "test-go.sh: PoSt fixture ${CUZK_POST_FIXTURE_DIR}"
fi
if [[ -z "${CUZK_FIXTURE_DIR:-}" ]]; then
    echo "test-go.sh: CUZK_FIXTURE_DIR is not set: the proving tests will be skipped" >&2
else
    echo "test-go.sh: fixture ${CUZK_FIXTURE_DIR}, parameters ${CUZK_TEST_PARAMS:-(library default)}"
fi

cd "$root/cuzkffi"
go version
echo "test-go.sh: stub mode (no build tag, CGO_ENABLED=0)"
CGO_ENABLED=0 go vet ./...
CGO_ENABLED=0 go test -count=1 ./...
echo "test-go.sh: library mode (-tags cuzk)"
go vet -tags cuzk ./...
# -p 1: one package at a time, so -v streams each test as it runs.
go test -tags cuzk -p 1 -count=1 -timeout 30m -v ./...

daemon_bin="${CUZK_DAEMON_BIN:-$root/target/release/cuzk-daemon}"
if [[ -x "$daemon_bin" && -n "${CUZK_TEST_PARAMS:-}" ]]; then
    echo "test-go.sh: cuzk-daemon end-to-end (daemon/e2e) with $daemon_bin"
    cd "$root/daemon/e2e"
    unformatted="$(gofmt -l .)"
    if [[ -n "$unformatted" ]]; then
        echo "test-go.sh: not gofmt-formatted: $unformatted" >&2
        exit 1
    fi
    go vet -tags cuzk ./...
    CUZK_DAEMON_BIN="$daemon_bin" go test -tags cuzk -p 1 -count=1 -timeout 10m -v ./...
elif [[ -n "${CUZK_DAEMON_BIN:-}" ]]; then
    echo "test-go.sh: CUZK_DAEMON_BIN is set, but $CUZK_DAEMON_BIN is not an executable or CUZK_TEST_PARAMS is not set" >&2
    exit 1
else
    echo "test-go.sh: $daemon_bin is not built or CUZK_TEST_PARAMS is not set: the cuzk-daemon end-to-end test is skipped" >&2
fi
