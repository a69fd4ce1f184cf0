// Stage tail MSM: Pippenger over the few full-width scalars left after the 0/1 split, by
// cuzk's MSM (cuda/msm.cuh) up to the sizes where it is measured faster, else by sppark's, each
// call with its own msm_t, whose window width sppark derives from that MSM's size (the tails
// of L, A and B_G1 differ by an order of magnitude). With a resident key the tail's
// points are gathered on the device from the query, so only the indices cross PCIe; a dense
// tail (every point of the query, as in a PoSt, whose witness is almost all full-width) is
// read in place.
#pragma once

// out[i] = points[indices[i]], a point being `words` 16-byte words (G1 and G2 alike).
__global__
void gather_points(uint4* out, const uint4* points, const uint32_t* indices, size_t n,
                   uint32_t words)
{
    const size_t total = n * words;
    for (size_t t = threadIdx.x + (size_t)blockIdx.x * blockDim.x; t < total;
         t += (size_t)blockDim.x * gridDim.x)
        out[t] = points[(size_t)indices[t / words] * words + t % words];
}

// A tail's n points on the device from a resident query: gathered into memory of their own by
// `indices` (sent now, or already on the device), or, when indices is NULL (dense: scalar i
// belongs to point i), the query's first n read in place. In two steps, so that several tails
// can share the device (cuda/split.cuh): the constructor sends the indices (a copy from
// pageable memory may wait for the stream's earlier work), gather() queues the gathering and
// returns the points.
template<class affine_t>
class resident_tail_points {
    typedef typename affine_t::mem_t affine_mem_t;

    stream_t& stream;
    const cuzk_gpu_points& src;
    const size_t n;
    const uint32_t words;
    // Past the highest index the device would read another allocation's memory: host indices
    // are checked against the query; device indices (witness_classes.cuh writes them) are
    // each below the query's points, src.n.
    const size_t points_read;
    dev_ptr_t<uint32_t> d_indices;
    const uint32_t* indices_on_device;
    dev_ptr_t<uint4> d_gathered;

public:
    resident_tail_points(stream_t& s, const cuzk_gpu_points& src, const uint32_t* indices, size_t n,
                         bool on_device = false)
        : stream(s), src(src), n(n), words(point_bytes(src.query) / sizeof(uint4)),
          points_read(!indices || !n ? n
                      : on_device    ? src.n
                                     : *std::max_element(indices, indices + n) + (size_t)1),
          d_indices{indices && !on_device ? n : 0, s}, indices_on_device(indices),
          d_gathered{indices ? n * words : 0, s}
    {
        if (!src.key)
            throw std::invalid_argument("a tail's points are gathered on the device from a resident key only");
        if (indices && n && !on_device) {
            stream.HtoD(&d_indices[0], indices, n);
            indices_on_device = &d_indices[0];
        }
    }

    const affine_mem_t* gather(const gpu_t& gpu)
    {
        const affine_mem_t* points = resident_points<affine_mem_t>(src, points_read);
        if (!indices_on_device || n == 0)
            return points;
        gather_points<<<gpu.sm_count(), 1024, 0, stream>>>(&d_gathered[0], (const uint4*)points,
                                                           indices_on_device, n, words);
        CUDA_OK(cudaGetLastError());
        return (const affine_mem_t*)&d_gathered[0];
    }
};

// A tail of n entries already on the device: point indices (each below the query's points)
// and their scalars in Montgomery form (witness_classes.cuh).
struct device_tail {
    const uint32_t* indices;
    const fr_t* mont_scalars;
    size_t n;
};

// A tail MSM by cuzk's MSM (own_type: own_msm::g1_msm or g2_msm) over a resident key's points
// on `stream`, in the same two steps: the constructor sends the indices and the canonical
// scalars (or takes a device_tail), launch() queues the gathering and the MSM, result() waits
// for the sum.
template<class own_type, class point_t, class affine_t>
class resident_tail_msm {
    stream_t& stream;
    const size_t n;
    resident_tail_points<affine_t> points;
    dev_ptr_t<fr_t> d_scalars;
    const fr_t* scalars_on_device;
    const bool mont;
    std::unique_ptr<own_type> msm;

public:
    resident_tail_msm(stream_t& s, const cuzk_gpu_points& src, const uint32_t* indices,
                      const scalar_t* canonical_scalars, size_t n)
        : stream(s), n(n), points(s, src, indices, n), d_scalars{n, s},
          scalars_on_device(d_scalars.data()), mont(false)
    {
        if (n)
            stream.HtoD(d_scalars.data(), canonical_scalars, n);
    }

    resident_tail_msm(stream_t& s, const cuzk_gpu_points& src, const device_tail& tail)
        : stream(s), n(tail.n), points(s, src, tail.indices, tail.n, true), d_scalars{0, s},
          scalars_on_device(tail.mont_scalars), mont(true)
    {}

    void launch(const gpu_t& gpu, uint32_t implementation)
    {
        if (n)
            msm.reset(new own_type{stream, points.gather(gpu), scalars_on_device, n, mont, 0,
                                   own_msm::with_affine_rounds(implementation)});
    }

    point_t result()
    {
        if (msm)
            return msm->result();
        point_t out;
        out.inf();
        return out;
    }
};

// For G1 (g1_msm_t, own_msm::g1_msm) and G2 (g2_msm_t, own_msm::g2_msm), by sppark's MSM or
// cuzk's (implementation, CUZK_GPU_MSM_*).
template<class msm_type, class own_type, class point_t, class affine_t>
static point_t tail_msm_on_device(cuzk_gpu_context& ctx, const cuzk_gpu_points& src,
                                  const uint32_t* indices, const scalar_t* canonical_scalars,
                                  size_t n, uint32_t implementation)
{
    typedef typename affine_t::mem_t affine_mem_t;
    const gpu_t& gpu = ctx.gpu;
    point_t out;
    out.inf();
    own_msm::check_implementation(implementation);
    if (n == 0)
        return out;
    if (own_msm::is_own(implementation)) {
        stream_t stream{gpu.id()};
        if (src.key) {
            resident_tail_msm<own_type, point_t, affine_t> tail{stream, src, indices,
                                                                canonical_scalars, n};
            tail.launch(gpu, implementation);
            return tail.result();
        }
        dev_ptr_t<affine_mem_t> d_copy{n, stream};
        dev_ptr_t<fr_t> d_scalars{n, stream};
        stream.HtoD(d_copy.data(), src.host, n);
        stream.HtoD(d_scalars.data(), canonical_scalars, n);
        own_type msm{stream, d_copy.data(), d_scalars.data(), n, false, 0,
                     own_msm::with_affine_rounds(implementation)};
        return msm.result();
    }
    abandoned_on_fault<msm_type> msm{nullptr, n, sizeof(affine_t), gpu.id()};
    if (!src.key) {
        // sppark's sends host points in batches of its own.
        check(msm->invoke(out, (const affine_t*)src.host, n, canonical_scalars, false));
        return out;
    }
    // The tail's points where they lie, or gathered (a gathered copy of a whole query would be
    // as large as the query: 12 GB for a 32GiB PoSt's L).
    stream_t& stream = gpu[0];
    resident_tail_points<affine_t> points{stream, src, indices, n};
    const affine_mem_t* d_points = points.gather(gpu);
    stream.sync();
    check(msm->invoke(out, dev_ptr_t<affine_t>{(affine_t*)d_points, n}, n, canonical_scalars,
                      false));
    return out;
}
