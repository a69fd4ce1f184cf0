// Stage witness classes: prep_msm on the device for a witness of mostly 0s and 1s (PoRep,
// update) whose z the R1CS stage left in the set's witness buffer. A query's scalars, the
// selection of z that cuda/witness_msm.cuh names (L: the aux values; A, B: the values of the
// variables with a point in the query), are sorted as src/backend/prep.rs sorts them on the
// host: a 0 is skipped, a 1 goes into the batch addition's bitmap, any other value into the
// tail (its point's index, and the value itself in Montgomery form, which the MSM converts).
// Only the selections' bitmaps cross PCIe, and the host makes no classes: at 32GiB they were
// ≈ 0.5 s of a partition's host work on 16 cores (docs/PERFORMANCE.md).
//
// A task is one word of the selection: the ≤ 32 values of z in [32w, 32w + 32) the query
// takes, which are its points offset(w), offset(w) + 1, … in order. Two passes over the tasks:
// the first counts each task's ones and full-width values; after their exclusive sums, and
// the split decision (batch addition of the ones, or the ones into the tail), the second
// writes them. Every step is a __host__ __device__ body: the kernels run them on the device,
// and cuzk_gpu_witness_classes_check on the host, which the lib test holds to prep.rs.
#pragma once

#include <cub/device/device_scan.cuh>

namespace witness_classes {

enum : uint32_t { ZERO, ONE, FULL };

// A value of z as the device holds it: Fr in Montgomery form, little-endian 64-bit limbs.
struct value_t {
    uint64_t limb[4];
};

// Limb i of 1 in Montgomery form (2^256 mod r).
__host__ __device__ inline uint64_t one_limb(int i)
{
    switch (i) {
    case 0: return 0x00000001fffffffeull;
    case 1: return 0x5884b7fa00034802ull;
    case 2: return 0x998c4fefecbc4ff5ull;
    default: return 0x1824b159acc5056full;
    }
}

__host__ __device__ inline uint32_t class_of(const value_t& v)
{
    uint64_t any = 0, not_one = 0;
    for (int i = 0; i < 4; i++) {
        any |= v.limb[i];
        not_one |= v.limb[i] ^ one_limb(i);
    }
    return any == 0 ? ZERO : not_one == 0 ? ONE : FULL;
}

__host__ __device__ inline uint32_t lowest_bit(uint32_t bits)
{
#ifdef __CUDA_ARCH__
    return __ffs(bits) - 1;
#else
    return __builtin_ctz(bits);
#endif
}

__host__ __device__ inline void or_word(uint32_t* word, uint32_t bits)
{
#ifdef __CUDA_ARCH__
    atomicOr(word, bits);
#else
    *word |= bits;
#endif
}

// One query's selection of z (cuzk_gpu_witness_scalars, checked): the values from `first` on
// when bitmap is NULL, else those whose bit is set, offsets[w] of them before word w.
struct selection {
    const uint32_t* bitmap;
    const uint32_t* offsets;
    size_t z_len, first;

    __host__ __device__ size_t words() const { return (z_len + 31) / 32; }

    // Which of word w's values the query takes.
    __host__ __device__ uint32_t bits(size_t w) const
    {
        if (bitmap)
            return bitmap[w];
        const size_t lo = w * 32;
        uint32_t mask = first <= lo ? ~0u : first - lo >= 32 ? 0u : ~0u << (first - lo);
        if (z_len - lo < 32)
            mask &= (1u << (z_len - lo)) - 1;
        return mask;
    }

    // The point of word w's first value the query takes.
    __host__ __device__ size_t offset(size_t w) const
    {
        if (bitmap)
            return offsets[w];
        return w * 32 > first ? w * 32 - first : 0;
    }
};

// Pass 1, task w: its ones and full-width values.
__host__ __device__ inline void count_task(const selection& s, const value_t* z, size_t w,
                                           uint32_t* ones, uint32_t* full)
{
    uint32_t o = 0, f = 0;
    for (uint32_t bits = s.bits(w); bits; bits &= bits - 1) {
        const uint32_t c = class_of(z[w * 32 + lowest_bit(bits)]);
        o += c == ONE;
        f += c == FULL;
    }
    ones[w] = o;
    full[w] = f;
}

// Where pass 2 writes: the ones' bits (bitmap, zeroed first; unused when `fold`) and the tail,
// which holds the full-width values and, when `fold`, the ones too.
struct classes_out {
    uint32_t* bitmap;
    uint32_t* tail_indices;
    value_t* tail_values;
    bool fold;
};

// Pass 2, task w: its tail entries from tail_at on, its ones' bits (at most two words, shared
// with the neighbouring tasks).
__host__ __device__ inline void write_task(const selection& s, const value_t* z, size_t w,
                                           size_t tail_at, const classes_out& out)
{
    const size_t first_point = s.offset(w);
    uint64_t ones = 0;
    uint32_t k = 0;
    for (uint32_t bits = s.bits(w); bits; bits &= bits - 1, k++) {
        const value_t v = z[w * 32 + lowest_bit(bits)];
        const uint32_t c = class_of(v);
        if (c == ZERO)
            continue;
        if (c == ONE && !out.fold) {
            ones |= 1ull << k;
            continue;
        }
        out.tail_indices[tail_at] = (uint32_t)(first_point + k);
        out.tail_values[tail_at] = v;
        tail_at++;
    }
    if (ones == 0)
        return;
    const uint64_t placed = ones << (first_point % 32);
    or_word(&out.bitmap[first_point / 32], (uint32_t)placed);
    if (placed >> 32)
        or_word(&out.bitmap[first_point / 32 + 1], (uint32_t)(placed >> 32));
}

__global__ void count_kernel(selection s, const value_t* z, uint32_t* ones, uint32_t* full)
{
    for (size_t w = threadIdx.x + (size_t)blockIdx.x * blockDim.x; w < s.words();
         w += (size_t)blockDim.x * gridDim.x)
        count_task(s, z, w, ones, full);
}

__global__ void write_kernel(selection s, const value_t* z, const uint32_t* ones_before,
                             const uint32_t* full_before, classes_out out)
{
    for (size_t w = threadIdx.x + (size_t)blockIdx.x * blockDim.x; w < s.words();
         w += (size_t)blockDim.x * gridDim.x)
        write_task(s, z, w, full_before[w] + (out.fold ? ones_before[w] : 0), out);
}

// The device executor: the passes as kernels on `stream`.
struct device_exec {
    stream_t& stream;
    template<class T>
    using buffer_t = dev_ptr_t<T>;
    template<class T>
    dev_ptr_t<T> alloc(size_t n) { return dev_ptr_t<T>{n, stream}; }
    uint32_t grid() const { return 4 * stream.sm_count(); }

    void count(const selection& s, const value_t* z, uint32_t* ones, uint32_t* full)
    {
        count_kernel<<<grid(), 256, 0, stream>>>(s, z, ones, full);
        CUDA_OK(cudaGetLastError());
    }
    void exclusive_sum(uint32_t* out, const uint32_t* in, size_t n)
    {
        size_t temp_bytes = 0;
        CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, in, out, (int)n, stream));
        dev_ptr_t<uint8_t> temp{temp_bytes, stream};
        CUDA_OK(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, in, out, (int)n, stream));
    }
    // The last of n values at `at`, waiting for the stream.
    uint32_t last(const uint32_t* at, size_t n)
    {
        uint32_t value = 0;
        CUDA_OK(cudaMemcpyAsync(&value, at + n - 1, sizeof value, cudaMemcpyDeviceToHost, stream));
        stream.sync();
        return value;
    }
    void zero(uint32_t* at, size_t n)
    {
        CUDA_OK(cudaMemsetAsync(at, 0, n * sizeof(uint32_t), stream));
    }
    void write(const selection& s, const value_t* z, const uint32_t* ones_before,
               const uint32_t* full_before, const classes_out& out)
    {
        write_kernel<<<grid(), 256, 0, stream>>>(s, z, ones_before, full_before, out);
        CUDA_OK(cudaGetLastError());
    }
};

// The host executor: the same bodies in loops, for the host check.
struct host_exec {
    template<class T>
    struct buffer_t : std::vector<T> {
        using std::vector<T>::vector;
    };
    template<class T>
    buffer_t<T> alloc(size_t n) { return buffer_t<T>(n); }

    void count(const selection& s, const value_t* z, uint32_t* ones, uint32_t* full)
    {
        for (size_t w = 0; w < s.words(); w++)
            count_task(s, z, w, ones, full);
    }
    void exclusive_sum(uint32_t* out, const uint32_t* in, size_t n)
    {
        uint32_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            out[i] = sum;
            sum += in[i];
        }
    }
    uint32_t last(const uint32_t* at, size_t n) { return at[n - 1]; }
    void zero(uint32_t* at, size_t n) { std::fill(at, at + n, 0u); }
    void write(const selection& s, const value_t* z, const uint32_t* ones_before,
               const uint32_t* full_before, const classes_out& out)
    {
        for (size_t w = 0; w < s.words(); w++)
            write_task(s, z, w, full_before[w] + (out.fold ? ones_before[w] : 0), out);
    }
};

// Pass 1 over one query whose scalars `s` selects from z (z_len values, in the executor's
// memory): each task's ones and full-width values, how many there are before it, their totals,
// and the split decision: the ones go to the bitmap when there are split_min_ones of them or
// more (and any), else into the tail.
template<class exec_t>
struct class_counts {
    template<class T>
    using buffer_t = typename exec_t::template buffer_t<T>;
    buffer_t<uint32_t> ones, full, ones_before, full_before;
    size_t ones_n = 0, full_n = 0;
    bool split = false;

    class_counts(exec_t& exec, const selection& s, const value_t* z, uint64_t split_min_ones)
        : ones(exec.template alloc<uint32_t>(s.words())),
          full(exec.template alloc<uint32_t>(s.words())),
          ones_before(exec.template alloc<uint32_t>(s.words())),
          full_before(exec.template alloc<uint32_t>(s.words()))
    {
        const size_t words = s.words();
        if (words == 0)
            return;
        exec.count(s, z, ones.data(), full.data());
        exec.exclusive_sum(ones_before.data(), ones.data(), words);
        exec.exclusive_sum(full_before.data(), full.data(), words);
        ones_n = (size_t)exec.last(ones_before.data(), words) + exec.last(ones.data(), words);
        full_n = (size_t)exec.last(full_before.data(), words) + exec.last(full.data(), words);
        split = ones_n > 0 && ones_n >= split_min_ones;
    }

    size_t tail_n() const { return full_n + (split ? 0 : ones_n); }
};

// The classes of one query (class_counts, then pass 2): the ones' bitmap of `bitmap_words`
// words (batch addition's padding, zero past the query's points) when split, and the tail.
template<class exec_t>
struct query_classes {
    template<class T>
    using buffer_t = typename exec_t::template buffer_t<T>;
    const class_counts<exec_t> counts;
    buffer_t<uint32_t> bitmap, tail_indices;
    buffer_t<value_t> tail_values;

    query_classes(exec_t& exec, const selection& s, const value_t* z, uint64_t split_min_ones,
                  size_t bitmap_words)
        : counts(exec, s, z, split_min_ones),
          bitmap(exec.template alloc<uint32_t>(counts.split ? bitmap_words : 0)),
          tail_indices(exec.template alloc<uint32_t>(counts.tail_n())),
          tail_values(exec.template alloc<value_t>(counts.tail_n()))
    {
        if (counts.split)
            exec.zero(bitmap.data(), bitmap_words);
        if (counts.split || counts.tail_n() > 0)
            exec.write(s, z, counts.ones_before.data(), counts.full_before.data(),
                       classes_out{bitmap.data(), tail_indices.data(), tail_values.data(),
                                   !counts.split});
    }
};

// The selection `scalars` names, in host memory, checked: it takes one value per point of a
// query of npoints (fewer than 2^32: a point's index is 32 bits) and none past z.
static selection checked_selection(const cuzk_gpu_witness_scalars& scalars, size_t npoints)
{
    if (npoints > UINT32_MAX)
        throw std::invalid_argument("a query of 2^32 points or more");
    if (scalars.resident != nullptr)
        throw std::invalid_argument("a resident selection is not in host memory");
    if (scalars.selected == nullptr) {
        if (scalars.first > scalars.z_len || npoints != scalars.z_len - scalars.first)
            throw std::invalid_argument("the query's points are not the witness's values past `first`");
        return selection{nullptr, nullptr, scalars.z_len, scalars.first};
    }
    check_selection(scalars, npoints);
    return selection{scalars.selected, scalars.selected_offsets, scalars.z_len, 0};
}

// The selection `scalars` names on the device: the resident one, else its bitmap and offsets
// sent on `stream` into `bitmap` and `offsets` (checked first: cuda/selection.cuh).
static selection device_selection(cuzk_gpu_context& ctx, const cuzk_gpu_witness_scalars& scalars,
                                  size_t npoints, stream_t& stream, dev_ptr_t<uint32_t>& bitmap,
                                  dev_ptr_t<uint32_t>& offsets, const cuzk_gpu_staging* staging)
{
    if (npoints > UINT32_MAX)
        throw std::invalid_argument("a query of 2^32 points or more");
    if (const cuzk_gpu_selection* resident = resident_selection(ctx, scalars, npoints))
        return selection{resident->bitmap, resident->offsets, scalars.z_len, 0};
    const selection checked = checked_selection(scalars, npoints);
    if (checked.bitmap == nullptr)
        return checked;
    const size_t words = (scalars.z_len + 31) / 32;
    staged_htod(ctx, stream, bitmap.data(), scalars.selected, words * sizeof(uint32_t), staging);
    staged_htod(ctx, stream, offsets.data(), scalars.selected_offsets, words * sizeof(uint32_t),
                staging);
    return selection{bitmap.data(), offsets.data(), scalars.z_len, 0};
}

} // namespace witness_classes

// A query's classes (witness_classes::query_classes) found on the device on `stream`, from
// the selection `scalars` names: the resident one, else its bitmap and offsets sent.
class classes_on_device {
    witness_classes::device_exec exec;
    const size_t words;
    dev_ptr_t<uint32_t> sent_bitmap, sent_offsets;
    const witness_classes::selection s;

public:
    const witness_classes::query_classes<witness_classes::device_exec> classes;

    classes_on_device(cuzk_gpu_context& ctx, stream_t& stream, const witness_classes::value_t* z,
                      const cuzk_gpu_witness_scalars& scalars, size_t npoints,
                      uint64_t split_min_ones, size_t bitmap_words,
                      const cuzk_gpu_staging* staging)
        : exec{stream},
          words(scalars.selected && !scalars.resident ? (scalars.z_len + 31) / 32 : 0),
          sent_bitmap{words, stream}, sent_offsets{words, stream},
          s(witness_classes::device_selection(ctx, scalars, npoints, stream, sent_bitmap,
                                              sent_offsets, staging)),
          classes{exec, s, z, split_min_ones, bitmap_words}
    {}
};

// Σ over a resident query's points of a query's classes on `stream`: the ones by batch
// addition when split, the tail by cuzk's MSM (implementation); `marks` marked after the
// batch addition and after the tail.
template<class own_type, class point_t, class bucket_t, class affine_t>
static point_t classified_sum(cuzk_gpu_context& ctx, stream_t& stream,
                              const cuzk_gpu_points& points,
                              const witness_classes::query_classes<witness_classes::device_exec>& classes,
                              uint32_t implementation, timed_events& marks)
{
    typedef batch_add_launch<point_t, bucket_t, affine_t> batch_t;
    const size_t n = points.n;
    std::unique_ptr<batch_t> ones;
    if (classes.counts.split) {
        ones.reset(new batch_t{ctx.gpu, stream, n, classes.bitmap.data(), true});
        ones->launch(resident_points<typename affine_t::mem_t>(points, n));
    }
    marks.mark(stream);
    const device_tail tail_in{classes.tail_indices.data(), (const fr_t*)classes.tail_values.data(),
                              classes.counts.tail_n()};
    resident_tail_msm<own_type, point_t, affine_t> tail{stream, points, tail_in};
    tail.launch(ctx.gpu, implementation);
    point_t sum = tail.result();
    marks.mark(stream);
    if (ones)
        sum.add(ones->result());
    return sum;
}

// The checks both classified entries make: cuzk's MSM, a resident key.
static void check_classified(const cuzk_gpu_points& points, uint32_t implementation)
{
    own_msm::check_implementation(implementation);
    if (!own_msm::is_own(implementation))
        throw std::invalid_argument("a witness is classified on the device for cuzk's MSM only");
    if (!points.key)
        throw std::invalid_argument("a witness is classified on the device for a resident key only");
}

// For G1 and G2: Σ sᵢ·Pᵢ over a resident query's points, sᵢ the values `scalars` selects from
// the device copy of z in `set`, by cuzk's MSM: classified on the device, the ones added by
// batch addition when there are split_min_ones of them or more, the rest by the tail MSM.
// times: the classes', the batch addition's and the tail's device time.
template<class own_type, class point_t, class bucket_t, class affine_t>
static point_t classified_witness_msm_on_device(cuzk_gpu_context& ctx, uint32_t set,
                                                const cuzk_gpu_points& points,
                                                const cuzk_gpu_witness_scalars& scalars,
                                                uint64_t split_min_ones, uint32_t implementation,
                                                const cuzk_gpu_staging* staging,
                                                uint64_t times[3])
{
    typedef batch_add_launch<point_t, bucket_t, affine_t> batch_t;
    check_classified(points, implementation);
    point_t sum;
    sum.inf();
    times[0] = times[1] = times[2] = 0;
    if (points.n == 0)
        return sum;
    const auto* z = (const witness_classes::value_t*)ctx.uploaded_witness(scalars.z_len, set);
    stream_t& stream = ctx.gpu[0];
    timed_events marks(stream);
    const classes_on_device found{ctx, stream, z, scalars, points.n, split_min_ones,
                                  batch_t::padded_words(points.n), staging};
    marks.mark(stream);
    sum = classified_sum<own_type, point_t, bucket_t, affine_t>(ctx, stream, points, found.classes,
                                                                implementation, marks);
    // The last mark is complete only once the stream is (an event's time is read after it).
    stream.sync();
    for (int i = 0; i < 3; i++)
        times[i] = marks.ns(i, i + 1);
    return sum;
}

// B_G1 and B_G2 (points[0], points[1]: resident, as many points) over B's scalars, whose
// classes are found once, split whenever there are ones (B_G2's rule, which B_G1 follows
// here: a batch addition over few ones costs a pass over B's bitmap, not a pass over z).
// times: the classes' device time, then B_G1's batch addition and tail, then B_G2's.
static void classified_b_msms_on_device(cuzk_gpu_context& ctx, uint32_t set,
                                        const cuzk_gpu_points points[2],
                                        const cuzk_gpu_witness_scalars& scalars,
                                        uint32_t implementation, const cuzk_gpu_staging* staging,
                                        point_t& b_g1, g2_point_t& b_g2, uint64_t times[5])
{
    typedef batch_add_launch<point_t, bucket_t, affine_t> batch_t;
    check_classified(points[0], implementation);
    check_classified(points[1], implementation);
    if (points[0].n != points[1].n)
        throw std::invalid_argument("B_G1 and B_G2 take B's scalars: as many points each");
    b_g1.inf();
    b_g2.inf();
    std::fill(times, times + 5, 0);
    if (points[0].n == 0)
        return;
    const size_t n = points[0].n;
    const auto* z = (const witness_classes::value_t*)ctx.uploaded_witness(scalars.z_len, set);
    stream_t& stream = ctx.gpu[0];
    timed_events marks(stream);
    const classes_on_device b{ctx, stream, z, scalars, n, 0, batch_t::padded_words(n), staging};
    marks.mark(stream);
    b_g1 = classified_sum<own_msm::g1_msm, point_t, bucket_t, affine_t>(ctx, stream, points[0],
                                                                        b.classes, implementation,
                                                                        marks);
    b_g2 = classified_sum<own_msm::g2_msm, g2_point_t, g2_bucket_t, g2_affine_t>(
        ctx, stream, points[1], b.classes, implementation, marks);
    stream.sync();
    for (int i = 0; i < 5; i++)
        times[i] = marks.ns(i, i + 1);
}
