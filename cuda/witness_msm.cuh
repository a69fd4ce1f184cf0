// Stage witness MSM: the L, A, B_G1 and B_G2 MSMs of a circuit whose witness is mostly
// full-width (a PoSt's), their scalars read from the device copy of z that the R1CS stage
// left in the context's witness buffer (Montgomery form; sppark's digit kernel converts).
// L's scalars are z's aux values in place; A's and B's are the values of the variables with a
// point in the query, selected into one scratch buffer on the device. Only the selections'
// bitmaps cross PCIe: no canonical copy of a query's scalars is made on the host (for a 32GiB
// WindowPoSt partition that was 3 × 4 GB of host writes, 2.3–3.3 s).
#pragma once

// out[rank(v)] = z[v] for every v < n whose bit is set, rank(v) being the set bits before v.
__launch_bounds__(1024) __global__
void select_values(fr_t* out, const fr_t* z, const uint32_t* bitmap, const uint32_t* offsets,
                   size_t n)
{
    for (size_t v = threadIdx.x + (size_t)blockIdx.x * blockDim.x; v < n;
         v += (size_t)blockDim.x * gridDim.x) {
        const uint32_t word = bitmap[v / 32];
        const uint32_t bit = 1u << (v % 32);
        if (word & bit)
            out[offsets[v / 32] + __popc(word & (bit - 1))] = z[v];
    }
}

// The selection's bitmap and offsets say exactly `n` values of a z of `z_len`: the offsets
// ascend by each word's bits, and no bit lies past z (checked on the host before the device
// indexes scratch and z by them).
static void check_selection(const cuzk_gpu_witness_scalars& s, size_t n)
{
    const size_t words = (s.z_len + 31) / 32;
    size_t selected = 0;
    for (size_t w = 0; w < words; w++) {
        if (s.selected_offsets[w] != selected)
            throw std::invalid_argument("the selection's offsets do not count its bits");
        selected += __builtin_popcount(s.selected[w]);
    }
    const uint32_t tail_bits = s.z_len % 32;
    if (tail_bits != 0 && (s.selected[words - 1] >> tail_bits) != 0)
        throw std::invalid_argument("the selection has bits past the witness");
    if (selected != n)
        throw std::invalid_argument("the selection does not have one value per point of the query");
}

// For G1 (g1_msm_t) and G2 (g2_msm_t): Σ sᵢ·Pᵢ over the query's first points.n points.
template<class msm_type, class point_t, class affine_t>
static point_t witness_msm_on_device(cuzk_gpu_context& ctx, uint32_t set,
                                     const cuzk_gpu_points& points,
                                     const cuzk_gpu_witness_scalars& s,
                                     const cuzk_gpu_staging* staging)
{
    const size_t n = points.n;
    point_t out;
    out.inf();
    if (n == 0)
        return out;
    const fr_t* z = ctx.uploaded_witness(s.z_len, set);
    const gpu_t& gpu = ctx.gpu;
    stream_t& stream = gpu[0];
    // The selected values, when the query takes a selection of z: in the set's NTT buffers,
    // free once H's MSM has read them (3 × the domain: room for every value of z in any
    // circuit of ours), else in memory of their own, freed after the MSM.
    fr_t* spare = s.selected ? ctx.ntt_scratch(n, set) : nullptr;
    dev_ptr_t<fr_t> own{s.selected && !spare ? n : 0};
    fr_t* selected = spare ? spare : own.data();
    const fr_t* scalars;
    if (s.selected == nullptr) {
        if (s.first > s.z_len || n > s.z_len - s.first)
            throw std::invalid_argument("the MSM's scalars lie past the witness");
        scalars = z + s.first;
    } else {
        check_selection(s, n);
        const size_t words = (s.z_len + 31) / 32;
        dev_ptr_t<uint32_t> bitmap{words, stream};
        dev_ptr_t<uint32_t> offsets{words, stream};
        staged_htod(ctx, stream, bitmap.data(), s.selected, words * sizeof(uint32_t), staging);
        staged_htod(ctx, stream, offsets.data(), s.selected_offsets, words * sizeof(uint32_t),
                    staging);
        select_values<<<4 * gpu.sm_count(), 1024, 0, stream>>>(selected, z, bitmap.data(),
                                                              offsets.data(), s.z_len);
        CUDA_OK(cudaGetLastError());
        stream.sync();
        scalars = selected;
    }
    abandoned_on_fault<msm_type> msm{nullptr, n, sizeof(affine_t), gpu.id()};
    const dev_ptr_t<scalar_t> device_scalars{const_cast<fr_t*>(scalars), n};
    if (points.key)
        check(msm->invoke(out, resident_msm_points<affine_t>(points, n), n, device_scalars, true));
    else
        check(msm->invoke(out, (const affine_t*)points.host, n, device_scalars, true));
    return out;
}
