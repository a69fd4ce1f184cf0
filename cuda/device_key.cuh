// A proving key's points resident in device memory: uploaded once per key and read in place
// by every proof's MSMs, instead of crossing PCIe again per proof (1.1 GB per 2KiB PoRep
// proof, 47 GB per 32GiB partition).
#pragma once

static size_t point_bytes(uint32_t query)
{
    return query == CUZK_GPU_QUERY_B_G2 ? CUZK_GPU_G2_AFFINE_BYTES : CUZK_GPU_G1_AFFINE_BYTES;
}

struct cuzk_gpu_key {
    const gpu_t& gpu;
    // False once the context it was made in is reset: its device memory went with it.
    bool owns_device_memory = true;
    void* d_points[CUZK_GPU_QUERIES] = {};
    size_t npoints[CUZK_GPU_QUERIES] = {};
    // The digit width of the H table (cuda/h_table.cuh) that the H query's memory has room
    // for after its points, 0 for none; ready once built from the points uploaded.
    uint32_t h_table_bits = 0;
    bool h_table_ready = false;

    explicit cuzk_gpu_key(const gpu_t& device) : gpu(device) {}
    cuzk_gpu_key(const cuzk_gpu_key&) = delete;
    cuzk_gpu_key& operator=(const cuzk_gpu_key&) = delete;
    ~cuzk_gpu_key()
    {
        if (!owns_device_memory)
            return;
        gpu.select();
        for (void* p : d_points)
            if (p)
                (void)cudaFree(p);
    }
};

// All of a key's device memory at once, so that a key that does not fit fails before any of
// it is copied: the H query with room for `h_table_windows` copies of its points (its table,
// cuda/h_table.cuh, of `h_table_bits`-bit digits; 0 for none).
static cuzk_gpu_key* alloc_key(cuzk_gpu_context& ctx, const size_t npoints[CUZK_GPU_QUERIES],
                               uint32_t h_table_bits, size_t h_table_windows)
{
    std::unique_ptr<cuzk_gpu_key> key{new cuzk_gpu_key(ctx.gpu)};
    ctx.gpu.select();
    for (uint32_t q = 0; q < CUZK_GPU_QUERIES; q++) {
        if (npoints[q] == 0)
            continue;
        const size_t copies = q == CUZK_GPU_QUERY_H && h_table_bits ? h_table_windows : 1;
        CUDA_OK(cudaMalloc(&key->d_points[q], copies * npoints[q] * point_bytes(q)));
        key->npoints[q] = npoints[q];
    }
    key->h_table_bits = npoints[CUZK_GPU_QUERY_H] ? h_table_bits : 0;
    return key.release();
}

// One part of a query's points: a key is copied in parts, so that its holder can let other
// calls prove between them.
static void upload_key_points(cuzk_gpu_context& ctx, cuzk_gpu_key& key, uint32_t query,
                              size_t first, size_t count, const void* host,
                              const cuzk_gpu_staging* staging)
{
    if (query >= CUZK_GPU_QUERIES || first > key.npoints[query] ||
        count > key.npoints[query] - first)
        throw std::invalid_argument("the key part lies outside the key's points");
    ctx.gpu.select();
    if (query == CUZK_GPU_QUERY_H)
        key.h_table_ready = false;
    stream_t& stream = ctx.gpu[0];
    const size_t bytes = point_bytes(query);
    staged_htod(ctx, stream, (char*)key.d_points[query] + first * bytes, host, count * bytes,
                staging);
    stream.sync();
}

// The device address of an MSM's points when they are resident, checked against the query.
template<class affine_mem_t>
static affine_mem_t* resident_points(const cuzk_gpu_points& src, size_t npoints)
{
    const cuzk_gpu_key& key = *src.key;
    if (src.query >= CUZK_GPU_QUERIES || key.npoints[src.query] < npoints)
        throw std::invalid_argument("the resident key has fewer points than the MSM needs");
    return (affine_mem_t*)key.d_points[src.query];
}

// Resident points as sppark's MSM takes device points: a non-owning dev_ptr_t of the host
// affine type. (With the device type, affine_t::mem_t, msm_t::invoke would recurse into
// itself instead of reaching its device-pointer path.)
template<class affine_t>
static dev_ptr_t<affine_t> resident_msm_points(const cuzk_gpu_points& src, size_t npoints)
{
    return dev_ptr_t<affine_t>{resident_points<affine_t>(src, npoints), npoints};
}
