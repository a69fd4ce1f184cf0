#!/usr/bin/env bash
# Makes the prebuilt tarball: a fresh scripts/install.sh prefix (lib/libcuzk.so*, lib/libcuzk.a,
# include/cuzk.h, lib/pkgconfig/cuzk{,-static}.pc, relocatable) packed as
# cuzk-<version>-linux-<arch>.tar.gz, with everything under cuzk-<version>/.
#
#   scripts/package.sh [OUTDIR]      (default: target/package); prints the tarball's path
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
out="$(mkdir -p "${1:-$root/target/package}" && cd "${1:-$root/target/package}" && pwd)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
"$root/scripts/install.sh" "$stage/prefix" >&2
version="$(basename "$(ls "$stage"/prefix/lib/libcuzk.so.*.*.*)" | sed 's/^libcuzk\.so\.//')"
mv "$stage/prefix" "$stage/cuzk-$version"
tarball="$out/cuzk-$version-linux-$(uname -m).tar.gz"
tar -C "$stage" -czf "$tarball" "cuzk-$version"
echo "$tarball"
