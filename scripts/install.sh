#!/usr/bin/env bash
# Installs the release build of libcuzk into a prefix, for C/Go consumers:
#
#   PREFIX/lib/libcuzk.so.<version>      (the library; SONAME libcuzk.so.<abi>)
#   PREFIX/lib/libcuzk.so.<abi>          -> libcuzk.so.<version>   (what the loader looks for)
#   PREFIX/lib/libcuzk.so                -> libcuzk.so.<abi>       (what the linker looks for)
#   PREFIX/lib/libcuzk.a                 (static: one object whose only global symbols are the
#                                         header's cuzk_* functions; CUDA's runtime inside)
#   PREFIX/include/cuzk.h
#   PREFIX/lib/pkgconfig/cuzk.pc         (shared: Libs with -L and an rpath to PREFIX/lib)
#   PREFIX/lib/pkgconfig/cuzk-static.pc  (static: libcuzk.a and the system libraries it needs)
#
# The .pc files name their directories relative to themselves (${pcfiledir}), so the prefix
# can be moved or unpacked anywhere (scripts/package.sh makes a tarball of it).
#
# Usage: scripts/install.sh [PREFIX]     (default: target/cuzk-prefix)
#
# It builds the library (cargo build --release -p cuzk --lib) and needs binutils (ld, objcopy,
# ar, readelf) for the static library.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${1:-$root/target/cuzk-prefix}"

die() {
    echo "install.sh: $*" >&2
    exit 1
}

lib_src="$root/target/release/libcuzk.so"
static_src="$root/target/release/libcuzk.a"
header_src="$root/include/cuzk.h"
# Built here, on its own: a build of the tools or the tests unifies cuzk's private `internals`
# feature into the library they use, which must not be what ships.
(cd "$root" && cargo build --release --locked -p cuzk --lib) || die "cargo build of the library failed"
[[ -f "$lib_src" && -f "$static_src" ]] || die "$lib_src or $static_src was not built"
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
prefix="$(cd "$prefix" && pwd)"

real="libcuzk.so.$version"
install -m 0755 "$lib_src" "$prefix/lib/$real"
if [[ "$soname" != "$real" ]]; then
    ln -sfn "$real" "$prefix/lib/$soname"
fi
ln -sfn "$soname" "$prefix/lib/libcuzk.so"
install -m 0644 "$header_src" "$prefix/include/cuzk.h"

# The static library as one relocatable object: every object of the Rust archive, and what
# they need of CUDA's static runtime, linked together; then every global symbol but the
# header's functions made local, so that it links next to another Rust static library (its own
# std, blst: libfilcrypto.a) without clashes. Its COMDAT groups are dissolved: the linker
# would otherwise keep one copy of a group both libraries have (Rust's DW.ref.rust_eh_personality),
# possibly ours, now local, leaving the other library's references unresolved. Rust's embedded
# LLVM bitcode is dropped (binutils' LTO plugin cannot read it, and nothing links it).
cuda_home="${CUDA_HOME:-$root/.cuda}"
cudart="$cuda_home/lib/libcudart_static.a"
[[ -f "$cudart" ]] || cudart="$cuda_home/lib64/libcudart_static.a"
[[ -f "$cudart" ]] || die "no libcudart_static.a under $cuda_home (scripts/install-cuda.sh)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
grep -oE '\bcuzk_[a-z0-9_]+\(' "$header_src" | tr -d '(' | sort -u >"$work/exported"
ld -r -o "$work/cuzk.o" --whole-archive "$static_src" --no-whole-archive "$cudart" || die "partial link of $static_src failed"
objcopy --keep-global-symbols="$work/exported" --remove-section=.group --remove-section=.llvmbc --remove-section=.llvmcmd \
    "$work/cuzk.o" "$work/libcuzk.o"
rm -f "$work/libcuzk.a"
ar rcs "$work/libcuzk.a" "$work/libcuzk.o"
install -m 0644 "$work/libcuzk.a" "$prefix/lib/libcuzk.a"

cat >"$prefix/lib/pkgconfig/cuzk.pc" <<'PC'
prefix=${pcfiledir}/../..
libdir=${prefix}/lib
includedir=${prefix}/include

Name: cuzk
Description: Embeddable Groth16 proving engine for Filecoin (C ABI)
PC
cat >>"$prefix/lib/pkgconfig/cuzk.pc" <<PC
Version: $version
PC
cat >>"$prefix/lib/pkgconfig/cuzk.pc" <<'PC'
Libs: -L${libdir} -Wl,-rpath,${libdir} -lcuzk
Cflags: -I${includedir}
PC
sed -e 's/^Name: cuzk$/Name: cuzk-static/' \
    -e 's|^Libs: .*|Libs: ${libdir}/libcuzk.a -lstdc++ -lm -ldl -lpthread -lrt|' \
    "$prefix/lib/pkgconfig/cuzk.pc" >"$prefix/lib/pkgconfig/cuzk-static.pc"

echo "installed cuzk $version into $prefix (SONAME $soname; libcuzk.a exports $(wc -l <"$work/exported") cuzk_* functions)"
echo "  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}"
