// cuzk's CUDA backend: one translation unit that includes one file per pipeline stage and
// exposes them through the thin extern "C" surface of cuzk_gpu.h. No C++ exception leaves
// this file: an escaping exception would terminate the host process.
//
// Host code is deliberately not hidden from the device pass (#ifndef __CUDA_ARCH__): the
// kernels of sppark's templates (msm_t's breakdown, accumulate, integrate) are instantiated
// for the device only where host code using them is visible there.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

#include "cuzk_gpu.h"
#include "bls12_381.cuh"

// The layouts src/backend/gpu/sys.rs mirrors and checks too, so that a struct changed on one
// side only fails to build (pointers and size_t are 8 bytes on our targets).
static_assert(sizeof(cuzk_gpu_g1) == 104 && alignof(cuzk_gpu_g1) == 8, "cuzk_gpu_g1");
static_assert(offsetof(cuzk_gpu_g1, infinity) == 96, "cuzk_gpu_g1");
static_assert(sizeof(cuzk_gpu_g2) == 200 && alignof(cuzk_gpu_g2) == 8, "cuzk_gpu_g2");
static_assert(offsetof(cuzk_gpu_g2, infinity) == 192, "cuzk_gpu_g2");
static_assert(sizeof(cuzk_gpu_h_times) == 24, "cuzk_gpu_h_times");
static_assert(CUZK_GPU_BUFFER_SETS == 2, "cuzk_gpu.h: sys.rs names sets 0 and 1");
static_assert(sizeof(cuzk_gpu_message) == 512, "cuzk_gpu_message");
static_assert(sizeof(cuzk_gpu_staging) == 24, "cuzk_gpu_staging");
static_assert(offsetof(cuzk_gpu_staging, bytes) == 16, "cuzk_gpu_staging");
static_assert(sizeof(cuzk_gpu_points) == 32, "cuzk_gpu_points");
static_assert(offsetof(cuzk_gpu_points, query) == 8 && offsetof(cuzk_gpu_points, host) == 16 &&
              offsetof(cuzk_gpu_points, n) == 24, "cuzk_gpu_points");
// A wider `query` would fit in the padding after it, unseen by the size and offsets.
static_assert(sizeof(cuzk_gpu_points::query) == 4, "cuzk_gpu_points");
static_assert(sizeof(cuzk_gpu_memory) == 32, "cuzk_gpu_memory");
static_assert(sizeof(cuzk_gpu_csr_host) == 32, "cuzk_gpu_csr_host");
static_assert(offsetof(cuzk_gpu_csr_host, nonzeros) == 24, "cuzk_gpu_csr_host");
static_assert(sizeof(cuzk_gpu_shape_host) == 128, "cuzk_gpu_shape_host");
static_assert(offsetof(cuzk_gpu_shape_host, coefficients) == 96 &&
              offsetof(cuzk_gpu_shape_host, variables) == 120, "cuzk_gpu_shape_host");
static_assert(sizeof(cuzk_gpu_witness) == 48, "cuzk_gpu_witness");
static_assert(offsetof(cuzk_gpu_witness, aux) == 32 && offsetof(cuzk_gpu_witness, n) == 40,
              "cuzk_gpu_witness");
static_assert(sizeof(cuzk_gpu_witness_scalars) == 40, "cuzk_gpu_witness_scalars");
static_assert(offsetof(cuzk_gpu_witness_scalars, selected_offsets) == 24 &&
                  offsetof(cuzk_gpu_witness_scalars, resident) == 32,
              "cuzk_gpu_witness_scalars");
static_assert(sizeof(cuzk_gpu_split_query) == 32 && offsetof(cuzk_gpu_split_query, tail_n) == 24,
              "cuzk_gpu_split_query");
#ifndef __CUDA_ARCH__ // on the device an Fp2 element is spread over two threads
// The host points and scalars the entry points read: blst's affine points, 32-byte scalars.
static_assert(sizeof(affine_t::mem_t) == CUZK_GPU_G1_AFFINE_BYTES, "G1 affine point bytes");
static_assert(sizeof(g2_affine_t::mem_t) == CUZK_GPU_G2_AFFINE_BYTES, "G2 affine point bytes");
static_assert(sizeof(scalar_t) == 32, "scalar bytes");
#endif


// A sequence of CUDA events recorded on a stream; ns(i, j) is the device time between marks.
class timed_events {
    std::vector<cudaEvent_t> events;
public:
    explicit timed_events(cudaStream_t stream) { mark(stream); }
    ~timed_events() { for (auto e : events) (void)cudaEventDestroy(e); }
    void mark(cudaStream_t stream)
    {
        cudaEvent_t e;
        CUDA_OK(cudaEventCreate(&e));
        events.push_back(e);
        CUDA_OK(cudaEventRecord(e, stream));
    }
    size_t last() const { return events.size() - 1; }
    uint64_t ns(size_t from, size_t to) const
    {
        float ms = 0;
        CUDA_OK(cudaEventElapsedTime(&ms, events[from], events[to]));
        return (uint64_t)((double)ms * 1e6);
    }
};

// sppark's MSM reports errors as values; turn them into the exceptions the boundary catches.
static void check(RustError err)
{
    if (err.code == 0)
        return;
    std::string text = err.message ? err.message : "sppark error";
    free(err.message);
    throw cuda_error{err.code, text};
}

// sppark's registry entry of device `index`, selected on this thread.
static const gpu_t& selected_device(int index)
{
    if (index < 0 || (size_t)index >= ngpus())
        throw std::invalid_argument("no such CUDA device");
    const gpu_t& gpu = select_gpu(index);
    gpu.select();
    return gpu;
}

// Deletes an object made in a device context that owns device memory there (a key, a shape,
// a selection), its device memory only while that context lives (cuzk_gpu_key_free).
template<class T>
static void free_context_object(T* object, int context_lives)
{
    if (object == nullptr)
        return;
    object->owns_device_memory = context_lives != 0;
    delete object;
}

#include "fault.cuh"
#include "context.cuh"
#include "staging.cuh"
#include "device_key.cuh"
#include "key_decode.cuh"
#include "spmv.cuh"
#include "selection.cuh"
#include "msm.cuh"
#include "h_table.cuh"
#include "quotient.cuh"
#include "batch_add.cuh"
#include "tail_msm.cuh"
#include "witness_msm.cuh"
#include "witness_classes.cuh"
#include "split.cuh"

static void set_message(cuzk_gpu_message* msg, const char* text)
{
    if (msg) {
        std::strncpy(msg->text, text, sizeof msg->text - 1);
        msg->text[sizeof msg->text - 1] = '\0';
    }
}

// The exception boundary of every entry point.
template<class F>
static int guarded(cuzk_gpu_message* msg, F&& body)
{
    set_message(msg, "");
    try {
        body();
        return CUZK_GPU_OK;
    } catch (const cuda_error& e) {
        set_message(msg, e.what());
        return e.code() == -cudaErrorMemoryAllocation ? CUZK_GPU_OUT_OF_MEMORY : CUZK_GPU_ERROR;
    } catch (const std::bad_alloc&) {
        set_message(msg, "host memory allocation failed");
        return CUZK_GPU_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        set_message(msg, e.what());
        return CUZK_GPU_INTERNAL;
    } catch (...) {
        set_message(msg, "unknown C++ exception in the CUDA backend");
        return CUZK_GPU_INTERNAL;
    }
}

// Writes p in affine coordinates into a cuzk_gpu_g1 (G1) or cuzk_gpu_g2 (G2).
template<class affine_t, class point_t, class out_t>
static void to_affine_out(const point_t& p, out_t* out)
{
    std::memset(out, 0, sizeof *out);
    affine_t affine = p;
    if (affine.is_inf()) {
        out->infinity = 1;
        return;
    }
#ifndef __CUDA_ARCH__ // on the device an Fp2 element is spread over two threads
    static_assert(sizeof(affine_t) == sizeof out->x + sizeof out->y, "affine layout");
#endif
    std::memcpy(out->x, &affine, sizeof(affine_t));
}

static void to_g1(const point_t& p, cuzk_gpu_g1* out) { to_affine_out<affine_t>(p, out); }
static void to_g2(const g2_point_t& p, cuzk_gpu_g2* out) { to_affine_out<g2_affine_t>(p, out); }

extern "C" int cuzk_gpu_device_count(int* count, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        int n = 0;
        // Without a driver or device this fails; that only means "no GPU here".
        if (cudaGetDeviceCount(&n) != cudaSuccess) {
            (void)cudaGetLastError();
            n = 0;
        }
        *count = n > 0 ? (int)ngpus() : 0;
    });
}

extern "C" int cuzk_gpu_device_info(int index, char name[256], uint64_t* total_memory,
                                    cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        const gpu_t& gpu = selected_device(index);
        std::strncpy(name, gpu.props().name, 255);
        name[255] = '\0';
        *total_memory = gpu.props().totalGlobalMem;
    });
}

extern "C" int cuzk_gpu_context_new(int index, cuzk_gpu_context** out, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        *out = nullptr;
        *out = new cuzk_gpu_context(selected_device(index));
    });
}

extern "C" void cuzk_gpu_context_free(cuzk_gpu_context* ctx)
{
    delete ctx;
}

extern "C" int cuzk_gpu_context_release_buffers(cuzk_gpu_context* ctx, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] { ctx->release_buffers(); });
}

extern "C" int cuzk_gpu_memory_info(cuzk_gpu_context* ctx, cuzk_gpu_memory* out,
                                    cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        size_t free = 0, total = 0;
        CUDA_OK(cudaMemGetInfo(&free, &total));
        out->free = free;
        out->total = total;
        out->ntt_buffer_bytes = ctx->ntt_buffer_bytes();
        out->witness_buffer_bytes = ctx->witness_buffer_bytes();
    });
}

extern "C" int cuzk_gpu_pinned_alloc(int index, size_t bytes, void** out, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        *out = nullptr;
        (void)selected_device(index);
        CUDA_OK(cudaHostAlloc(out, bytes, cudaHostAllocPortable));
    });
}

extern "C" void cuzk_gpu_pinned_free(void* ptr)
{
    if (ptr)
        (void)cudaFreeHost(ptr);
}

extern "C" int cuzk_gpu_device_faulted(int index, int* faulted, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        *faulted = 0;
        (void)selected_device(index);
        *faulted = context_faulted() ? 1 : 0;
    });
}

extern "C" int cuzk_gpu_device_reset(int index, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        reset_device(index);
    });
}

#ifdef CUZK_FAULT_INJECTION
extern "C" int cuzk_gpu_inject_fault(cuzk_gpu_context* ctx, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        inject_fault(ctx->gpu);
    });
}
#endif

extern "C" uint32_t cuzk_gpu_h_table_bits(size_t n, uint32_t* windows)
{
    const uint32_t bits = h_table::bits_for(n);
    *windows = bits ? own_msm::windows_of(bits) : 0;
    return bits;
}

extern "C" int cuzk_gpu_key_alloc(cuzk_gpu_context* ctx, const size_t n[CUZK_GPU_QUERIES],
                                  int with_h_table, cuzk_gpu_key** out, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        *out = nullptr;
        const uint32_t bits = with_h_table ? h_table::bits_for(n[CUZK_GPU_QUERY_H]) : 0;
        if (with_h_table && !bits)
            throw std::invalid_argument("an H table takes an H query of 1 to 2^22 points");
        *out = alloc_key(*ctx, n, bits, bits ? own_msm::windows_of(bits) : 0);
    });
}

extern "C" int cuzk_gpu_key_build_h_table(cuzk_gpu_context* ctx, cuzk_gpu_key* key,
                                          cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        build_h_table(*ctx, *key);
    });
}

extern "C" int cuzk_gpu_key_upload(cuzk_gpu_context* ctx, cuzk_gpu_key* key, uint32_t query,
                                   size_t first, size_t count, const void* host,
                                   const cuzk_gpu_staging* staging, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        upload_key_points(*ctx, *key, query, first, count, host, staging);
    });
}

extern "C" int cuzk_gpu_key_upload_file_points(cuzk_gpu_context* ctx, cuzk_gpu_key* key,
                                              uint32_t query, size_t first, size_t count,
                                              const void* file_bytes,
                                              const cuzk_gpu_staging* staging, size_t* first_bad,
                                              cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        *first_bad = SIZE_MAX;
        *first_bad = upload_file_points(*ctx, *key, query, first, count, file_bytes, staging);
    });
}

extern "C" void cuzk_gpu_key_free(cuzk_gpu_key* key, int context_lives)
{
    free_context_object(key, context_lives);
}

extern "C" int cuzk_gpu_quotient(cuzk_gpu_context* ctx, uint32_t set, const void* a,
                                 const void* b, const void* c, size_t n, uint32_t lg_domain,
                                 const cuzk_gpu_staging* staging, cuzk_gpu_h_times* times,
                                 cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        quotient_stage::from_host(*ctx, set, (const fr_t*)a, (const fr_t*)b, (const fr_t*)c, n,
                                  lg_domain, staging, *times);
    });
}

extern "C" int cuzk_gpu_shape_upload(cuzk_gpu_context* ctx, const cuzk_gpu_shape_host* shape,
                                     const cuzk_gpu_staging* staging, cuzk_gpu_shape** out,
                                     uint64_t* bytes, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        *out = nullptr;
        *bytes = 0;
        cuzk_gpu_shape* uploaded = upload_shape(*ctx, *shape, staging);
        *bytes = uploaded->bytes;
        *out = uploaded;
    });
}

extern "C" void cuzk_gpu_shape_free(cuzk_gpu_shape* shape, int context_lives)
{
    free_context_object(shape, context_lives);
}

extern "C" int cuzk_gpu_quotient_r1cs(cuzk_gpu_context* ctx, uint32_t set,
                                      const cuzk_gpu_shape* shape, const cuzk_gpu_witness* witness,
                                      uint32_t lg_domain, const cuzk_gpu_staging* staging,
                                      cuzk_gpu_h_times* times, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        quotient_stage::from_shape(*ctx, set, *shape, *witness, lg_domain, staging, *times);
    });
}

extern "C" int cuzk_gpu_witness_upload(cuzk_gpu_context* ctx, uint32_t set,
                                       const cuzk_gpu_witness* witness,
                                       const cuzk_gpu_staging* staging, uint64_t* h2d_ns,
                                       cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        stream_t& stream = ctx->gpu[0];
        timed_events ev(stream);
        upload_witness(*ctx, set, stream, *witness, staging);
        ev.mark(stream);
        stream.sync();
        *h2d_ns = ev.ns(0, 1);
    });
}

extern "C" int cuzk_gpu_h_msm(cuzk_gpu_context* ctx, uint32_t set, uint32_t lg_domain,
                              const cuzk_gpu_points* h_points, size_t first, size_t count,
                              uint32_t implementation, cuzk_gpu_g1* out, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        point_t h;
        quotient_stage::msm(*ctx, set, lg_domain, *h_points, first, count, implementation, h);
        to_g1(h, out);
    });
}

extern "C" int cuzk_gpu_batch_add(cuzk_gpu_context* ctx, const cuzk_gpu_points* points,
                                  const uint32_t* bitmap, const cuzk_gpu_staging* staging,
                                  cuzk_gpu_g1* out, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        to_g1(batch_add_on_device<point_t, bucket_t, affine_t>(*ctx, *points, bitmap, staging), out);
    });
}

extern "C" int cuzk_gpu_msm(cuzk_gpu_context* ctx, const cuzk_gpu_points* points,
                            const uint32_t* indices, const void* scalars, size_t n,
                            uint32_t implementation, cuzk_gpu_g1* out, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        to_g1(tail_msm_on_device<g1_msm_t, own_msm::g1_msm, point_t, affine_t>(
                  *ctx, *points, indices, (const scalar_t*)scalars, n, implementation),
              out);
    });
}

extern "C" int cuzk_gpu_batch_add_g2(cuzk_gpu_context* ctx, const cuzk_gpu_points* points,
                                     const uint32_t* bitmap, const cuzk_gpu_staging* staging,
                                     cuzk_gpu_g2* out, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        to_g2(batch_add_on_device<g2_point_t, g2_bucket_t, g2_affine_t>(*ctx, *points, bitmap,
                                                                       staging),
              out);
    });
}

extern "C" int cuzk_gpu_msm_g2(cuzk_gpu_context* ctx, const cuzk_gpu_points* points,
                               const uint32_t* indices, const void* scalars, size_t n,
                               uint32_t implementation, cuzk_gpu_g2* out, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        to_g2(tail_msm_on_device<g2_msm_t, own_msm::g2_msm, g2_point_t, g2_affine_t>(
                  *ctx, *points, indices, (const scalar_t*)scalars, n, implementation),
              out);
    });
}

extern "C" int cuzk_gpu_witness_msm(cuzk_gpu_context* ctx, uint32_t set,
                                    const cuzk_gpu_points* points,
                                    const cuzk_gpu_witness_scalars* scalars,
                                    uint32_t implementation, const cuzk_gpu_staging* staging,
                                    cuzk_gpu_g1* out, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        to_g1(witness_msm_on_device<g1_msm_t, own_msm::g1_msm, point_t, affine_t>(
                  *ctx, set, *points, *scalars, implementation, staging),
              out);
    });
}

extern "C" int cuzk_gpu_witness_msm_g2(cuzk_gpu_context* ctx, uint32_t set,
                                       const cuzk_gpu_points* points,
                                       const cuzk_gpu_witness_scalars* scalars,
                                       uint32_t implementation, const cuzk_gpu_staging* staging,
                                       cuzk_gpu_g2* out, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        to_g2(witness_msm_on_device<g2_msm_t, own_msm::g2_msm, g2_point_t, g2_affine_t>(
                  *ctx, set, *points, *scalars, implementation, staging),
              out);
    });
}

extern "C" int cuzk_gpu_classified_witness_msm(cuzk_gpu_context* ctx, uint32_t set,
                                               const cuzk_gpu_points* points,
                                               const cuzk_gpu_witness_scalars* scalars,
                                               uint64_t split_min_ones, uint32_t implementation,
                                               const cuzk_gpu_staging* staging, cuzk_gpu_g1* out,
                                               uint64_t times[3], cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        to_g1(classified_witness_msm_on_device<own_msm::g1_msm, point_t, bucket_t, affine_t>(
                  *ctx, set, *points, *scalars, split_min_ones, implementation, staging, times),
              out);
    });
}

extern "C" int cuzk_gpu_classified_b_msms(cuzk_gpu_context* ctx, uint32_t set,
                                          const cuzk_gpu_points points[2],
                                          const cuzk_gpu_witness_scalars* scalars,
                                          uint32_t implementation,
                                          const cuzk_gpu_staging* staging, cuzk_gpu_g1* b_g1,
                                          cuzk_gpu_g2* b_g2, uint64_t times[5],
                                          cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        point_t g1;
        g2_point_t g2;
        classified_b_msms_on_device(*ctx, set, points, *scalars, implementation, staging, g1, g2,
                                    times);
        to_g1(g1, b_g1);
        to_g2(g2, b_g2);
    });
}

extern "C" int cuzk_gpu_selection_upload(cuzk_gpu_context* ctx,
                                         const cuzk_gpu_witness_scalars* scalars, size_t npoints,
                                         const cuzk_gpu_staging* staging, cuzk_gpu_selection** out,
                                         uint64_t* bytes, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        *out = nullptr;
        *bytes = 0;
        cuzk_gpu_selection* uploaded = upload_selection(*ctx, *scalars, npoints, staging);
        *bytes = uploaded->bytes;
        *out = uploaded;
    });
}

extern "C" void cuzk_gpu_selection_free(cuzk_gpu_selection* selection, int context_lives)
{
    free_context_object(selection, context_lives);
}

// The boundary of the entries that run H's MSM and the witness's at once: `run` fills the H,
// L, A, B_G1 sums and B_G2's.
template<class F>
static int msms_at_once(cuzk_gpu_context* ctx, cuzk_gpu_g1 g1_out[4], cuzk_gpu_g2* g2_out,
                        cuzk_gpu_message* msg, F&& run)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        point_t g1[4];
        g2_point_t g2;
        run(g1, g2);
        for (int q = 0; q < 4; q++)
            to_g1(g1[q], &g1_out[q]);
        to_g2(g2, g2_out);
    });
}

extern "C" int cuzk_gpu_witness_msms_at_once(cuzk_gpu_context* ctx, uint32_t set,
                                            uint32_t lg_domain, const cuzk_gpu_points points[5],
                                            const cuzk_gpu_witness_scalars scalars[3],
                                            const cuzk_gpu_staging* staging, cuzk_gpu_g1 g1_out[4],
                                            cuzk_gpu_g2* g2_out, uint64_t times[7],
                                            cuzk_gpu_message* msg)
{
    return msms_at_once(ctx, g1_out, g2_out, msg, [&](point_t g1[4], g2_point_t& g2) {
        witness_msms_at_once(*ctx, set, lg_domain, points, scalars, staging, g1, g2, times);
    });
}

extern "C" int cuzk_gpu_split_witness_start(cuzk_gpu_context* ctx,
                                            const cuzk_gpu_points points[4],
                                            const cuzk_gpu_split_query queries[4],
                                            uint32_t implementation,
                                            cuzk_gpu_split_witness** out, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        *out = nullptr;
        ctx->gpu.select();
        *out = new cuzk_gpu_split_witness{ctx->gpu, points, queries, implementation};
    });
}

extern "C" void cuzk_gpu_split_witness_free(cuzk_gpu_split_witness* witness, int context_lives)
{
    // After its context's reset the members would free addresses of the new context (their
    // memory went with the old one): the object is forgotten instead.
    if (context_lives)
        delete witness;
}

extern "C" int cuzk_gpu_split_msms_at_once(cuzk_gpu_context* ctx, uint32_t set,
                                          uint32_t lg_domain, const cuzk_gpu_points* h_points,
                                          cuzk_gpu_split_witness* witness,
                                          uint32_t implementation, cuzk_gpu_g1 g1_out[4],
                                          cuzk_gpu_g2* g2_out, uint64_t times[7],
                                          cuzk_gpu_message* msg)
{
    return msms_at_once(ctx, g1_out, g2_out, msg, [&](point_t g1[4], g2_point_t& g2) {
        split_msms_at_once(*ctx, set, lg_domain, *h_points, *witness, implementation, g1, g2,
                           times);
    });
}

// Σ sᵢ·Pᵢ by cuzk's MSM (own_type) or sppark's (sppark_type) on device copies of the inputs,
// msm_ns the MSM's own wall time; for cuzk_gpu_msm_by and cuzk_gpu_msm_by_g2.
template<class own_type, class sppark_type, class point_t, class affine_t>
static point_t msm_by(cuzk_gpu_context& ctx, const cuzk_gpu_points& points, const void* scalars,
                      bool mont, uint32_t implementation, uint32_t digit_bits, uint64_t& msm_ns)
{
    own_msm::check_implementation(implementation);
    const size_t n = points.n;
    point_t sum;
    sum.inf();
    msm_ns = 0;
    if (n == 0)
        return sum;
    stream_t stream{ctx.gpu.id()};
    dev_ptr_t<fr_t> d_scalars{n, stream};
    dev_ptr_t<typename affine_t::mem_t> copy{points.key ? 0 : n, stream};
    stream.HtoD(d_scalars.data(), (const fr_t*)scalars, n);
    const auto* d_points = device_points<affine_t>(ctx, points, stream, copy, nullptr);
    stream.sync();
    const auto start = std::chrono::steady_clock::now();
    if (own_msm::is_own(implementation)) {
        // A resident key's H query with its H table (cuda/h_table.cuh) is summed over it.
        const own_msm::point_table<typename affine_t::mem_t>* table = nullptr;
        own_msm::point_table<typename affine_t::mem_t> h_table;
        if constexpr (std::is_same<own_type, own_msm::g1_msm>::value)
            if (digit_bits == 0 && implementation == CUZK_GPU_MSM_CUZK && resident_h_table(points, n, h_table))
                table = &h_table;
        own_type msm{stream, d_points, d_scalars.data(), n, mont, digit_bits,
                     own_msm::with_affine_rounds(implementation), nullptr, 0, nullptr, table};
        sum = msm.result();
    } else {
        abandoned_on_fault<sppark_type> msm{nullptr, n, sizeof(affine_t), ctx.gpu.id()};
        check(msm->invoke(sum, dev_ptr_t<affine_t>{(affine_t*)d_points, n}, n,
                          dev_ptr_t<scalar_t>{d_scalars.data(), n}, mont));
    }
    msm_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::steady_clock::now() - start).count();
    return sum;
}

extern "C" int cuzk_gpu_msm_by(cuzk_gpu_context* ctx, const cuzk_gpu_points* points,
                               const void* scalars, int mont, uint32_t implementation,
                               uint32_t digit_bits, cuzk_gpu_g1* out, uint64_t* msm_ns,
                               cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        to_g1(msm_by<own_msm::g1_msm, g1_msm_t, point_t, affine_t>(*ctx, *points, scalars,
                                                                 mont != 0, implementation,
                                                                 digit_bits, *msm_ns),
              out);
    });
}

extern "C" int cuzk_gpu_msm_by_g2(cuzk_gpu_context* ctx, const cuzk_gpu_points* points,
                                  const void* scalars, int mont, uint32_t implementation,
                                  uint32_t digit_bits, cuzk_gpu_g2* out, uint64_t* msm_ns,
                                  cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        ctx->gpu.select();
        to_g2(msm_by<own_msm::g2_msm, g2_msm_t, g2_point_t, g2_affine_t>(*ctx, *points, scalars,
                                                                       mont != 0, implementation,
                                                                       digit_bits, *msm_ns),
              out);
    });
}

extern "C" int cuzk_gpu_affine_rounds_check(const void* points, size_t npoints,
                                            const uint32_t* keys, const uint32_t* entries,
                                            size_t m, uint32_t none, uint32_t rounds,
                                            cuzk_gpu_g1* sums, cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        for (size_t i = 0; i < m; i++) {
            if (keys[i] > none || (i > 0 && keys[i] < keys[i - 1]))
                throw std::invalid_argument("the keys are not sorted, or past `none`");
            if ((entries[i] & 0x7fffffffu) >= npoints)
                throw std::invalid_argument("an entry names no point");
        }
        own_msm::host_rounds exec;
        const own_msm::batched_rounds<fp_t, own_msm::host_rounds> reduced{
            exec, keys, entries, (const affine_t*)points, m, none, none, rounds};
        std::vector<bucket_t> buckets(none);
        for (bucket_t& b : buckets)
            b.inf();
        for (size_t i = 0; i < reduced.capacity() && reduced.keys()[i] != none; i++) {
            const auto& p = reduced.points()[i];
            buckets[reduced.keys()[i]].add(affine_t{p.X, p.Y});
        }
        for (uint32_t k = 0; k < none; k++)
            to_g1(point_t(buckets[k]), &sums[k]);
    });
}

extern "C" int cuzk_gpu_witness_classes_check(const void* z,
                                              const cuzk_gpu_witness_scalars* scalars,
                                              size_t npoints, uint64_t split_min_ones,
                                              uint64_t counts[3], uint32_t* bitmap,
                                              uint32_t* tail_indices, void* tail_values,
                                              cuzk_gpu_message* msg)
{
    return guarded(msg, [&] {
        using namespace witness_classes;
        const selection s = checked_selection(*scalars, npoints);
        host_exec exec;
        const size_t bitmap_words = (npoints + 31) / 32;
        const query_classes<host_exec> classes{exec, s, (const value_t*)z, split_min_ones,
                                               bitmap_words};
        counts[0] = classes.counts.ones_n;
        counts[1] = classes.counts.full_n;
        counts[2] = classes.counts.split;
        std::copy(classes.bitmap.begin(), classes.bitmap.end(), bitmap);
        std::copy(classes.tail_indices.begin(), classes.tail_indices.end(), tail_indices);
        std::copy(classes.tail_values.begin(), classes.tail_values.end(), (value_t*)tail_values);
    });
}
