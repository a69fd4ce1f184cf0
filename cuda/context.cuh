// The per-device context: made once per process (cuzk_gpu_context_new) and reused by every
// call. It keeps the NTT buffers of H and the device copy of the witness, each grown to the
// largest circuit seen and not freed between calls (3 × 2^27 scalars = 12.9 GB for a 32GiB
// partition: allocating that per proof would be a page-table storm on the device) until the
// engine releases memory, and the host threads that fill the pinned staging buffers.
#pragma once

#include <thread>

// Device scalars that only grow. Calls on one device are ordered by the caller, so a buffer
// is never in use by two calls.
class scalar_buffer {
    fr_t* d = nullptr;
    size_t capacity = 0;
public:
    scalar_buffer() = default;
    scalar_buffer(const scalar_buffer&) = delete;
    scalar_buffer& operator=(const scalar_buffer&) = delete;
    ~scalar_buffer() { if (d) (void)cudaFree(d); }

    // At least `scalars` scalars; the device must be selected.
    fr_t* at_least(size_t scalars)
    {
        if (scalars > capacity) {
            if (d)
                CUDA_OK(cudaFree(d));
            d = nullptr;
            capacity = 0;
            CUDA_OK(cudaMalloc(&d, scalars * sizeof(fr_t)));
            capacity = scalars;
        }
        return d;
    }

    // Frees the scalars (the next at_least allocates again); the device must be selected.
    void release()
    {
        fr_t* held = d;
        d = nullptr;
        capacity = 0;
        if (held)
            CUDA_OK(cudaFree(held));
    }

    size_t bytes() const { return capacity * sizeof(fr_t); }
};

struct cuzk_gpu_context {
    const gpu_t& gpu;
    thread_pool_t copy_threads;

    explicit cuzk_gpu_context(const gpu_t& device)
        : gpu(device), copy_threads(std::min(8u, std::max(1u, std::thread::hardware_concurrency())))
    {}
    cuzk_gpu_context(const cuzk_gpu_context&) = delete;
    cuzk_gpu_context& operator=(const cuzk_gpu_context&) = delete;
    ~cuzk_gpu_context() { gpu.select(); }

    fr_t* ntt_buffers(size_t scalars) { gpu.select(); return ntt.at_least(scalars); }
    fr_t* witness_buffer(size_t scalars) { gpu.select(); return witness.at_least(scalars); }

    // Gives the buffers back to the device (an idle engine, or the caller asking).
    void release_buffers() { gpu.select(); ntt.release(); witness.release(); }

    size_t ntt_buffer_bytes() const { return ntt.bytes(); }
    size_t witness_buffer_bytes() const { return witness.bytes(); }

private:
    // Destroyed after ~cuzk_gpu_context's body has selected the device.
    scalar_buffer ntt;
    scalar_buffer witness;
};
