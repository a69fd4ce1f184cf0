// Stage MSM, batched-affine rounds (cuzk's own MSM under CUZK_MSM=cuzk-affine, G1): before
// step 3's run sums (msm.cuh), a group's sorted entries are reduced by rounds of affine
// additions whose inversions are shared, so that most of a bucket's points are added at
// ≈ 7.5 Fp multiplications each (the product, its prefix and unwinding, λ, X3, Y3, a share of
// the tree) instead of a mixed XYZZ addition's 9 (7M + 2S).
//
// A round reads a sorted list of (key, affine point) and writes a shorter one, in the same
// order: each thread takes ROUND_CHUNK consecutive places and, within them, adds each run's
// points two by two (an odd one out is copied). A pair's sum is the chord (P + Q) or the
// tangent (P + P) through λ = num/den; the dens of a thread's pairs multiply into one value,
// the threads' values are inverted together by an inversion tree (one field inversion for the
// whole round), and each thread then unwinds its own product. An infinity among a pair, or
// P + (−P), needs no inversion. Round 0 reads the sort's entries (a key point by index, negated
// by bit 31); the zero digits' entries (keyed `none`, sorted last) are dropped. The passes
// before a pair's sum read only its X coordinates unless they are equal or 0 (pair_den).
//
// Every step is a __host__ __device__ body run per thread: on the device by the kernels of
// `device_rounds`, on the host by `host_rounds` (the host check of the algorithm, see
// cuzk_gpu_affine_rounds_check), with one driver (`batched_rounds`) for both.
#pragma once

#include <cub/device/device_scan.cuh>
#include <vector>
#include <algorithm>

namespace own_msm {

// Sorted places per thread in a round: up to ROUND_CHUNK/2 pairs share one product.
constexpr uint32_t ROUND_CHUNK = 16;
// Values per node of the inversion tree.
constexpr uint32_t TREE_FANOUT = 16;
// The most rounds a reduction runs (a bucket of up to 2^12 points per run of rounds).
constexpr uint32_t MAX_ROUNDS = 12;

// An affine point as the rounds read and write it: sppark's affine_t keeps its coordinates
// private, and has the same layout (blst_p1_affine: x, y; infinity is (0, 0)).
template<class field_t>
struct xy_t {
    field_t X, Y;
    __host__ __device__ bool is_inf() const { return (bool)X.is_zero() & (bool)Y.is_zero(); }
};

// The sum of two points of a bucket: `sum(inv)` with inv = 1/den when `inverts`, else a point
// given without a division (an infinity among them, P + (−P), a tangent at y = 0).
template<class field_t>
struct pair_sum {
    xy_t<field_t> p, q;
    field_t num, den;
    uint32_t kind;
    enum : uint32_t { CHORD, TANGENT, TAKE_P, TAKE_Q, AT_INFINITY };

    __host__ __device__ pair_sum(const xy_t<field_t>& p_, const xy_t<field_t>& q_) : p(p_), q(q_)
    {
        den = field_t::one();
        if (p.is_inf()) {
            kind = TAKE_Q;
        } else if (q.is_inf()) {
            kind = TAKE_P;
        } else {
            const field_t dx = q.X - p.X;
            const field_t dy = q.Y - p.Y;
            if (!dx.is_zero()) {
                kind = CHORD;
                num = dy;
                den = dx;
            } else if (dy.is_zero() && !p.Y.is_zero()) {
                kind = TANGENT;
                const field_t xx = sqr(p.X);
                num = xx + xx + xx;
                den = p.Y + p.Y;
            } else {
                kind = AT_INFINITY;
            }
        }
    }

    __host__ __device__ bool inverts() const { return kind == CHORD || kind == TANGENT; }

    // λ = num·inv; X3 = λ² − X1 − X2; Y3 = λ·(X1 − X3) − Y1 (the tangent's X2 is X1).
    __host__ __device__ xy_t<field_t> sum(const field_t& inv) const
    {
        xy_t<field_t> r;
        if (kind == TAKE_P)
            return p;
        if (kind == TAKE_Q)
            return q;
        if (kind == AT_INFINITY) {
            r.X.zero();
            r.Y.zero();
            return r;
        }
        const field_t lambda = num * inv;
        r.X = sqr(lambda) - p.X - q.X;
        r.Y = lambda * (p.X - r.X) - p.Y;
        return r;
    }
};

// Round 0's list: the sort's entries, a point by index, negated when bit 31 is set.
template<class field_t, class affine_mem_t>
struct entry_list {
    const uint32_t* keys;
    const uint32_t* entries;
    const affine_mem_t* points;
    __host__ __device__ const xy_t<field_t>& at(size_t i) const
    {
        return reinterpret_cast<const xy_t<field_t>*>(points)[entries[i] & 0x7fffffffu];
    }
    __host__ __device__ field_t x(size_t i) const { return at(i).X; }
    __host__ __device__ xy_t<field_t> point(size_t i) const
    {
        xy_t<field_t> p = at(i);
        p.Y.cneg((entries[i] >> 31) != 0);
        return p;
    }
};

// A later round's list: the points themselves.
template<class field_t>
struct point_list {
    const uint32_t* keys;
    const xy_t<field_t>* points;
    __host__ __device__ field_t x(size_t i) const { return points[i].X; }
    __host__ __device__ xy_t<field_t> point(size_t i) const { return points[i]; }
};

// The den of the pair at places (i, i + 1), and whether it is inverted: the chord's X
// difference when both X are nonzero and differ (nearly every pair: only the X coordinates are
// read), else as pair_sum says.
template<class field_t, class list_t>
__host__ __device__ bool pair_den(const list_t& in, size_t i, field_t& den)
{
    const field_t x1 = in.x(i), x2 = in.x(i + 1);
    den = x2 - x1;
    if (!x1.is_zero() && !x2.is_zero() && !den.is_zero())
        return true;
    const pair_sum<field_t> pair{in.point(i), in.point(i + 1)};
    den = pair.den;
    return pair.inverts();
}

// Where a round writes: its list, and each thread's first place in it.
template<class field_t>
struct round_output {
    uint32_t* keys;
    xy_t<field_t>* points;
    const uint32_t* offsets;
};

// A round's places [begin, end) of thread t over a list of `len`.
struct chunk_t {
    size_t begin, end;
    __host__ __device__ chunk_t(size_t t, size_t len)
        : begin(t * ROUND_CHUNK), end(begin + ROUND_CHUNK < len ? begin + ROUND_CHUNK : len) {}
    __host__ __device__ bool pairs_at(const uint32_t* keys, size_t i) const
    {
        return i + 1 < end && keys[i + 1] == keys[i];
    }
};

// Thread t's first pass: how many places it writes (`counts[t]`) and the product of its
// pairs' dens (`products[t]`, the inversion tree's leaf).
template<class field_t, class list_t>
__host__ __device__ void round_products(size_t t, const list_t& in, size_t len, uint32_t none,
                                        field_t* products, uint32_t* counts)
{
    const chunk_t chunk{t, len};
    field_t product = field_t::one();
    uint32_t count = 0;
    for (size_t i = chunk.begin; i < chunk.end && in.keys[i] != none; count++) {
        if (chunk.pairs_at(in.keys, i)) {
            field_t den;
            if (pair_den(in, i, den))
                product *= den;
            i += 2;
        } else {
            i += 1;
        }
    }
    products[t] = product;
    counts[t] = count;
}

// Thread t's second pass, `inverse` = 1/products[t]: its places written from out.offsets[t]
// on, a single copied as it is met, the pairs' sums as the product unwinds.
template<class field_t, class list_t>
__host__ __device__ void round_sums(size_t t, const list_t& in, size_t len, uint32_t none,
                                    field_t inverse, const round_output<field_t>& out)
{
    const chunk_t chunk{t, len};
    field_t before[ROUND_CHUNK / 2]; // the product of the dens of the pairs before each pair
    uint8_t pair_at[ROUND_CHUNK / 2], pair_place[ROUND_CHUNK / 2];
    uint32_t pairs = 0, count = 0;
    field_t running = field_t::one();
    const size_t first = out.offsets[t];
    for (size_t i = chunk.begin; i < chunk.end && in.keys[i] != none; count++) {
        if (chunk.pairs_at(in.keys, i)) {
            field_t den;
            before[pairs] = running;
            if (pair_den(in, i, den))
                running *= den;
            pair_at[pairs] = (uint8_t)(i - chunk.begin);
            pair_place[pairs] = (uint8_t)count;
            pairs++;
            i += 2;
        } else {
            out.keys[first + count] = in.keys[i];
            out.points[first + count] = in.point(i);
            i += 1;
        }
    }
    for (uint32_t j = pairs; j-- > 0;) {
        const size_t i = chunk.begin + pair_at[j];
        const pair_sum<field_t> pair{in.point(i), in.point(i + 1)};
        const field_t inv_den = inverse * before[j]; // 1/den_j
        if (pair.inverts())
            inverse *= pair.den; // 1/(the dens before pair j)
        out.keys[first + pair_place[j]] = in.keys[i];
        out.points[first + pair_place[j]] = pair.sum(inv_den);
    }
}

// The inversion tree: node g of a level is the product of values [g·FANOUT, (g+1)·FANOUT) of
// the level below (n of them).
template<class field_t>
__host__ __device__ void tree_up(size_t g, const field_t* below, size_t n, field_t* above)
{
    field_t product = field_t::one();
    for (size_t k = g * TREE_FANOUT; k < (g + 1) * TREE_FANOUT && k < n; k++)
        product *= below[k];
    above[g] = product;
}

// Down the tree: above[g] holds the inverse of node g's product; each of its values below is
// replaced by its inverse.
template<class field_t>
__host__ __device__ void tree_down(size_t g, field_t* below, size_t n, const field_t* above)
{
    const size_t first = g * TREE_FANOUT;
    const size_t count = first + TREE_FANOUT < n ? TREE_FANOUT : n - first;
    field_t before[TREE_FANOUT];
    field_t running = field_t::one();
    for (size_t k = 0; k < count; k++) {
        before[k] = running;
        running *= below[first + k];
    }
    field_t inverse = above[g];
    for (size_t k = count; k-- > 0;) {
        const field_t value = below[first + k];
        below[first + k] = inverse * before[k];
        inverse *= value;
    }
}

// The places a round writes at most, from `len` read by threads of ROUND_CHUNK: each run
// piece within a thread gives ⌈L/2⌉, the pieces are at most the distinct keys plus one per
// thread boundary.
__host__ __device__ inline size_t round_capacity(size_t len, size_t keys)
{
    const size_t threads = (len + ROUND_CHUNK - 1) / ROUND_CHUNK;
    const size_t bound = (len + keys + threads) / 2 + 1;
    return bound < len ? bound : len;
}

// Threads (one more than the chunks: its count 0 ends the offsets' scan with the total).
__host__ __device__ inline size_t round_threads(size_t len)
{
    return (len + ROUND_CHUNK - 1) / ROUND_CHUNK + 1;
}

// The inversion tree's values for `leaves` leaves, all levels.
inline size_t tree_values(size_t leaves)
{
    size_t total = 0;
    for (size_t n = leaves; n > 1; n = (n + TREE_FANOUT - 1) / TREE_FANOUT)
        total += n;
    return total + 1;
}

// The places each round writes at most: caps[r + 1] for round r, caps[0] = m.
struct round_capacities {
    size_t caps[MAX_ROUNDS + 1];
    round_capacities(size_t m, size_t keys_bound, uint32_t rounds)
    {
        if (rounds < 1 || rounds > MAX_ROUNDS)
            throw std::invalid_argument("batched-affine rounds: 1 to 12");
        if (m > UINT32_MAX)
            throw std::invalid_argument("batched-affine rounds: at most 2^32 - 1 entries");
        caps[0] = m;
        for (uint32_t r = 0; r < rounds; r++)
            caps[r + 1] = round_capacity(caps[r], keys_bound);
    }
};

// `rounds` rounds (1 to MAX_ROUNDS) over m sorted entries, run by an executor `exec_t`
// (device_rounds, host_rounds) that gives buffers and runs each step over its threads; the
// result (keys(), points()) is a sorted list of capacity() places, those past the reduced
// length keyed `none`. Lists ping-pong between two buffers: round 1's, the larger, and round
// 2's. `keys_bound`: the distinct keys other than `none`, at most. Buffers are members so
// that the device's are freed in stream order only when the caller is done with the result.
template<class field_t, class exec_t>
class batched_rounds {
    template<class T>
    using buffer_t = typename exec_t::template buffer_t<T>;
    const round_capacities plan;
    const uint32_t rounds;
    buffer_t<uint32_t> list_keys[2];
    buffer_t<xy_t<field_t>> list_points[2];
    buffer_t<uint32_t> counts, offsets, lengths;
    buffer_t<field_t> tree;

    // Round r over `in` (length at lengths[r]) into list r % 2.
    template<class list_t>
    void round(exec_t& exec, const list_t& in, uint32_t r, uint32_t none)
    {
        const uint32_t* len = lengths.data() + r;
        const round_output<field_t> out{list_keys[r % 2].data(), list_points[r % 2].data(),
                                        offsets.data()};
        if (r + 1 == rounds)
            exec.fill(out.keys, plan.caps[r + 1], none);
        const size_t threads = round_threads(plan.caps[r]);
        exec.products(in, len, none, tree.data(), counts.data(), threads);
        exec.invert(tree.data(), threads);
        exec.exclusive_sum(offsets.data(), counts.data(), threads, lengths.data() + r + 1);
        exec.sums(in, len, none, tree.data(), out, threads);
    }

public:
    template<class affine_mem_t>
    batched_rounds(exec_t& exec, const uint32_t* keys, const uint32_t* entries,
                   const affine_mem_t* points, size_t m, uint32_t none, size_t keys_bound,
                   uint32_t rounds_)
        : plan{m, keys_bound, rounds_}, rounds(rounds_),
          list_keys{exec.template alloc<uint32_t>(plan.caps[1]),
                    exec.template alloc<uint32_t>(rounds > 1 ? plan.caps[2] : 0)},
          list_points{exec.template alloc<xy_t<field_t>>(plan.caps[1]),
                      exec.template alloc<xy_t<field_t>>(rounds > 1 ? plan.caps[2] : 0)},
          counts(exec.template alloc<uint32_t>(round_threads(m))),
          offsets(exec.template alloc<uint32_t>(round_threads(m))),
          lengths(exec.template alloc<uint32_t>(rounds + 1)),
          tree(exec.template alloc<field_t>(tree_values(round_threads(m))))
    {
        exec.fill(lengths.data(), 1, (uint32_t)m);
        round(exec, entry_list<field_t, affine_mem_t>{keys, entries, points}, 0, none);
        for (uint32_t r = 1; r < rounds; r++)
            round(exec, point_list<field_t>{list_keys[(r - 1) % 2].data(), list_points[(r - 1) % 2].data()},
                  r, none);
    }

    const uint32_t* keys() const { return list_keys[(rounds - 1) % 2].data(); }
    const xy_t<field_t>* points() const { return list_points[(rounds - 1) % 2].data(); }
    size_t capacity() const { return plan.caps[rounds]; }
};

// Inverts the first n values of `tree` in place, the levels above them after.
template<class field_t, class exec_t>
void invert_by_tree(exec_t& exec, field_t* tree, size_t n)
{
    size_t level_sizes[16], level_at[16], levels = 0, at = 0;
    for (size_t size = n;; size = (size + TREE_FANOUT - 1) / TREE_FANOUT) {
        level_sizes[levels] = size;
        level_at[levels++] = at;
        at += size;
        if (size == 1)
            break;
    }
    for (size_t l = 0; l + 1 < levels; l++)
        exec.tree_up(tree + level_at[l], level_sizes[l], tree + level_at[l + 1], level_sizes[l + 1]);
    exec.reciprocal(tree + level_at[levels - 1]);
    for (size_t l = levels - 1; l-- > 0;)
        exec.tree_down(tree + level_at[l], level_sizes[l], tree + level_at[l + 1], level_sizes[l + 1]);
}

// The host executor: the same bodies in loops, for the host check.
struct host_rounds {
    template<class T>
    struct buffer_t : std::vector<T> {
        using std::vector<T>::vector;
    };
    template<class T>
    buffer_t<T> alloc(size_t n) { return buffer_t<T>(n); }
    template<class T>
    void fill(T* at, size_t n, T value) { std::fill(at, at + n, value); }
    template<class list_t, class field_t>
    void products(const list_t& in, const uint32_t* len, uint32_t none, field_t* leaves,
                  uint32_t* counts, size_t threads)
    {
        for (size_t t = 0; t < threads; t++)
            round_products(t, in, *len, none, leaves, counts);
    }
    template<class field_t>
    void invert(field_t* tree, size_t n) { invert_by_tree(*this, tree, n); }
    template<class field_t>
    void tree_up(const field_t* below, size_t n, field_t* above, size_t nodes)
    {
        for (size_t g = 0; g < nodes; g++)
            own_msm::tree_up(g, below, n, above);
    }
    template<class field_t>
    void tree_down(field_t* below, size_t n, const field_t* above, size_t nodes)
    {
        for (size_t g = 0; g < nodes; g++)
            own_msm::tree_down(g, below, n, above);
    }
    template<class field_t>
    void reciprocal(field_t* value) { *value = value->reciprocal(); }
    void exclusive_sum(uint32_t* offsets, const uint32_t* counts, size_t n, uint32_t* total)
    {
        uint32_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            offsets[i] = sum;
            sum += counts[i];
        }
        *total = sum;
    }
    template<class list_t, class field_t>
    void sums(const list_t& in, const uint32_t* len, uint32_t none, const field_t* inverses,
              const round_output<field_t>& out, size_t threads)
    {
        for (size_t t = 0; t < threads; t++)
            round_sums(t, in, *len, none, inverses[t], out);
    }
};

// The device executor's kernels: one logical thread per body call.
constexpr uint32_t ROUND_THREADS = 128;

template<class list_t, class field_t>
__launch_bounds__(ROUND_THREADS) __global__
void round_products_kernel(list_t in, const uint32_t* len, uint32_t none, field_t* leaves,
                           uint32_t* counts, size_t threads)
{
    const size_t t = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    if (t < threads)
        round_products(t, in, *len, none, leaves, counts);
}

template<class list_t, class field_t>
__launch_bounds__(ROUND_THREADS) __global__
void round_sums_kernel(list_t in, const uint32_t* len, uint32_t none, const field_t* inverses,
                       round_output<field_t> out, size_t threads)
{
    const size_t t = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    if (t < threads)
        round_sums(t, in, *len, none, inverses[t], out);
}

template<class field_t>
__launch_bounds__(ROUND_THREADS) __global__
void tree_up_kernel(const field_t* below, size_t n, field_t* above, size_t nodes)
{
    const size_t g = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    if (g < nodes)
        tree_up(g, below, n, above);
}

template<class field_t>
__launch_bounds__(ROUND_THREADS) __global__
void tree_down_kernel(field_t* below, size_t n, const field_t* above, size_t nodes)
{
    const size_t g = threadIdx.x + (size_t)blockIdx.x * blockDim.x;
    if (g < nodes)
        tree_down(g, below, n, above);
}

// sppark's device inversion pairs the lanes of a warp: a whole warp inverts the one value.
template<class field_t>
__launch_bounds__(32) __global__
void reciprocal_kernel(field_t* value)
{
    const field_t inverse = value->reciprocal();
    __syncwarp();
    if (threadIdx.x == 0)
        *value = inverse;
}

template<class T>
__launch_bounds__(256) __global__
void fill_kernel(T* at, size_t n, T value)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n; i += (size_t)blockDim.x * gridDim.x)
        at[i] = value;
}

// The device executor: every step enqueued on `stream`, buffers allocated (and freed) in its
// order.
struct device_rounds {
    stream_t& stream;
    template<class T>
    using buffer_t = dev_ptr_t<T>;
    template<class T>
    dev_ptr_t<T> alloc(size_t n) { return dev_ptr_t<T>{n, stream}; }

    static uint32_t blocks(size_t threads, uint32_t per_block)
    {
        return (uint32_t)((threads + per_block - 1) / per_block);
    }
    template<class T>
    void fill(T* at, size_t n, T value)
    {
        if (n == 0)
            return;
        fill_kernel<<<std::min<uint32_t>(blocks(n, 256), 8 * stream.sm_count()), 256, 0, stream>>>(at, n, value);
        CUDA_OK(cudaGetLastError());
    }
    template<class list_t, class field_t>
    void products(const list_t& in, const uint32_t* len, uint32_t none, field_t* leaves,
                  uint32_t* counts, size_t threads)
    {
        round_products_kernel<<<blocks(threads, ROUND_THREADS), ROUND_THREADS, 0, stream>>>(
            in, len, none, leaves, counts, threads);
        CUDA_OK(cudaGetLastError());
    }
    template<class field_t>
    void invert(field_t* tree, size_t n) { invert_by_tree(*this, tree, n); }
    template<class field_t>
    void tree_up(const field_t* below, size_t n, field_t* above, size_t nodes)
    {
        tree_up_kernel<<<blocks(nodes, ROUND_THREADS), ROUND_THREADS, 0, stream>>>(below, n, above, nodes);
        CUDA_OK(cudaGetLastError());
    }
    template<class field_t>
    void tree_down(field_t* below, size_t n, const field_t* above, size_t nodes)
    {
        tree_down_kernel<<<blocks(nodes, ROUND_THREADS), ROUND_THREADS, 0, stream>>>(below, n, above, nodes);
        CUDA_OK(cudaGetLastError());
    }
    template<class field_t>
    void reciprocal(field_t* value)
    {
        reciprocal_kernel<<<1, 32, 0, stream>>>(value);
        CUDA_OK(cudaGetLastError());
    }
    // offsets = the exclusive sum of n counts, whose last is 0: *total gets offsets[n − 1].
    void exclusive_sum(uint32_t* offsets, const uint32_t* counts, size_t n, uint32_t* total)
    {
        size_t temp_bytes = 0;
        CUDA_OK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, counts, offsets, (int)n, stream));
        dev_ptr_t<uint8_t> temp{temp_bytes, stream};
        CUDA_OK(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, counts, offsets, (int)n, stream));
        CUDA_OK(cudaMemcpyAsync(total, offsets + n - 1, sizeof(uint32_t), cudaMemcpyDeviceToDevice, stream));
    }
    template<class list_t, class field_t>
    void sums(const list_t& in, const uint32_t* len, uint32_t none, const field_t* inverses,
              const round_output<field_t>& out, size_t threads)
    {
        round_sums_kernel<<<blocks(threads, ROUND_THREADS), ROUND_THREADS, 0, stream>>>(
            in, len, none, inverses, out, threads);
        CUDA_OK(cudaGetLastError());
    }
};

} // namespace own_msm
