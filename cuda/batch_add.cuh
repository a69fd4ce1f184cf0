// Stage batch addition: Σ Pᵢ over the bases whose scalar is 1 (about half of a PoRep
// witness), one mixed addition per base instead of a Pippenger pass.
#pragma once

template __global__
void batch_addition<bucket_t>(bucket_t::mem_t ret[], const affine_t::mem_t points[],
                              uint32_t npoints, const uint32_t bitmap[], bool accumulate,
                              uint32_t sid);
template __global__
void batch_addition<g2_bucket_t>(g2_bucket_t::mem_t ret[], const g2_affine_t::mem_t points[],
                                 uint32_t npoints, const uint32_t bitmap[], bool accumulate,
                                 uint32_t sid);

// For G1 (point_t, bucket_t, affine_t) and G2 (g2_point_t, ...). Resident points are read in
// place; host points are sent through the staging buffers first.
template<class point_t, class bucket_t, class affine_t>
static point_t batch_add_on_device(cuzk_gpu_context& ctx, const cuzk_gpu_points& src,
                                   const uint32_t* bitmap, const cuzk_gpu_staging* staging)
{
    typedef typename affine_t::mem_t affine_mem_t;
    const gpu_t& gpu = ctx.gpu;
    const size_t npoints = src.n;
    point_t sum;
    sum.inf();
    if (npoints == 0)
        return sum;
    if (npoints > UINT32_MAX - 32 * WARP_SZ)
        throw std::invalid_argument("batch addition handles at most 2^32 points per call");
    const int sm_count = gpu.sm_count();
    const uint32_t nbuckets = sm_count * BATCH_ADD_BLOCK_SIZE / WARP_SZ;
    // The kernel reads the bitmap in whole chunks of 32 words: pad it with zeros.
    const size_t words = (npoints + 31) / 32;
    const size_t padded_words = (words + 32 * WARP_SZ - 1) / 32 * 32 + 32 * WARP_SZ;
    std::vector<uint32_t> padded(padded_words, 0);
    std::copy(bitmap, bitmap + words, padded.begin());

    stream_t& stream = gpu[0];
    dev_ptr_t<affine_mem_t> d_streamed{src.key ? 0 : npoints};
    const affine_mem_t* d_points = src.key ? resident_points<affine_mem_t>(src, npoints) : &d_streamed[0];
    if (!src.key)
        staged_htod(ctx, stream, &d_streamed[0], src.host, npoints * sizeof(affine_mem_t), staging);
    dev_ptr_t<uint32_t> d_bitmap{padded_words};
    dev_ptr_t<typename bucket_t::mem_t> d_buckets{nbuckets};
    stream.HtoD(&d_bitmap[0], padded.data(), padded_words);
    stream.launch_coop(batch_addition<bucket_t>, {sm_count, BATCH_ADD_BLOCK_SIZE},
                       &d_buckets[0], d_points, (uint32_t)npoints, (const uint32_t*)&d_bitmap[0],
                       false, 0u);
    std::vector<bucket_t> buckets(nbuckets);
    stream.DtoH(&buckets[0], &d_buckets[0], nbuckets);
    stream.sync();
    sum = sum_up(buckets);
    return sum;
}
