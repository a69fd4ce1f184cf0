// gpu_hog: another process holding (nearly) all of CUDA device 0's free memory, for
// `cuzk-bench pressure`. Allocates until at most LEAVE_MIB (default 0: all it can get) are
// left free, prints "held <MiB> free <MiB>" on stdout, holds the memory until its stdin
// closes, then frees it and exits.
//
//   gpu_hog [LEAVE_MIB]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
    const size_t MiB = size_t(1) << 20;
    const size_t leave = argc > 1 ? std::strtoull(argv[1], nullptr, 10) * MiB : 0;
    std::vector<void*> blocks;
    size_t held = 0, free_bytes = 0, total = 0;
    // Large blocks first, halving on failure down to the allocation granularity (2 MiB).
    for (size_t block = size_t(1) << 30; block >= 2 * MiB;) {
        cudaError_t e = cudaMemGetInfo(&free_bytes, &total);
        if (e != cudaSuccess) {
            std::fprintf(stderr, "gpu_hog: cudaMemGetInfo: %s\n", cudaGetErrorString(e));
            return 1;
        }
        if (free_bytes <= leave + 2 * MiB)
            break;
        size_t size = std::min(block, free_bytes - leave);
        void* p = nullptr;
        if (cudaMalloc(&p, size) == cudaSuccess) {
            blocks.push_back(p);
            held += size;
        } else {
            cudaGetLastError();
            block /= 2;
        }
    }
    cudaMemGetInfo(&free_bytes, &total);
    std::printf("held %zu free %zu\n", held / MiB, free_bytes / MiB);
    std::fflush(stdout);
    while (std::getchar() != EOF) {
    }
    for (void* p : blocks)
        cudaFree(p);
    return 0;
}
