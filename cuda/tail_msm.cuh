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
    const bool own = own_msm::is_own(implementation);
    stream_t& stream = gpu[0];
    // The tail's points on the device: a dense tail's where they lie (a gathered copy of a
    // whole query would be as large as the query: 12 GB for a 32GiB PoSt's L), else gathered
    // there by index; host points as they are for sppark's (it sends them in batches), copied
    // for cuzk's.
    dev_ptr_t<affine_mem_t> d_copy{!src.key && own ? n : 0};
    dev_ptr_t<uint4> d_gathered{src.key && indices ? n * (point_bytes(src.query) / sizeof(uint4)) : 0};
    const affine_mem_t* d_points = nullptr;
    if (!src.key) {
        if (own) {
            stream.HtoD(d_copy.data(), (const affine_mem_t*)src.host, n);
            d_points = d_copy.data();
        }
    } else if (indices == nullptr) {
        d_points = resident_points<affine_mem_t>(src, n);
    } else {
        const uint32_t words = point_bytes(src.query) / sizeof(uint4);
        // An index past the query would read another allocation's memory on the device.
        const size_t last_index = *std::max_element(indices, indices + n);
        const uint4* resident = (const uint4*)resident_points<affine_mem_t>(src, last_index + 1);
        dev_ptr_t<uint32_t> d_indices{n};
        stream.HtoD(&d_indices[0], indices, n);
        gather_points<<<gpu.sm_count(), 1024, 0, stream>>>(&d_gathered[0], resident, &d_indices[0], n, words);
        CUDA_OK(cudaGetLastError());
        stream.sync();
        d_points = (const affine_mem_t*)&d_gathered[0];
    }
    if (own) {
        dev_ptr_t<fr_t> d_scalars{n};
        stream.HtoD(d_scalars.data(), canonical_scalars, n);
        stream.sync();
        stream_t msm_stream{gpu.id()};
        own_type msm{msm_stream, d_points, d_scalars.data(), n, false, 0,
                     own_msm::with_affine_rounds(implementation)};
        return msm.result();
    }
    abandoned_on_fault<msm_type> msm{nullptr, n, sizeof(affine_t), gpu.id()};
    if (d_points)
        check(msm->invoke(out, dev_ptr_t<affine_t>{(affine_t*)d_points, n}, n, canonical_scalars,
                          false));
    else
        check(msm->invoke(out, (const affine_t*)src.host, n, canonical_scalars, false));
    return out;
}
