// The per-device context: made once per process (cuzk_gpu_context_new) and reused by every
// call. It keeps the NTT buffers of H, grown to the largest domain seen and never freed
// between calls (3 × 2^27 scalars = 12.9 GB for a 32GiB partition: allocating that per proof
// would be a page-table storm on the device), and the host threads that fill the pinned
// staging buffers.
#pragma once

#include <thread>

struct cuzk_gpu_context {
    const gpu_t& gpu;
    thread_pool_t copy_threads;

    explicit cuzk_gpu_context(const gpu_t& device)
        : gpu(device), copy_threads(std::min(8u, std::max(1u, std::thread::hardware_concurrency())))
    {}
    cuzk_gpu_context(const cuzk_gpu_context&) = delete;
    cuzk_gpu_context& operator=(const cuzk_gpu_context&) = delete;
    ~cuzk_gpu_context()
    {
        if (d_ntt) {
            gpu.select();
            (void)cudaFree(d_ntt);
        }
    }

    // At least `scalars` scalars of device memory for the NTTs. Calls on one device are
    // ordered by the caller, so the buffer is never in use by two calls.
    fr_t* ntt_buffers(size_t scalars)
    {
        if (scalars > ntt_capacity) {
            gpu.select();
            if (d_ntt)
                CUDA_OK(cudaFree(d_ntt));
            d_ntt = nullptr;
            ntt_capacity = 0;
            CUDA_OK(cudaMalloc(&d_ntt, scalars * sizeof(fr_t)));
            ntt_capacity = scalars;
        }
        return d_ntt;
    }

    size_t ntt_buffer_bytes() const { return ntt_capacity * sizeof(fr_t); }

private:
    fr_t* d_ntt = nullptr;
    size_t ntt_capacity = 0;
};
