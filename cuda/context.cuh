// The per-device context: made once per process (cuzk_gpu_context_new) and reused by every
// call. It keeps the NTT buffers of H and the device copy of the witness (a set for the
// WinningPoSt class, a set for the others), each grown to the
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
    fr_t* data() const { return d; }
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

    // The NTT buffers of `set` for a stage about to fill them (it ends an H MSM in parts there).
    fr_t* ntt_buffers(size_t scalars, uint32_t set)
    {
        gpu.select();
        h_next_part[checked(set)] = 0;
        return ntt[set].at_least(scalars);
    }
    // The witness buffer of `set` for a witness z of `scalars` values about to be copied in.
    fr_t* witness_buffer(size_t scalars, uint32_t set)
    {
        gpu.select();
        witness_len[checked(set)] = 0;
        fr_t* z = witness[set].at_least(scalars);
        witness_len[set] = scalars;
        return z;
    }

    // The witness of `scalars` values the last call of `set` copied in, for the stages that
    // read their scalars there (cuda/witness_msm.cuh).
    const fr_t* uploaded_witness(size_t scalars, uint32_t set) const
    {
        if (witness_len[checked(set)] != scalars || scalars == 0)
            throw std::invalid_argument("the device holds no witness of that length in the buffer set");
        return witness[set].data();
    }

    // The NTT buffers of `set` as the last call left them (at least `scalars`), for a stage
    // that reads what the previous one computed there.
    fr_t* ntt_results(size_t scalars, uint32_t set) const
    {
        const scalar_buffer& b = ntt[checked(set)];
        if (b.bytes() < scalars * sizeof(fr_t))
            throw std::invalid_argument("the NTT buffers hold fewer scalars than asked for");
        return b.data();
    }

    // The NTT buffers of `set` as scratch for a later stage of the call that left its
    // coefficients there, once they are consumed (it ends an H MSM in parts there); nullptr
    // when they hold fewer scalars.
    fr_t* ntt_scratch(size_t scalars, uint32_t set)
    {
        h_next_part[checked(set)] = 0;
        const scalar_buffer& b = ntt[set];
        return b.bytes() >= scalars * sizeof(fr_t) ? b.data() : nullptr;
    }

    // H's MSM in parts over the coefficients in `set`'s NTT buffers, its buckets kept from part
    // to part (quotient.cuh): where its next part starts, 0 when none is under way. Any other
    // use of the buffers ends it.
    size_t& h_msm_next_part(uint32_t set) { return h_next_part[checked(set)]; }

    // The buckets of an H MSM in parts of `set` where the NTT buffers lack room for them
    // beside its sort: at least `bytes`, kept (and grown) like the NTT buffers.
    void* h_msm_buckets(size_t bytes, uint32_t set)
    {
        gpu.select();
        return h_buckets[checked(set)].at_least((bytes + sizeof(fr_t) - 1) / sizeof(fr_t));
    }

    // Gives the buffers back to the device (an idle engine, or the caller asking).
    void release_buffers()
    {
        gpu.select();
        for (uint32_t set = 0; set < CUZK_GPU_BUFFER_SETS; set++) {
            ntt[set].release();
            witness[set].release();
            witness_len[set] = 0;
            h_buckets[set].release();
            h_next_part[set] = 0;
        }
    }

    // The NTT buffers' bytes, with the H MSMs' buckets kept beside them.
    size_t ntt_buffer_bytes() const
    {
        size_t bytes = 0;
        for (uint32_t set = 0; set < CUZK_GPU_BUFFER_SETS; set++)
            bytes += ntt[set].bytes() + h_buckets[set].bytes();
        return bytes;
    }
    size_t witness_buffer_bytes() const { return witness[0].bytes() + witness[1].bytes(); }

private:
    static uint32_t checked(uint32_t set)
    {
        if (set >= CUZK_GPU_BUFFER_SETS)
            throw std::invalid_argument("no such buffer set");
        return set;
    }

    // Destroyed after ~cuzk_gpu_context's body has selected the device. One set per
    // CUZK_GPU_BUFFER_SETS (cuzk_gpu.h): the top class's calls use a set of their own.
    scalar_buffer ntt[CUZK_GPU_BUFFER_SETS];
    scalar_buffer witness[CUZK_GPU_BUFFER_SETS];
    scalar_buffer h_buckets[CUZK_GPU_BUFFER_SETS];
    // The length of the witness last copied into each set's buffer (0: none).
    size_t witness_len[CUZK_GPU_BUFFER_SETS] = {};
    // Per set: where the next part of an H MSM in parts starts (0: none under way).
    size_t h_next_part[CUZK_GPU_BUFFER_SETS] = {};
};
