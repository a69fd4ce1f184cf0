// A proving key's points decoded on the device: copied as bellperson's params file holds them
// (uncompressed, big-endian coordinates, the zcash flag bits in the first byte) and turned in
// place into the layout the MSMs read (blst's affine points: little-endian limbs in Montgomery
// form). The host only reads the file: decoding a 32GiB PoRep key on 16 cores took 15.9 s with
// the file in the page cache, 0.8 × the 21.4 s of reading it from disk (docs/PERFORMANCE.md).
//
// A point is accepted exactly as the host's reader (src/groth16/params.rs) accepts it: no flag
// bit set (so neither compressed nor the point at infinity), every coordinate below p, on its
// curve (y² = x³ + 4 on G1, y² = x³ + 4(1 + i) on G2), and on G1 x ≠ 0 (blst's deserialize
// refuses (0, ±2) as outside the group; not so on G2). The subgroup is not checked, as the
// host's unchecked read does not.
#pragma once

namespace key_decode {

#ifdef __CUDA_ARCH__ // the host's fp_t is blst's, whose limbs are not ours to set

// The words of one 48-byte big-endian coordinate, loaded as little-endian 32-bit words, as
// the field element's limbs (least significant first) before the conversion.
__device__ inline fp_t from_big_endian(const uint32_t raw[12], bool& below_p)
{
    fp_t x;
    for (int i = 0; i < 12; i++)
        x[i] = __byte_perm(raw[11 - i], 0, 0x0123);
    // x < p exactly when x − p borrows.
    uint32_t borrow = 0;
    for (int i = 0; i < 12; i++) {
        const uint64_t d = (uint64_t)x[i] - device::BLS12_381_P[i] - borrow;
        borrow = (uint32_t)(d >> 63);
    }
    below_p = borrow != 0;
    x.to();
    return x;
}

__device__ inline void store(uint32_t* out, const fp_t& x)
{
    for (int i = 0; i < 12; i++)
        out[i] = x[i];
}

// 4 in Montgomery form.
__device__ inline fp_t four()
{
    fp_t two = fp_t::one() + fp_t::one();
    return two + two;
}

// G1: x then y, 12 words each; the flag bits in the first byte of x.
__device__ inline bool decode_g1(uint32_t* point)
{
    uint32_t raw[24];
    for (int w = 0; w < 24; w++)
        raw[w] = point[w];
    bool x_ok, y_ok;
    const fp_t x = from_big_endian(raw, x_ok);
    const fp_t y = from_big_endian(raw + 12, y_ok);
    const fp_t rhs = sqr(x) * x + four();
    const bool on_curve = (sqr(y) - rhs).is_zero();
    store(point, x);
    store(point + 12, y);
    return (raw[0] & 0xe0) == 0 && x_ok && y_ok && on_curve && !x.is_zero();
}

// G2: the file holds x.c1, x.c0, y.c1, y.c0 (the flag bits in the first byte of x.c1); blst's
// layout is x.c0, x.c1, y.c0, y.c1. Fp2 = Fp[i]/(i² + 1), computed here in one thread.
__device__ inline bool decode_g2(uint32_t* point)
{
    uint32_t raw[48];
    for (int w = 0; w < 48; w++)
        raw[w] = point[w];
    bool ok[4];
    const fp_t x1 = from_big_endian(raw, ok[0]);
    const fp_t x0 = from_big_endian(raw + 12, ok[1]);
    const fp_t y1 = from_big_endian(raw + 24, ok[2]);
    const fp_t y0 = from_big_endian(raw + 36, ok[3]);
    // x² = (x0² − x1²) + 2·x0·x1·i; x³ = x²·x; y² likewise.
    const fp_t xx0 = sqr(x0) - sqr(x1);
    const fp_t xx1 = (x0 * x1) + (x0 * x1);
    const fp_t xxx0 = xx0 * x0 - xx1 * x1;
    const fp_t xxx1 = xx0 * x1 + xx1 * x0;
    const fp_t yy0 = sqr(y0) - sqr(y1);
    const fp_t yy1 = (y0 * y1) + (y0 * y1);
    const bool on_curve = (yy0 - (xxx0 + four())).is_zero() && (yy1 - (xxx1 + four())).is_zero();
    store(point, x0);
    store(point + 12, x1);
    store(point + 24, y0);
    store(point + 36, y1);
    return (raw[0] & 0xe0) == 0 && ok[0] && ok[1] && ok[2] && ok[3] && on_curve;
}

#endif

// Points [0, count) at `points` decoded in place; *first_bad lowered to the index of every
// point refused.
template<bool G2>
__global__ void decode_points(uint32_t* points, size_t count, unsigned long long* first_bad)
{
#ifdef __CUDA_ARCH__
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= count)
        return;
    const bool ok = G2 ? decode_g2(points + i * 48) : decode_g1(points + i * 24);
    if (!ok)
        atomicMin(first_bad, (unsigned long long)i);
#endif
}

} // namespace key_decode

// `count` points of query `query` as the params file holds them (`file_bytes`) copied into the
// key's points first..first+count (as upload_key_points copies decoded ones) and decoded there;
// the index in the part of the first point refused, or SIZE_MAX.
static size_t upload_file_points(cuzk_gpu_context& ctx, cuzk_gpu_key& key, uint32_t query,
                                 size_t first, size_t count, const void* file_bytes,
                                 const cuzk_gpu_staging* staging)
{
    upload_key_points(ctx, key, query, first, count, file_bytes, staging);
    if (count == 0)
        return SIZE_MAX;
    stream_t& stream = ctx.gpu[0];
    uint32_t* at = (uint32_t*)((char*)key.d_points[query] + first * point_bytes(query));
    dev_ptr_t<unsigned long long> d_first_bad{1, stream};
    CUDA_OK(cudaMemsetAsync(&d_first_bad[0], 0xff, sizeof(unsigned long long), stream));
    constexpr uint32_t THREADS = 128;
    const uint32_t blocks = (uint32_t)((count + THREADS - 1) / THREADS);
    if (query == CUZK_GPU_QUERY_B_G2)
        key_decode::decode_points<true><<<blocks, THREADS, 0, stream>>>(at, count, &d_first_bad[0]);
    else
        key_decode::decode_points<false><<<blocks, THREADS, 0, stream>>>(at, count, &d_first_bad[0]);
    CUDA_OK(cudaGetLastError());
    unsigned long long first_bad = 0;
    CUDA_OK(cudaMemcpyAsync(&first_bad, &d_first_bad[0], sizeof(first_bad), cudaMemcpyDeviceToHost,
                            stream));
    stream.sync();
    return first_bad == ~0ull ? SIZE_MAX : (size_t)first_bad;
}
