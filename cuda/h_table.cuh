// Stage H table: a resident key's H query kept with a copy of its points for every window of
// the digits its MSM takes, 2^(c·w)·P_i for w < windows_of(c) (window 0 the query itself), so
// that H's MSM adds every window's entries into one set of buckets and sums one window, not
// ⌊255/c⌋ + 1 (msm.cuh's point_table). The H query never changes for a key while its scalars
// change every proof, so the table is made once, on the device, when the key is uploaded; it
// is part of the key's device memory (budgeted and reported with it). Only for H queries of
// up to 2^22 points (a 2KiB PoRep's, a 32GiB WinningPoSt's): there the windows' sums are a
// sixth of the MSM's cost (docs/PERFORMANCE.md); a 2^27 query's table would take 155 GB.
#pragma once

namespace h_table {

// The most points of an H query that gets a table: 13 copies of 2^22 points are 5.2 GB.
constexpr size_t MAX_POINTS = (size_t)1 << 22;

// The table's digit width for an H query of n points, 0 for none: the least work, with one set
// of buckets, windows × points + BUCKET_COST × buckets (msm.cuh's digit_bits with every window's
// buckets but one set's gone).
static uint32_t bits_for(size_t n)
{
    if (n == 0 || n > MAX_POINTS)
        return 0;
    uint32_t best = 0;
    double best_cost = 0;
    for (uint32_t c = own_msm::MIN_BITS; c <= own_msm::MAX_BITS; c++) {
        if (!own_msm::table_fits(n, c))
            continue;
        const double cost = (double)own_msm::windows_of(c) * (double)n +
                            own_msm::BUCKET_COST * (double)(1u << (c - 1));
        if (best == 0 || cost < best_cost) {
            best = c;
            best_cost = cost;
        }
    }
    return best;
}

// The next window's copy of n points: out[i] = 2^c·in[i], affine (infinity as (0, 0)). The
// doublings are Jacobian (dbl-2009-l), then one inversion a point. fp_t's reciprocal pairs each
// lane with its neighbour, so every lane of a warp runs the same number of iterations, the
// lanes past n on point 0 without writing it.
__launch_bounds__(128) __global__
void next_window(own_msm::xy_t<fp_t>* out, const own_msm::xy_t<fp_t>* in, size_t n, uint32_t c)
{
#ifdef __CUDA_ARCH__
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    const size_t iterations = (n + stride - 1) / stride;
    for (size_t k = 0, i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; k < iterations; k++, i += stride) {
        const bool live = i < n;
        const own_msm::xy_t<fp_t> p = in[live ? i : 0];
        fp_t x = p.X, y = p.Y, z = fp_t::one(p.is_inf());
        for (uint32_t d = 0; d < c; d++) {
            const fp_t a = x ^ 2, b = y ^ 2, cc = b ^ 2;
            fp_t dd = x + b;
            dd = (dd ^ 2) - a - cc;
            dd += dd;                  // D = 2((X + B)² − A − C)
            const fp_t e = a + a + a;  // E = 3A
            z *= y;
            z += z;                    // Z3 = 2YZ
            x = (e ^ 2) - dd - dd;     // X3 = E² − 2D
            fp_t c8 = cc + cc;
            c8 += c8;
            c8 += c8;
            y = e * (dd - x) - c8;     // Y3 = E(D − X3) − 8C
        }
        // Z = 0 (the input at infinity, or a point of order 2 doubled) is infinity: reciprocal
        // gives 0 for 0, so the point written is (0, 0).
        const fp_t z_inverse = z.reciprocal();
        const fp_t z_inverse2 = z_inverse ^ 2;
        own_msm::xy_t<fp_t> q;
        q.X = x * z_inverse2;
        q.Y = y * z_inverse2 * z_inverse;
        if (live)
            out[i] = q;
    }
#endif
}

} // namespace h_table

// The key's H table from its H query (uploaded whole): windows 1 … of its width, each from the
// one below, on the device's stream 0.
static void build_h_table(cuzk_gpu_context& ctx, cuzk_gpu_key& key)
{
    const size_t n = key.npoints[CUZK_GPU_QUERY_H];
    if (key.h_table_bits == 0 || n == 0)
        throw std::invalid_argument("the key has no H table to build");
    ctx.gpu.select();
    stream_t& stream = ctx.gpu[0];
    own_msm::xy_t<fp_t>* const table = (own_msm::xy_t<fp_t>*)key.d_points[CUZK_GPU_QUERY_H];
    const uint32_t windows = own_msm::windows_of(key.h_table_bits);
    const uint32_t blocks = (uint32_t)std::min<size_t>((n + 127) / 128, 8 * (size_t)stream.sm_count());
    key.h_table_ready = false;
    for (uint32_t w = 1; w < windows; w++) {
        h_table::next_window<<<blocks, 128, 0, stream>>>(table + w * n, table + (w - 1) * n, n,
                                                          key.h_table_bits);
        CUDA_OK(cudaGetLastError());
    }
    stream.sync();
    key.h_table_ready = true;
}

// The H table of the resident key `src` names, when it has one made for an MSM of all its
// npoints (H's MSM whole, not in parts).
static bool resident_h_table(const cuzk_gpu_points& src, size_t npoints,
                             own_msm::point_table<affine_t::mem_t>& out)
{
    if (!src.key || src.query != CUZK_GPU_QUERY_H)
        return false;
    const cuzk_gpu_key& key = *src.key;
    if (!key.h_table_ready || key.npoints[CUZK_GPU_QUERY_H] != npoints)
        return false;
    out = {(const affine_t::mem_t*)key.d_points[CUZK_GPU_QUERY_H], key.h_table_bits};
    return true;
}
