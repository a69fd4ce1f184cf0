# Source me (bash/zsh): finds nvcc ($NVCC, $CUDA_HOME/bin/nvcc, nvcc on PATH, <repo>/.cuda/bin/nvcc)
# and exports NVCC, CUDA_HOME, PATH and LIBRARY_PATH so that the `cc` crate
# (cc::Build::new().cuda(true)) and sppark's build.rs find nvcc, and the linker finds
# libcudart_static.a. Like install-cuda.sh it skips nvcc older than $CUZK_CUDA_MIN (12.8).
# Run scripts/install-cuda.sh first if nothing is found.
_cuzk_env() {
    local repo c v n="" min="${CUZK_CUDA_MIN:-12.8}"
    repo="$(cd "$(dirname "${BASH_SOURCE[0]:-${(%):-%x}}")/.." && pwd)"
    for c in "${NVCC:-}" "${CUDA_HOME:+$CUDA_HOME/bin/nvcc}" "$(command -v nvcc 2>/dev/null)" "$repo/.cuda/bin/nvcc"; do
        [ -n "$c" ] && c="$(command -v "$c" 2>/dev/null)" || continue
        v="$("$c" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\),.*/\1/p')"
        if [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$min" "$v" | sort -V | head -n1)" = "$min" ]; then
            n="$c"; break
        fi
        echo "nvcc-env.sh: skipping $c (${v:-not a working nvcc}${v:+ < $min})" >&2
    done
    if [ -z "$n" ]; then
        echo "nvcc-env.sh: no working nvcc; run $repo/scripts/install-cuda.sh" >&2
        return 1
    fi
    n="$(readlink -f "$n")"
    export NVCC="$n"
    export CUDA_HOME="$(cd "$(dirname "$n")/.." && pwd)"
    export CUDA_PATH="$CUDA_HOME"
    case ":$PATH:" in *":$CUDA_HOME/bin:"*) ;; *) export PATH="$CUDA_HOME/bin:$PATH" ;; esac
    for c in "$CUDA_HOME/lib64" "$CUDA_HOME/lib"; do
        if [ -f "$c/libcudart_static.a" ]; then
            case ":${LIBRARY_PATH:-}:" in *":$c:"*) ;; *) export LIBRARY_PATH="$c${LIBRARY_PATH:+:$LIBRARY_PATH}" ;; esac
            break
        fi
    done
}
_cuzk_env
