# Shared by the scripts: paths and the 2KiB test fixture. Source it; it sets `root`.
# Expensive artefacts live outside the clone so that every clone and CI run reuses them:
#   CUZK_TEST_PARAMS (default ~/.cache/cuzk/test-params): random-setup Groth16 parameters,
#   FOR TESTS ONLY — never point it at a production parameter directory.

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CUZK_TEST_PARAMS="${CUZK_TEST_PARAMS:-$HOME/.cache/cuzk/test-params}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"

# A step's heading, after the time the one before it took (CI's time limit is the sum).
step() {
    [[ -n "${step_started:-}" ]] && printf '    (%d s)\n' "$((SECONDS - step_started))"
    step_started=$SECONDS
    printf '\n==> %s\n' "$*"
}

# The CUDA compiler (PyPI wheels into .cuda/ unless an nvcc is installed): the `cuda` feature
# is on by default, so every build compiles cuda/ even where no GPU will run it.
cuda_toolchain() {
    step "CUDA compiler"
    "$root/scripts/install-cuda.sh" >/dev/null
    # shellcheck source=scripts/nvcc-env.sh
    source "$root/scripts/nvcc-env.sh"
}

# The tools (cuzk-fixtures, cuzk-bench: they turn on cuzk's private `internals` feature), then
# the shipped library on its own, so that target/release/libcuzk.* is built without it.
build_release() {
    cuda_toolchain
    step "cargo build --release: tools (cuzk-tools), then the library (with the CUDA backend)"
    (cd "$root" && cargo build --release --locked -p cuzk-tools --bins && build_library)
}

build_library() {
    (cd "$root" && cargo build --release --locked -p cuzk --lib)
}

# Random-setup parameters for a sector size, generated once (2KiB, every kind: ~1.5 min on 2 cores).
ensure_params() {
    local kinds="${2:-porep,post,update}"
    step "Groth16 parameters for $1 $kinds (random setup, tests only) in $CUZK_TEST_PARAMS"
    "$root/target/release/cuzk-fixtures" params --sector-size "$1" --kinds "$kinds" --dir "$CUZK_TEST_PARAMS"
}

# Seals a fresh random sector of size $1 into directory $2 (c1.json, sector.json).
seal_fixture() {
    step "sealing a random $1 sector into $2"
    rm -rf "$2"
    "$root/target/release/cuzk-fixtures" seal --sector-size "$1" --out "$2" --miner 1000 --sector "$((RANDOM + 1))"
}

json_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# Installs libcuzk into target/cuzk-prefix and builds the C examples against it.
build_c_example() {
    step "C examples against the installed library (pkg-config)"
    "$root/scripts/install.sh" "$root/target/cuzk-prefix" >/dev/null
    export PKG_CONFIG_PATH="$root/target/cuzk-prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    local example
    for example in prove_c2 prove_update; do
        # shellcheck disable=SC2046
        cc -std=c11 -O2 -Wall -Wextra -Werror -o "$root/target/$example" "$root/examples/$example.c" $(pkg-config --cflags --libs cuzk)
    done
}

# Seals a CC sector of size $1, updates it and writes its update fixture into directory $2.
update_fixture() {
    step "a random $1 SnapDeals update into $2"
    rm -rf "$2"
    "$root/target/release/cuzk-fixtures" update --sector-size "$1" --out "$2" --miner 1000
}

# The C update example on the fixture of directory $1 (a 2KiB update: registered proof 0).
run_update_example() {
    "$root/target/prove_update" "$1" 0 "$CUZK_TEST_PARAMS"
}

run_c_example() {
    local fixture="$1"
    "$root/target/prove_c2" "$fixture/c1.json" "$(json_field "$fixture/sector.json" sector_id)" \
        "$(json_field "$fixture/sector.json" miner_id)" "$CUZK_TEST_PARAMS"
}
