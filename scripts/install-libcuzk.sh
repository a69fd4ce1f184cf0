#!/usr/bin/env bash
# Puts libcuzk where the Go package (cuzkffi/) finds it without a system install, as
# filecoin-ffi's install-filcrypto does for libfilcrypto: into cuzkffi/libcuzk/ (git-ignored).
#
#   scripts/install-libcuzk.sh                       built from this checkout (scripts/install.sh)
#   CUZK_TARBALL=FILE scripts/install-libcuzk.sh     unpacked from a prebuilt tarball
#                                                    (scripts/package.sh makes one)
#   cd cuzkffi && go generate                         the same (doc.go's go:generate line)
#
# Then build with the library: PKG_CONFIG_PATH=<repo>/cuzkffi/libcuzk/lib/pkgconfig and
# `go build -tags cuzk` (the .pc files are relative to themselves: the tree can move).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dest="$root/cuzkffi/libcuzk"
if [[ -n "${CUZK_TARBALL:-}" ]]; then
    [[ -f "$CUZK_TARBALL" ]] || { echo "install-libcuzk.sh: no tarball $CUZK_TARBALL" >&2; exit 1; }
    unpacked="$(mktemp -d)"
    trap 'rm -rf "$unpacked"' EXIT
    tar -C "$unpacked" -xzf "$CUZK_TARBALL"
    top=("$unpacked"/cuzk-*)
    [[ ${#top[@]} -eq 1 && -f "${top[0]}/lib/pkgconfig/cuzk.pc" ]] || { echo "install-libcuzk.sh: $CUZK_TARBALL is not a cuzk tarball" >&2; exit 1; }
    rm -rf "$dest"
    mv "${top[0]}" "$dest"
    echo "unpacked $(basename "${top[0]}") into $dest"
else
    "$root/scripts/install.sh" "$dest"
fi
echo "  export PKG_CONFIG_PATH=$dest/lib/pkgconfig; go build -tags cuzk ./..."
