#!/usr/bin/env bash
# Install a self-contained CUDA 13.0 compiler toolchain (nvcc, cicc, ptxas, fatbinary,
# nvlink, crt + runtime headers, CCCL headers, libcudart_static.a) from PyPI wheels,
# unless a usable nvcc is already available.
#
#   scripts/install-cuda.sh [DIR]        DIR defaults to <repo>/.cuda (git-ignored)
#
# Lookup order for an existing nvcc: $NVCC, $CUDA_HOME/bin/nvcc, nvcc on PATH, DIR/bin/nvcc.
# "Usable" = runs and reports release >= $CUZK_CUDA_MIN (default 12.8, the first with sm_120).
# Set CUZK_CUDA_FORCE=1 to install into DIR even when another nvcc is usable.
# Needs only python3 with pip (override with $PYTHON) and network access to PyPI
# (pip honours PIP_INDEX_URL etc.). Linux x86_64 / aarch64.
#
# Result: DIR is laid out like a normal CUDA_HOME:
#   DIR/bin/{nvcc,ptxas,fatbinary,nvlink,cudafe++,bin2c}   DIR/nvvm/{bin/cicc,libdevice}
#   DIR/include (cuda_runtime.h, crt/), DIR/include/cccl (cub, thrust, cuda/std; nvcc adds
#   it with -isystem by itself), DIR/lib/libcudart_static.a (+ lib64 -> lib and
#   targets/<arch>-linux/{include,lib} symlinks, where the `cc` crate looks).
set -euo pipefail

PKGS=(
    nvidia-cuda-nvcc==13.0.88
    nvidia-cuda-runtime==13.0.96
    nvidia-cuda-crt==13.0.88
    nvidia-cuda-cccl==13.0.85
    nvidia-nvvm==13.0.88
)
MIN="${CUZK_CUDA_MIN:-12.8}"

die() { printf 'install-cuda.sh: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'install-cuda.sh: %s\n' "$*" >&2; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -le 1 ] || die "usage: $0 [DIR]"
dir="${1:-$root/.cuda}"
dir="$(realpath -m "$dir")"

# Prints the release (e.g. 13.0) of a working nvcc, fails otherwise.
nvcc_release() {
    local out
    [ -x "$1" ] || return 1
    out="$("$1" --version 2>/dev/null)" || return 1
    sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\),.*/\1/p' <<<"$out" | head -n1 | grep .
}
new_enough() { # $1 >= $MIN ?
    [ "$(printf '%s\n%s\n' "$MIN" "$1" | sort -V | head -n1)" = "$MIN" ]
}
done_with() { # nvcc path
    local home
    home="$(cd "$(dirname "$(readlink -f "$1")")/.." && pwd)"
    say "using $1 (CUDA $(nvcc_release "$1"))"
    printf 'CUDA_HOME=%s\n' "$home"
    exit 0
}

# 1. An existing nvcc elsewhere?
if [ "${CUZK_CUDA_FORCE:-0}" != 1 ]; then
    cands=()
    [ -n "${NVCC:-}" ] && cands+=("$(command -v "$NVCC" || echo "$NVCC")")
    [ -n "${CUDA_HOME:-}" ] && cands+=("$CUDA_HOME/bin/nvcc")
    if p="$(command -v nvcc)"; then cands+=("$p"); fi
    for c in ${cands[@]+"${cands[@]}"}; do
        [ "$c" -ef "$dir/bin/nvcc" ] && continue        # DIR is checked below
        if v="$(nvcc_release "$c")"; then
            if new_enough "$v"; then done_with "$c"; fi
            say "ignoring $c: CUDA $v < $MIN"
        else
            say "ignoring $c: not a working nvcc"
        fi
    done
fi

# 2. Already installed in DIR?
stamp="$dir/.cuzk-cuda-wheels"
want="$(printf '%s\n' "${PKGS[@]}")"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && nvcc_release "$dir/bin/nvcc" >/dev/null \
   && [ -f "$dir/lib/libcudart_static.a" ] && [ -x "$dir/nvvm/bin/cicc" ]; then
    done_with "$dir/bin/nvcc"
fi

# 3. Install from PyPI.
mkdir -p "$dir" || die "cannot create $dir"
case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) tdir=x86_64-linux ;;
    Linux-aarch64) tdir=sbsa-linux ;;
    *) die "unsupported platform $(uname -s)-$(uname -m): the nvidia-* wheels exist for Linux x86_64/aarch64 only" ;;
esac
py="${PYTHON:-python3}"
command -v "$py" >/dev/null || die "$py not found (set PYTHON=/path/to/python3)"
"$py" -m pip --version >/dev/null 2>&1 || die "'$py -m pip' does not work; install pip (e.g. $py -m ensurepip)"

stage="$(mktemp -d "$dir/.stage.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
say "installing ${PKGS[*]} into $dir (~300 MB unpacked)"
PIP_ROOT_USER_ACTION=ignore "$py" -m pip install --quiet --disable-pip-version-check --no-input --no-cache-dir \
    --no-deps --only-binary=:all: --no-compile --target "$stage" "${PKGS[@]}" \
    || die "pip install failed (network/PyPI access needed)"
src="$stage/nvidia/cu13"
for f in bin/nvcc bin/ptxas bin/fatbinary nvvm/bin/cicc include/cuda_runtime.h include/crt/host_config.h \
         include/cccl/cub/cub.cuh lib/libcudart_static.a; do
    [ -e "$src/$f" ] || die "unexpected wheel layout: $src/$f missing"
done

rm -f "$stamp"
rm -rf "$dir/bin" "$dir/include" "$dir/lib" "$dir/lib64" "$dir/nvvm" "$dir/targets" "$dir/wheels"
mv "$src/bin" "$src/include" "$src/lib" "$src/nvvm" "$dir/"
mkdir -p "$dir/wheels" && mv "$stage"/*.dist-info "$dir/wheels/"   # provenance (licences, RECORD)
ln -s lib "$dir/lib64"
mkdir -p "$dir/targets/$tdir"
ln -s ../../include "$dir/targets/$tdir/include"
ln -s ../../lib "$dir/targets/$tdir/lib"
[ -e "$dir/lib/libcudart.so" ] || ln -s libcudart.so.13 "$dir/lib/libcudart.so"

v="$(nvcc_release "$dir/bin/nvcc")" || die "installed $dir/bin/nvcc does not run"
printf '%s\n' "$want" >"$stamp"
say "installed CUDA $v"
printf 'CUDA_HOME=%s\n' "$dir"
