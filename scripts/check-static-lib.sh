#!/usr/bin/env bash
# Checks an installed prefix (scripts/install.sh) the way a C or Go consumer uses it:
#   1. libcuzk.a's only global symbols are the header's cuzk_* functions;
#   2. a program links libcuzk.a next to another Rust static library with its own Rust
#      standard library and blst (tests/static-link/other, as libfilcrypto.a is) and runs;
#   3. the prefix still works after it is moved: a program built through the moved cuzk.pc
#      finds libcuzk.so through the rpath the .pc gives.
#
#   scripts/check-static-lib.sh [PREFIX]     (default: target/cuzk-prefix)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
prefix="$(cd "${1:-$root/target/cuzk-prefix}" && pwd)"
die() { echo "check-static-lib.sh: $*" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

grep -oE '\bcuzk_[a-z0-9_]+\(' "$prefix/include/cuzk.h" | tr -d '(' | sort -u >"$work/header"
readelf -sW "$prefix/lib/libcuzk.a" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" { print $8 }' | sort >"$work/exported"
diff -u "$work/header" "$work/exported" >"$work/diff" || die "libcuzk.a's global symbols are not the header's functions: $(head -20 "$work/diff")"
echo "libcuzk.a exports exactly the header's $(wc -l <"$work/header") functions"

other_target="$root/target/static-link"
(cd "$root/tests/static-link/other" && cargo build --release --locked --target-dir "$other_target" -q)
other="$other_target/release/libother_rust_staticlib.a"
readelf -sW "$other" | awk '$5 == "GLOBAL" && $7 != "UND" { print $8 }' >"$work/other"
grep -qx blst_p1_uncompress "$work/other" || die "$other holds no blst"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc -o "$work/both" "$root/tests/static-link/main.c" $(pkg-config --cflags cuzk-static) \
    $(pkg-config --libs cuzk-static) "$other" -lpthread -ldl -lm ||
    die "libcuzk.a does not link next to another Rust static library"
"$work/both"

cp -a "$prefix" "$work/moved"
export PKG_CONFIG_PATH="$work/moved/lib/pkgconfig"
# shellcheck disable=SC2046
cc -o "$work/shared" "$root/tests/static-link/main.c" $(pkg-config --cflags --libs cuzk) "$other" -lpthread -ldl -lm
readelf -d "$work/shared" >"$work/dynamic"
grep -q "RUNPATH.*$work/moved/lib" "$work/dynamic" || die "the moved cuzk.pc gives no rpath to the moved prefix"
"$work/shared"
echo "the moved prefix links and runs (cuzk.pc relative to itself)"
