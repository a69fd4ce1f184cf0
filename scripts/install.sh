#!/usr/bin/env bash
# Installs the release build of libcuzk into a prefix, for C/Go consumers:
#
#   PREFIX/lib/libcuzk.so.<version>      (the library; SONAME libcuzk.so.<abi>)
#   PREFIX/lib/libcuzk.so.<abi>          -> libcuzk.so.<version>   (what the loader looks for)
#   PREFIX/lib/libcuzk.so                -> libcuzk.so.<abi>       (what the linker looks for)
#   PREFIX/include/cuzk.h
#   PREFIX/lib/pkgconfig/cuzk.pc         (Libs with -L and an rpath to PREFIX/lib, Cflags -I)
#
# Usage: scripts/install.sh [PREFIX]     (default: target/cuzk-prefix)
#
# It builds nothing: run `cargo build --release --lib` first.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${1:-$root/target/cuzk-prefix}"

die() {
    echo "install.sh: $*" >&2
    exit 1
}

lib_src="$root/target/release/libcuzk.so"
header_src="$root/include/cuzk.h"
# Built here, on its own: a build of the tools or the tests unifies cuzk's private `internals`
# feature into the library they use, which must not be what ships.
(cd "$root" && cargo build --release --locked -p cuzk --lib) || die "cargo build of the library failed"
[[ -f "$lib_src" ]] || die "$lib_src was not built"
[[ -f "$header_src" ]] || die "$header_src does not exist"

# The crate version: the first `version = "..."` of the [package] table of Cargo.toml.
version="$(awk '
    /^\[/ { in_package = ($0 == "[package]") }
    in_package && $1 == "version" && $2 == "=" { gsub(/"/, "", $3); print $3; exit }
' "$root/Cargo.toml")"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || die "could not read the package version from $root/Cargo.toml"

# The loader name comes from the library itself (its SONAME), so the symlinks always match it.
soname=""
if command -v readelf >/dev/null 2>&1; then
    soname="$(readelf -d "$lib_src" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')"
elif command -v objdump >/dev/null 2>&1; then
    soname="$(objdump -p "$lib_src" | awk '$1 == "SONAME" { print $2 }')"
fi
if [[ -z "$soname" ]]; then
    soname="libcuzk.so.1"
    echo "install.sh: could not read the SONAME (no readelf/objdump?); assuming $soname" >&2
fi
[[ "$soname" == libcuzk.so.* ]] || die "unexpected SONAME '$soname' in $lib_src"

mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
prefix="$(cd "$prefix" && pwd)" # absolute, for the rpath and pkg-config

real="libcuzk.so.$version"
install -m 0755 "$lib_src" "$prefix/lib/$real"
if [[ "$soname" != "$real" ]]; then
    ln -sfn "$real" "$prefix/lib/$soname"
fi
ln -sfn "$soname" "$prefix/lib/libcuzk.so"
install -m 0644 "$header_src" "$prefix/include/cuzk.h"

cat >"$prefix/lib/pkgconfig/cuzk.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: cuzk
Description: Embeddable Groth16 proving engine for Filecoin (C ABI)
Version: $version
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lcuzk
Cflags: -I\${includedir}
PC

echo "installed cuzk $version into $prefix (SONAME $soname)"
echo "  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}"
