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

// One batch addition over device points on `stream`, in two steps so that several can share
// the device (cuda/split.cuh): the constructor sends the bitmap (a copy from pageable memory
// may wait for the stream's earlier work), launch() queues the kernel, result() waits for it
// and adds the per-warp buckets up on the host. G1 (point_t, bucket_t, affine_t) and G2.
template<class point_t, class bucket_t, class affine_t>
class batch_add_launch {
    typedef typename affine_t::mem_t affine_mem_t;
    typedef typename bucket_t::mem_t bucket_mem_t;

    stream_t& stream;
    const int sm_count;
    const uint32_t nbuckets;
    const size_t npoints;
    // The kernel reads the bitmap in whole chunks of 32 words: padded with zeros.
    std::vector<uint32_t> padded;
    dev_ptr_t<uint32_t> d_bitmap;
    dev_ptr_t<bucket_mem_t> d_buckets;
    const uint32_t* bitmap_on_device;

public:
    // Words of a bitmap of npoints as the kernel reads it.
    static size_t padded_words(size_t npoints)
    {
        if (npoints > UINT32_MAX - 32 * WARP_SZ)
            throw std::invalid_argument("batch addition handles at most 2^32 points per call");
        const size_t words = (npoints + 31) / 32;
        return (words + 32 * WARP_SZ - 1) / 32 * 32 + 32 * WARP_SZ;
    }

    // bitmap: bit i of word i/32 set for the points to add; in host memory, ⌈npoints/32⌉
    // words, or, when `on_device`, in device memory already, padded_words(npoints) words.
    batch_add_launch(const gpu_t& gpu, stream_t& s, size_t npoints, const uint32_t* bitmap,
                     bool on_device = false)
        : stream(s), sm_count(gpu.sm_count()), nbuckets(sm_count * BATCH_ADD_BLOCK_SIZE / WARP_SZ),
          npoints(npoints), padded(on_device ? 0 : padded_words(npoints), 0),
          d_bitmap{padded.size(), s}, d_buckets{nbuckets, s}, bitmap_on_device(bitmap)
    {
        if (on_device)
            return;
        std::copy(bitmap, bitmap + (npoints + 31) / 32, padded.begin());
        stream.HtoD(&d_bitmap[0], padded.data(), padded.size());
        bitmap_on_device = &d_bitmap[0];
    }

    void launch(const affine_mem_t* d_points)
    {
        stream.launch_coop(batch_addition<bucket_t>, {sm_count, BATCH_ADD_BLOCK_SIZE},
                           &d_buckets[0], d_points, (uint32_t)npoints,
                           bitmap_on_device, false, 0u);
    }

    point_t result()
    {
        std::vector<bucket_t> buckets(nbuckets);
        stream.DtoH(&buckets[0], &d_buckets[0], nbuckets);
        stream.sync();
        point_t sum;
        sum = sum_up(buckets);
        return sum;
    }
};

// Resident points are read in place; host points are sent through the staging buffers first.
template<class point_t, class bucket_t, class affine_t>
static point_t batch_add_on_device(cuzk_gpu_context& ctx, const cuzk_gpu_points& src,
                                   const uint32_t* bitmap, const cuzk_gpu_staging* staging)
{
    typedef typename affine_t::mem_t affine_mem_t;
    const size_t npoints = src.n;
    if (npoints == 0) {
        point_t sum;
        sum.inf();
        return sum;
    }
    stream_t& stream = ctx.gpu[0];
    batch_add_launch<point_t, bucket_t, affine_t> batch{ctx.gpu, stream, npoints, bitmap};
    dev_ptr_t<affine_mem_t> d_streamed{src.key ? 0 : npoints};
    const affine_mem_t* d_points = src.key ? resident_points<affine_mem_t>(src, npoints) : &d_streamed[0];
    if (!src.key)
        staged_htod(ctx, stream, &d_streamed[0], src.host, npoints * sizeof(affine_mem_t), staging);
    batch.launch(d_points);
    return batch.result();
}
