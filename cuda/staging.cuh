// Host-to-device copies of pageable memory through two pinned buffers of the engine's pool:
// the host threads copy chunk k+1 into one buffer while the copy engine sends chunk k from
// the other. The pinned memory is allocated once, by the pool: registering (pinning) the
// tens of gigabytes of a large proof's host arrays on every proof costs seconds.
#pragma once

class copy_done_event {
    cudaEvent_t event = nullptr;
public:
    copy_done_event() { CUDA_OK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming)); }
    ~copy_done_event() { (void)cudaEventDestroy(event); }
    void record(cudaStream_t stream) { CUDA_OK(cudaEventRecord(event, stream)); }
    void wait() const { CUDA_OK(cudaEventSynchronize(event)); }
};

static void parallel_copy(thread_pool_t& threads, void* dst, const void* src, size_t bytes)
{
    const size_t piece = (size_t)4 << 20;
    const size_t pieces = (bytes + piece - 1) / piece;
    if (pieces <= 1) {
        std::memcpy(dst, src, bytes);
        return;
    }
    threads.par_map(pieces, [&](size_t i) {
        const size_t off = i * piece;
        std::memcpy((char*)dst + off, (const char*)src + off, std::min(piece, bytes - off));
    });
}

static bool has_staging(const cuzk_gpu_staging* staging)
{
    return staging && staging->bytes && staging->buffers[0] && staging->buffers[1];
}

// Copies `bytes` from host `src` to device `dst` on `stream`. Returns when the staging buffers
// are free again (the caller hands them back to the pool); the last chunk may still be in
// flight on the stream, ordered before whatever the caller enqueues next.
static void staged_htod(cuzk_gpu_context& ctx, cudaStream_t stream, void* dst, const void* src,
                        size_t bytes, const cuzk_gpu_staging* staging)
{
    if (bytes == 0)
        return;
    if (!has_staging(staging)) {
        CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
        return;
    }
    copy_done_event done[2];
    bool in_flight[2] = {false, false};
    size_t k = 0;
    for (size_t off = 0; off < bytes; k ^= 1) {
        const size_t n = std::min(staging->bytes, bytes - off);
        if (in_flight[k])
            done[k].wait();
        parallel_copy(ctx.copy_threads, staging->buffers[k], (const char*)src + off, n);
        CUDA_OK(cudaMemcpyAsync((char*)dst + off, staging->buffers[k], n, cudaMemcpyHostToDevice,
                                stream));
        done[k].record(stream);
        in_flight[k] = true;
        off += n;
    }
    for (int i = 0; i < 2; i++)
        if (in_flight[i])
            done[i].wait();
}
