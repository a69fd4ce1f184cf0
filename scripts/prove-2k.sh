#!/usr/bin/env bash
# The main job: prove a 2KiB PoRep sector end to end through the C ABI — parameters if
# missing, seal a random sector, C2 (GPU when present, else CPU), verify, timings table.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build_release
ensure_params 2KiB porep
seal_fixture 2KiB "$root/target/fixtures/prove-2k"
build_c_example
step "C2 through the C ABI (examples/prove_c2.c)"
run_c_example "$root/target/fixtures/prove-2k"
