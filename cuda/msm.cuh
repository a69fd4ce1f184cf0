// Stage MSM, cuzk's own: Σ sᵢ·Pᵢ (G1 and G2) by Pippenger's method with signed digits, every
// device step on a stream of the caller's, so that a proof's MSMs run at the same time, each
// on a stream of its own. sppark's msm_t cannot: every instance shares the device's streams
// and its sort kernel's counters, and it sums every window's buckets on the host. First made
// for the MSMs whose time is latency, not arithmetic (a WinningPoSt's ~370k points, 18–31 ms
// each by sppark's one after another), it is also the faster at 2^16 … 2^27 points in G1 and
// G2 (run 82, docs/PERFORMANCE.md): under CUZK_MSM=cuzk it takes every MSM.
//
// 1. Digits: scalar s = Σ_w d_w·2^(c·w), d_w ∈ (−2^(c−1), 2^(c−1)]; one entry per window and
//    point, sorted by its bucket w·2^(c−1) + |d_w| − 1, holding the point's index and the
//    digit's sign in bit 31. A zero digit's entry gets the key past every bucket: it sorts
//    last and is never added.
// 2. cub's radix sort of the entries by key.
//    Steps 1 to 3 run for a group of windows at a time, as many as keep one sort within
//    GROUP_ITEMS entries (all 16 windows of 16-bit digits up to 2^24 points), so that large
//    MSMs take memory for a group only; a group's keys count from its first window.
// 3. Run sums (sum_runs): a thread adds the entries of `chunk` consecutive sorted positions.
//    A run of one key strictly inside a chunk is that key's whole sum; a chunk's first and
//    last runs may go on in its neighbours, so they go to the next level as two partial sums
//    (keys still sorted), until one chunk holds every entry. No key's load falls on one
//    thread, whatever the scalars (all equal, all 0 or 1).
// 4. Window sums W_w = Σ_b b·B_b, level by level: a thread per segment of 16 buckets writes its
//    weighted sum (running sums) and its plain sum; the weighted sums of a window are added by
//    step 3, the plain sums are the next level's values, down to one segment per window; a
//    thread per window then combines the levels (combine_levels), four doublings a level.
//    A segment's offset multiple is never computed.
// 5. On the host: Σ_w 2^(c·w)·W_w.
// An MSM may be computed in parts (H's chunks, between which a WinningPoSt takes the device):
// the parts share one set of buckets (shared_buckets), each adding its runs to what they hold
// at step 3, and only the last takes steps 4 and 5.
// Over a point table (point_table: a fixed query's points kept with 2^(c·w)·P for every window
// w, cuda/h_table.cuh) window w's digit of scalar i is a digit of point w·n + i's: every
// window's entries add into one set of buckets, and steps 4 and 5 sum one window, not
// ⌊255/c⌋ + 1 of them with their doublings.
#pragma once

#include <cub/device/device_radix_sort.cuh>

#include "affine_rounds.cuh"

namespace own_msm {

// Threads per block of the kernels that add points (register-heavy).
constexpr uint32_t ADD_THREADS = 128;
// Sorted entries per thread at the first level (throughput: every point is added there) and
// at the later ones (latency: few threads, partial sums that shrink by chunk/2 per level).
constexpr uint32_t FIRST_CHUNK = 32;
constexpr uint32_t LATER_CHUNK = 8;
// Buckets per thread in step 4.
constexpr uint32_t SEGMENT = 16;
// The narrowest and widest digits: buckets per window from 128 (each window's segments a
// whole number) to 2^21 (a group's keys stay below 2^31).
constexpr uint32_t MIN_BITS = 8, MAX_BITS = 22;
// What a bucket costs in step 4 (its load, its additions on each level) against an entry in
// steps 1–3 (sorting it, one mixed addition): with it the model's width is within 1 % of the
// best measured at every size, G1 2^16 … 2^27 and G2 2^20 … 2^26 (run 84, docs/PERFORMANCE.md).
constexpr double BUCKET_COST = 4;
// The most entries one group of windows sorts (steps 1–3): 4 GiB of keys and entries. With
// batched-affine rounds, whose lists take ≈ 83 bytes an entry more, 2^25 (a group is at least
// one window: 2^26 points' H chunk sorts a window at a time).
constexpr size_t GROUP_ITEMS = (size_t)1 << 28;
constexpr size_t AFFINE_GROUP_ITEMS = (size_t)1 << 25;
// Whether `implementation` (CUZK_GPU_MSM_*) is cuzk's MSM; with batched-affine rounds.
inline bool is_own(uint32_t implementation)
{
    return implementation == CUZK_GPU_MSM_CUZK || implementation == CUZK_GPU_MSM_CUZK_AFFINE;
}
inline bool with_affine_rounds(uint32_t implementation)
{
    return implementation == CUZK_GPU_MSM_CUZK_AFFINE;
}
inline void check_implementation(uint32_t implementation)
{
    if (!is_own(implementation) && implementation != CUZK_GPU_MSM_SPPARK)
        throw std::invalid_argument("no such MSM implementation");
}

// Scalars are below r < 2^255.
constexpr uint32_t SCALAR_BITS = 255;

// Windows of c-bit signed digits for a 255-bit scalar: with the window a carry out of the top
// needs when c divides 255.
__host__ __device__ constexpr uint32_t windows_of(uint32_t c) { return SCALAR_BITS / c + 1; }

#ifdef __CUDA_ARCH__ // the device's fr_t (the host's is blst's, its limbs private)
// Bits [bit0, bit0 + c) of a canonical scalar, c ≤ 16, bit0 < 256.
__device__ __forceinline__ uint32_t scalar_window(const fr_t& s, uint32_t bit0, uint32_t c)
{
    const uint32_t i = bit0 / 32, off = bit0 % 32;
    uint32_t v = s[i] >> off;
    if (off + c > 32 && i + 1 < sizeof(fr_t) / sizeof(uint32_t))
        v |= s[i + 1] << (32 - off);
    return v & ((1u << c) - 1);
}
#endif

// The entries of windows [first, first + count): the carries of the windows below are worked
// out again, the keys count from `first`. Over a point table (`table`), every window's keys
// are its bucket's in one set, and its entries name window w's copy of the point, w·n + i.
__launch_bounds__(256) __global__
void signed_digits(uint32_t* keys, uint32_t* entries, const fr_t* scalars, uint32_t n,
                   uint32_t c, bool mont, uint32_t first, uint32_t count, bool table)
{
#ifdef __CUDA_ARCH__
    const uint32_t half = 1u << (c - 1), none = table ? half : count * half;
    for (uint32_t i = threadIdx.x + blockIdx.x * blockDim.x; i < n; i += blockDim.x * gridDim.x) {
        fr_t s = scalars[i];
        if (mont)
            s.from();
        uint32_t carry = 0;
        for (uint32_t w = 0; w < first + count; w++) {
            const uint32_t raw = scalar_window(s, w * c, c) + carry; // ≤ 2^c
            carry = raw > half;                                       // digit raw − 2^c < 0
            if (w < first)
                continue;
            const uint32_t magnitude = carry ? (1u << c) - raw : raw;
            const size_t at = (size_t)(w - first) * n + i;
            const uint32_t bucket0 = table ? 0 : (w - first) * half;
            keys[at] = magnitude ? bucket0 + magnitude - 1 : none;
            entries[at] = ((table ? w * n : 0) + i) | (carry << 31);
        }
    }
#endif
}

// Step 3's entries at the first level: a point by index, negated when bit 31 is set.
template<class bucket_t, class affine_t>
struct point_entries {
    const typename affine_t::mem_t* points;
    const uint32_t* entries;
    __device__ void add_to(bucket_t& sum, size_t e) const
    {
        const uint32_t entry = entries[e];
        const affine_t p = points[entry & 0x7fffffffu];
        sum.add(p, (entry >> 31) != 0);
    }
};

// After batched-affine rounds (affine_rounds.cuh): their reduced list's points.
template<class bucket_t, class affine_t, class field_t>
struct reduced_entries {
    const xy_t<field_t>* points;
    __device__ void add_to(bucket_t& sum, size_t e) const
    {
        const xy_t<field_t> p = points[e];
        sum.add(affine_t{p.X, p.Y});
    }
};

// At the later levels: the partial sums of the level before.
template<class bucket_t>
struct partial_entries {
    const typename bucket_t::mem_t* sums;
    __device__ void add_to(bucket_t& sum, size_t e) const
    {
        const bucket_t p = sums[e];
        sum.add(p);
    }
};

// A logical thread of the kernels below is bucket_t::degree threads (G2: a pair, each holding
// one Fp of an Fp2 element), which take the same branches.

// Blocks of ADD_THREADS for `threads` logical threads of `bucket_t`.
template<class bucket_t>
static uint32_t add_blocks(size_t threads)
{
    return (uint32_t)((threads * bucket_t::degree + ADD_THREADS - 1) / ADD_THREADS);
}

// The start of the run of `key` at sorted position e: the identity, or with `accumulate` (an
// MSM in parts adding into the buckets of the parts before, `shared_buckets`), where e is
// the key's first entry, what its bucket holds. So each bucket is read once, by the sum that
// carries it to the one write of its total; the load may diverge in a warp, an addition would
// cost the warp a full addition for every lane's run.
template<class bucket_t>
__device__ __forceinline__ void begin_run(bucket_t& sum, const typename bucket_t::mem_t* totals,
                                          const uint32_t* keys, size_t e, uint32_t key,
                                          bool accumulate)
{
    if (accumulate && (e == 0 || keys[e - 1] != key))
        sum = totals[key];
    else
        sum.inf();
}

// One level of step 3 over m sorted entries. A key's sum is written to totals[key] exactly
// once: at the level where its run is inside one chunk, or at the last level (one chunk).
// Else the chunk's first and last runs go to next_keys/next_sums[2t, 2t + 1] (a chunk of
// one run: its sum, then the identity under the same key). Entries keyed `skip` are not added.
// `accumulate` (the first level of a part of an MSM in parts only): runs begin from the
// buckets (begin_run).
template<class bucket_t, class entries_t>
__launch_bounds__(ADD_THREADS) __global__
void sum_runs(typename bucket_t::mem_t* totals, uint32_t* next_keys,
              typename bucket_t::mem_t* next_sums, const uint32_t* keys, entries_t entries,
              size_t m, uint32_t chunk, uint32_t skip, bool accumulate)
{
    const size_t chunks = (m + chunk - 1) / chunk;
    const size_t t = (threadIdx.x + (size_t)blockIdx.x * blockDim.x) / bucket_t::degree;
    if (t >= chunks)
        return;
    const bool last_level = chunks == 1;
    const size_t begin = t * chunk, end = min(begin + chunk, m);
    uint32_t key = keys[begin];
    bucket_t sum;
    begin_run(sum, totals, keys, begin, key, accumulate);
    bool first = true;
    for (size_t e = begin; e < end; e++) {
        const uint32_t k = keys[e];
        if (k != key) {
            if (first && !last_level) {
                next_keys[2 * t] = key;
                next_sums[2 * t] = sum;
            } else {
                totals[key] = sum;
            }
            first = false;
            key = k;
            begin_run(sum, totals, keys, e, key, accumulate);
        }
        if (k != skip)
            entries.add_to(sum, e);
    }
    if (last_level) {
        totals[key] = sum;
        return;
    }
    if (first) {
        next_keys[2 * t] = key;
        next_sums[2 * t] = sum;
        sum.inf();
    }
    next_keys[2 * t + 1] = key;
    next_sums[2 * t + 1] = sum;
}

// Step 4, one level over `len` values X of each window, in segments of `seg` (seg divides len):
// thread t, segment k = t % (len/seg) of window w = t / (len/seg), writes its weighted sum
// Σ_i (i + 1)·X[k·seg + i], keyed w for step 3, and its plain sum Σ_i X[k·seg + i], a value
// of the next level.
template<class bucket_t>
__launch_bounds__(ADD_THREADS) __global__
void segment_level(uint32_t* weighted_keys, typename bucket_t::mem_t* weighted_sums,
                  typename bucket_t::mem_t* plain_sums, const typename bucket_t::mem_t* values,
                  uint32_t windows, uint32_t len, uint32_t seg)
{
    const uint32_t per_window = len / seg;
    const uint32_t t = (threadIdx.x + blockIdx.x * blockDim.x) / bucket_t::degree;
    if (t >= windows * per_window)
        return;
    const typename bucket_t::mem_t* x = values + (size_t)t * seg;
    bucket_t running, weighted;
    running.inf();
    weighted.inf();
    for (uint32_t i = seg; i-- > 0;) {
        const bucket_t value = x[i];
        running.add(value);
        weighted.add(running); // + Σ_{i' ≥ i} X[i']: X[i] counted i + 1 times in the end
    }
    weighted_keys[t] = t / per_window;
    weighted_sums[t] = weighted;
    plain_sums[t] = running;
}

// Step 4's end, a thread per window: F(X) = Σ_b (b + 1)·X_b over the window's buckets from the
// levels' weighted sums A_l (each level's segments added by step 3) and the plain sum P of
// all its buckets. With segments of SEGMENT, F(X) = A_1 + SEGMENT·(F(R) − P), R the
// segments' plain sums (Σ_k k·R_k = F(R) − P(R), and P(R) = P); at the last level, one segment
// per window, F = A_L.
template<class bucket_t>
__launch_bounds__(ADD_THREADS) __global__
void combine_levels(typename bucket_t::mem_t* window_sums, const typename bucket_t::mem_t* level_sums,
                    const typename bucket_t::mem_t* plain_totals, uint32_t windows, uint32_t levels)
{
    const uint32_t w = (threadIdx.x + blockIdx.x * blockDim.x) / bucket_t::degree;
    if (w >= windows)
        return;
    bucket_t minus_total = plain_totals[w];
    minus_total.cneg(true);
    bucket_t f = level_sums[(size_t)(levels - 1) * windows + w];
    for (uint32_t l = levels - 1; l-- > 0;) {
        f.add(minus_total);
        for (uint32_t d = 1; d < SEGMENT; d *= 2) {
            const bucket_t twice = f;
            f.add(twice);
        }
        const bucket_t a = level_sums[(size_t)l * windows + w];
        f.add(a);
    }
    window_sums[w] = f;
}

// Step 3 to the end, from a first level already launched into `next` (2 entries per chunk of
// `chunks`): the later levels on `stream`, ping-ponging between `next` and `spare`.
template<class bucket_t>
static void sum_later_levels(stream_t& stream, typename bucket_t::mem_t* totals, size_t chunks,
                             uint32_t* next_keys, typename bucket_t::mem_t* next_sums,
                             uint32_t* spare_keys, typename bucket_t::mem_t* spare_sums)
{
    while (chunks > 1) {
        const size_t m = 2 * chunks;
        chunks = (m + LATER_CHUNK - 1) / LATER_CHUNK;
        sum_runs<bucket_t><<<add_blocks<bucket_t>(chunks), ADD_THREADS, 0, stream>>>(
            totals, spare_keys, spare_sums, next_keys, partial_entries<bucket_t>{next_sums}, m,
            LATER_CHUNK, UINT32_MAX, false);
        CUDA_OK(cudaGetLastError());
        std::swap(next_keys, spare_keys);
        std::swap(next_sums, spare_sums);
    }
}

// Entries of one level of step 3: m of them make 2·⌈m/chunk⌉ for the next (0 at the last).
static size_t next_level_entries(size_t m, uint32_t chunk)
{
    const size_t chunks = (m + chunk - 1) / chunk;
    return chunks > 1 ? 2 * chunks : 0;
}

// The digit width for n points: the least work, windows × (points + BUCKET_COST × buckets).
static uint32_t digit_bits(size_t n)
{
    uint32_t best = MIN_BITS;
    double best_cost = 0;
    for (uint32_t c = MIN_BITS; c <= MAX_BITS; c++) {
        const double cost = (double)windows_of(c) * ((double)n + BUCKET_COST * (double)(1u << (c - 1)));
        if (c == MIN_BITS || cost < best_cost) {
            best = c;
            best_cost = cost;
        }
    }
    return best;
}

// The most points one MSM of ours takes: an entry holds a point's index in 31 bits, and a
// group of one window sorts n entries (an int).
constexpr size_t MAX_POINTS = (size_t)1 << 30;

// Windows per group (steps 1–3) for n points of `windows` windows, with batched-affine
// rounds or without.
static uint32_t group_windows(size_t n, uint32_t windows, bool affine)
{
    const size_t items = affine ? AFFINE_GROUP_ITEMS : GROUP_ITEMS;
    return (uint32_t)std::max<size_t>(1, std::min<size_t>(windows, items / n));
}

// Batched-affine rounds for n points of c-bit digits: as many as halve a bucket's expected
// n/2^(c−1) entries to one; none below two a bucket.
static uint32_t affine_rounds_for(size_t n, uint32_t c)
{
    uint32_t rounds = 0;
    for (size_t per_bucket = n >> (c - 1); per_bucket >= 2 && rounds < MAX_ROUNDS; per_bucket /= 2)
        rounds++;
    return rounds;
}

// Buckets of an MSM of c-bit digits: every window's, and one past the last for the zero
// digits' entries of the last group (a group's zero digits' key is the next group's first
// bucket, written before that group's).
constexpr size_t buckets_of(uint32_t c) { return (size_t)windows_of(c) * (1u << (c - 1)) + 1; }

// The buckets that the parts of one MSM share (H's chunks, quotient.cuh), in memory of the
// caller's that outlives the parts (buckets_of(c) of them): every part takes digits of the
// whole MSM's width and adds its runs into them, so that the windows are summed once, by the
// last part, and their width is the whole MSM's (fewer windows than its parts' would have).
template<class bucket_mem_t>
struct shared_buckets {
    bucket_mem_t* buckets;
    // The first part zeroes them, the others add into them; the last sums the windows.
    bool first_part, last_part;
    // The most windows a group sorts: the room the caller's scratch has for the sort.
    uint32_t group_windows;
};

// A fixed query's points for every window of c-bit digits (cuda/h_table.cuh): window w's copy
// of point i, 2^(c·w)·P_i, at points[w·n + i], w < windows_of(c). An MSM over it takes its
// width, and all its entries are sorted in one group (table_fits).
template<class affine_mem_t>
struct point_table {
    const affine_mem_t* points;
    uint32_t c;
};

// Whether an MSM of n points over a table of c-bit windows sorts every window's entries in one
// group (GROUP_ITEMS) and names each copy of a point in an entry's 31 bits.
__host__ __device__ constexpr bool table_fits(size_t n, uint32_t c)
{
    return c >= MIN_BITS && c <= MAX_BITS && n > 0 && windows_of(c) * n <= GROUP_ITEMS;
}

// One MSM in flight on a stream: the constructor enqueues every device step, result() waits
// for them and adds the windows on the host. The stream must outlive it. For G1 (bucket_t,
// point_t, affine_t) and G2 (g2_bucket_t, ...).
template<class bucket_t, class point_t, class affine_t>
class msm_on_stream {
    typedef typename bucket_t::mem_t bucket_mem_t;
    typedef typename affine_t::mem_t affine_mem_t;
    stream_t& stream;
    const uint32_t c, windows;
    // Over a point table: its points, every window's entries in one set of buckets.
    const affine_mem_t* const table_points;
    // Sets of buckets and window sums: a window's each, or one over a point table.
    const uint32_t sets;
    // Batched-affine rounds before step 3 (G1 only), 0 for none.
    const uint32_t rounds;
    // Device memory of the caller's that the sort's keys and entries may take (H's MSM: the
    // NTT buffers its coefficients leave free), `scratch_words` 32-bit words; else allocated.
    uint32_t* const scratch;
    const size_t scratch_words;
    // Whether the windows are summed (not by a part of an MSM in parts but its last).
    const bool sums_windows;
    dev_ptr_t<bucket_mem_t> d_window_sums;

    // Step 3 over m sorted entries (`entries` adds entry e to a sum), into the buckets (added
    // to what they hold with `accumulate`).
    template<class entries_t>
    void sum_sorted(bucket_mem_t* buckets, const uint32_t* keys, const entries_t& entries,
                    size_t m, uint32_t none, bool accumulate)
    {
        stream_t& s = stream;
        const size_t first_level = next_level_entries(m, FIRST_CHUNK);
        const size_t second_level = next_level_entries(first_level, LATER_CHUNK);
        dev_ptr_t<uint32_t> level_keys[2] = {{first_level, s}, {second_level, s}};
        dev_ptr_t<bucket_mem_t> level_sums[2] = {{first_level, s}, {second_level, s}};
        const size_t chunks = (m + FIRST_CHUNK - 1) / FIRST_CHUNK;
        sum_runs<bucket_t><<<add_blocks<bucket_t>(chunks), ADD_THREADS, 0, s>>>(
            buckets, level_keys[0].data(), level_sums[0].data(), keys, entries, m, FIRST_CHUNK, none,
            accumulate);
        CUDA_OK(cudaGetLastError());
        sum_later_levels<bucket_t>(s, buckets, chunks, level_keys[0].data(), level_sums[0].data(),
                                   level_keys[1].data(), level_sums[1].data());
        // The scratch above is freed in stream order as it goes out of scope.
    }

    // Steps 1–3 for windows [first, first + count) into their buckets (`accumulate`: added
    // to what they hold).
    void sum_buckets(bucket_mem_t* buckets, const affine_mem_t* points, const fr_t* scalars,
                     size_t n, bool mont, uint32_t first, uint32_t count, bool accumulate)
    {
        stream_t& s = stream;
        const bool table = table_points != nullptr;
        const uint32_t half = 1u << (c - 1), none = table ? half : count * half;
        const size_t m = (size_t)count * n;
        // Keys and entries, two arrays each, every array 256-byte aligned.
        const size_t stride = (m + 63) / 64 * 64;
        const bool in_scratch = scratch_words >= 4 * stride;
        dev_ptr_t<uint32_t> allocated{in_scratch ? 0 : 4 * stride, s};
        uint32_t* const sort = in_scratch ? scratch : allocated.data();
        uint32_t* const keys[2] = {sort, sort + stride};
        uint32_t* const entries[2] = {sort + 2 * stride, sort + 3 * stride};
        const uint32_t digit_blocks = (uint32_t)std::min<size_t>((n + 255) / 256, 8 * s.sm_count());
        signed_digits<<<digit_blocks, 256, 0, s>>>(keys[0], entries[0], scalars,
                                                   (uint32_t)n, c, mont, first, count, table);
        CUDA_OK(cudaGetLastError());
        cub::DoubleBuffer<uint32_t> sorted_keys{keys[0], keys[1]};
        cub::DoubleBuffer<uint32_t> sorted_entries{entries[0], entries[1]};
        const int end_bit = 32 - __builtin_clz(none);
        size_t temp_bytes = 0;
        CUDA_OK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, sorted_keys, sorted_entries,
                                                (int)m, 0, end_bit, s));
        dev_ptr_t<uint8_t> temp{temp_bytes, s};
        CUDA_OK(cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, sorted_keys,
                                                sorted_entries, (int)m, 0, end_bit, s));
        if constexpr (bucket_t::degree == 1) {
            if (rounds) {
                device_rounds exec{s};
                const batched_rounds<fp_t, device_rounds> reduced{
                    exec, sorted_keys.Current(), sorted_entries.Current(), points, m, none,
                    (size_t)none, rounds};
                sum_sorted(buckets, reduced.keys(),
                           reduced_entries<bucket_t, affine_t, fp_t>{reduced.points()},
                           reduced.capacity(), none, accumulate);
                return;
            }
        }
        sum_sorted(buckets, sorted_keys.Current(),
                   point_entries<bucket_t, affine_t>{points, sorted_entries.Current()}, m, none,
                   accumulate);
        // The scratch above is freed in stream order as it goes out of scope.
    }

    // Step 4 and its end: the window sums W_w of the buckets into d_window_sums.
    void sum_windows(const bucket_mem_t* buckets)
    {
        stream_t& s = stream;
        const uint32_t half = 1u << (c - 1);
        // Step 4, level by level (segments of SEGMENT, the last level one segment per window);
        // the weighted sums of a level added by step 3 into its row of level_sums.
        uint32_t levels = 0;
        for (uint32_t len = half;; len /= SEGMENT) {
            levels++;
            if (len <= SEGMENT)
                break;
        }
        const size_t segments = (size_t)sets * (half / SEGMENT);
        const size_t segments_next = next_level_entries(segments, LATER_CHUNK);
        dev_ptr_t<uint32_t> segment_keys[3] = {{segments, s}, {segments_next, s},
                                               {next_level_entries(segments_next, LATER_CHUNK), s}};
        dev_ptr_t<bucket_mem_t> segment_sums[3] = {{segments, s}, {segments_next, s},
                                                   {next_level_entries(segments_next, LATER_CHUNK), s}};
        // The plain sums, ping-ponged between levels (level l + 1 reads what level l wrote).
        dev_ptr_t<bucket_mem_t> plain[2] = {{segments, s}, {std::max<size_t>(segments / SEGMENT, sets), s}};
        dev_ptr_t<bucket_mem_t> level_sums{(size_t)levels * sets, s};
        const bucket_mem_t* values = buckets;
        uint32_t len = half;
        for (uint32_t l = 0; l < levels; l++) {
            const uint32_t seg = std::min(SEGMENT, len);
            const size_t level_segments = (size_t)sets * (len / seg);
            bucket_mem_t* row = level_sums.data() + (size_t)l * sets;
            const bool last = seg == len;
            // At the last level the weighted sums are the row itself (one segment per window).
            segment_level<bucket_t><<<add_blocks<bucket_t>(level_segments), ADD_THREADS, 0, s>>>(
                segment_keys[0].data(), last ? row : segment_sums[0].data(), plain[l % 2].data(),
                values, sets, len, seg);
            CUDA_OK(cudaGetLastError());
            if (!last) {
                const size_t chunks = (level_segments + LATER_CHUNK - 1) / LATER_CHUNK;
                sum_runs<bucket_t><<<add_blocks<bucket_t>(chunks), ADD_THREADS, 0, s>>>(
                    row, segment_keys[1].data(), segment_sums[1].data(), segment_keys[0].data(),
                    partial_entries<bucket_t>{segment_sums[0].data()}, level_segments, LATER_CHUNK,
                    UINT32_MAX, false);
                CUDA_OK(cudaGetLastError());
                sum_later_levels<bucket_t>(s, row, chunks, segment_keys[1].data(),
                                           segment_sums[1].data(), segment_keys[2].data(),
                                           segment_sums[2].data());
            }
            values = plain[l % 2].data();
            len /= seg;
        }
        combine_levels<bucket_t><<<add_blocks<bucket_t>(sets), ADD_THREADS, 0, s>>>(
            d_window_sums.data(), level_sums.data(), values, sets, levels);
        CUDA_OK(cudaGetLastError());
        // The scratch above is freed in stream order as it goes out of scope.
    }

public:
    // points: n device points; scalars: n device scalars, in Montgomery form when `mont`;
    // bits: the digits' width, 0 for digit_bits(n) (the benchmarks try others); affine: the
    // buckets' sums begun by batched-affine rounds (G1; G2 ignores it); scratch: device
    // memory of `scratch_words` 32-bit words, 256-byte aligned, that the sort's keys and
    // entries take when they fit (4 arrays of a group's entries, each rounded up to 64), unused by
    // anything else until result(); shared: this MSM is a part of one in parts, its buckets
    // those given (then `bits` is the whole MSM's width, and no rounds); table: the points'
    // table (then `points` is unused, and `bits`, `affine` and `shared` are not given).
    msm_on_stream(stream_t& s, const affine_mem_t* points, const fr_t* scalars, size_t n, bool mont,
                  uint32_t bits = 0, bool affine = false, uint32_t* scratch = nullptr,
                  size_t scratch_words = 0, const shared_buckets<bucket_mem_t>* shared = nullptr,
                  const point_table<affine_mem_t>* table = nullptr)
        : stream(s), c(table ? table->c : bits ? bits : digit_bits(n)), windows(windows_of(c)),
          table_points(table ? table->points : nullptr), sets(table ? 1 : windows),
          rounds(affine && bucket_t::degree == 1 && c >= MIN_BITS && c <= MAX_BITS ? affine_rounds_for(n, c) : 0),
          scratch(scratch), scratch_words(scratch ? scratch_words : 0),
          sums_windows(!shared || shared->last_part), d_window_sums{sets, s}
    {
        if (n == 0 || n > MAX_POINTS)
            throw std::invalid_argument("cuzk's MSM takes 1 to 2^30 points");
        if (c < MIN_BITS || c > MAX_BITS)
            throw std::invalid_argument("cuzk's MSM takes digits of 8 to 22 bits");
        if (shared && (!bits || !shared->buckets || affine))
            throw std::invalid_argument("a part of an MSM takes its buckets, the whole MSM's digit width and no batched-affine rounds");
        if (table && (bits || affine || shared || !table->points || !table_fits(n, c)))
            throw std::invalid_argument("an MSM over a point table takes its width, one group of every window's entries, no batched-affine rounds and no parts");
        const uint32_t half = 1u << (c - 1);
        if (table) {
            dev_ptr_t<bucket_mem_t> buckets{half + 1, s};
            CUDA_OK(cudaMemsetAsync(buckets.data(), 0, (half + 1) * sizeof(bucket_mem_t), s));
            sum_buckets(buckets.data(), table->points, scalars, n, mont, 0, windows, false);
            sum_windows(buckets.data());
            return;
        }
        dev_ptr_t<bucket_mem_t> own_buckets{shared ? 0 : buckets_of(c), s};
        bucket_mem_t* const buckets = shared ? shared->buckets : own_buckets.data();
        if (!shared || shared->first_part)
            CUDA_OK(cudaMemsetAsync(buckets, 0, buckets_of(c) * sizeof(bucket_mem_t), s));
        uint32_t group = group_windows(n, windows, rounds > 0);
        if (shared)
            group = std::max(1u, std::min(group, shared->group_windows));
        const bool accumulate = shared && !shared->first_part;
        for (uint32_t first_window = 0; first_window < windows; first_window += group)
            sum_buckets(buckets + (size_t)first_window * half, points, scalars, n, mont,
                        first_window, std::min(group, windows - first_window), accumulate);
        if (sums_windows)
            sum_windows(buckets);
        // The buckets above, when they are this MSM's own, are freed in stream order as they
        // go out of scope.
    }

    // Waits for the device steps; Σ_w 2^(c·w)·W_w (a part of an MSM in parts but its last:
    // the identity, its sums being in the shared buckets).
    point_t result()
    {
        if (!sums_windows) {
            stream.sync();
            point_t none;
            none.inf();
            return none;
        }
        std::vector<bucket_t> window_sums(sets);
        stream.DtoH(window_sums.data(), d_window_sums.data(), sets);
        stream.sync();
        point_t out;
        out.inf();
        for (uint32_t w = sets; w-- > 0;) {
            for (uint32_t i = 0; i < c; i++)
                out.dbl();
            out.add(point_t(window_sums[w]));
        }
        return out;
    }
};

typedef msm_on_stream<bucket_t, point_t, affine_t> g1_msm;
typedef msm_on_stream<g2_bucket_t, g2_point_t, g2_affine_t> g2_msm;

} // namespace own_msm
