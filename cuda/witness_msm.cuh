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

// The device address of the n scalars `s` names: z's values in place, or the selected ones
// written to `selected` on `stream` (by the resident selection, else by bitmap and offsets
// checked and sent through the staging buffers: cuda/selection.cuh).
static const fr_t* witness_scalars(cuzk_gpu_context& ctx, const fr_t* z, size_t n,
                                   const cuzk_gpu_witness_scalars& s, stream_t& stream,
                                   fr_t* selected, const cuzk_gpu_staging* staging)
{
    const cuzk_gpu_selection* resident = resident_selection(ctx, s, n);
    if (resident == nullptr && s.selected == nullptr) {
        if (s.first > s.z_len || n > s.z_len - s.first)
            throw std::invalid_argument("the MSM's scalars lie past the witness");
        return z + s.first;
    }
    if (resident == nullptr)
        check_selection(s, n);
    const size_t words = resident ? 0 : (s.z_len + 31) / 32;
    dev_ptr_t<uint32_t> sent_bitmap{words, stream};
    dev_ptr_t<uint32_t> sent_offsets{words, stream};
    staged_htod(ctx, stream, sent_bitmap.data(), s.selected, words * sizeof(uint32_t), staging);
    staged_htod(ctx, stream, sent_offsets.data(), s.selected_offsets, words * sizeof(uint32_t),
                staging);
    const uint32_t* bitmap = resident ? resident->bitmap : sent_bitmap.data();
    const uint32_t* offsets = resident ? resident->offsets : sent_offsets.data();
    select_values<<<4 * ctx.gpu.sm_count(), 1024, 0, stream>>>(selected, z, bitmap, offsets,
                                                                s.z_len);
    CUDA_OK(cudaGetLastError());
    return selected;
}

// The device address of p.n points on `stream`: resident in place, else copied from the host
// into `copy`.
template<class affine_t>
static const typename affine_t::mem_t* device_points(cuzk_gpu_context& ctx,
                                                     const cuzk_gpu_points& p, stream_t& stream,
                                                     dev_ptr_t<typename affine_t::mem_t>& copy,
                                                     const cuzk_gpu_staging* staging)
{
    typedef typename affine_t::mem_t affine_mem_t;
    if (p.key)
        return resident_points<affine_mem_t>(p, p.n);
    staged_htod(ctx, stream, copy.data(), p.host, p.n * sizeof(affine_mem_t), staging);
    return copy.data();
}

// For G1 (g1_msm_t, own_msm::g1_msm) and G2 (g2_msm_t, own_msm::g2_msm): Σ sᵢ·Pᵢ over the
// query's first points.n points, by sppark's MSM or cuzk's (implementation, CUZK_GPU_MSM_*).
template<class msm_type, class own_type, class point_t, class affine_t>
static point_t witness_msm_on_device(cuzk_gpu_context& ctx, uint32_t set,
                                     const cuzk_gpu_points& points,
                                     const cuzk_gpu_witness_scalars& s, uint32_t implementation,
                                     const cuzk_gpu_staging* staging)
{
    const size_t n = points.n;
    point_t out;
    out.inf();
    own_msm::check_implementation(implementation);
    if (n == 0)
        return out;
    const fr_t* z = ctx.uploaded_witness(s.z_len, set);
    const gpu_t& gpu = ctx.gpu;
    stream_t& stream = gpu[0];
    // The selected values, when the query takes a selection of z: in the set's NTT buffers,
    // free once H's MSM has read them (3 × the domain: room for every value of z in any
    // circuit of ours), else in memory of their own, freed after the MSM.
    fr_t* spare = has_selection(s) ? ctx.ntt_scratch(n, set) : nullptr;
    dev_ptr_t<fr_t> own{has_selection(s) && !spare ? n : 0};
    const fr_t* scalars = witness_scalars(ctx, z, n, s, stream, spare ? spare : own.data(), staging);
    if (own_msm::is_own(implementation)) {
        dev_ptr_t<typename affine_t::mem_t> copy{points.key ? 0 : n, stream};
        const auto* d_points = device_points<affine_t>(ctx, points, stream, copy, staging);
        own_type msm{stream, d_points, scalars, n, true, 0, own_msm::with_affine_rounds(implementation)};
        return msm.result();
    }
    stream.sync();
    abandoned_on_fault<msm_type> msm{nullptr, n, sizeof(affine_t), gpu.id()};
    const dev_ptr_t<scalar_t> device_scalars{const_cast<fr_t*>(scalars), n};
    if (points.key)
        check(msm->invoke(out, resident_msm_points<affine_t>(points, n), n, device_scalars, true));
    else
        check(msm->invoke(out, (const affine_t*)points.host, n, device_scalars, true));
    return out;
}

// H, L, A, B_G1 and B_G2 at the same time by cuzk's MSM (cuda/msm.cuh), each on a stream of
// its own: H's scalars are the coefficients the quotient stage left in the set's NTT buffers,
// the others' the witness's values (A's and B's selected into memory of their own: the NTT
// buffers are being read). B_G1 and B_G2 take the same scalars (B's), selected once. times[q]
// gets each MSM's own device time, times[5] 0 (no batch addition: cuda/split.cuh's layout) and
// times[6] the wall time of them all, selections included.
static void witness_msms_at_once(cuzk_gpu_context& ctx, uint32_t set, uint32_t lg_domain,
                                 const cuzk_gpu_points points[5],
                                 const cuzk_gpu_witness_scalars scalars[3],
                                 const cuzk_gpu_staging* staging, point_t g1_out[4],
                                 g2_point_t& g2_out, uint64_t times[7])
{
    const auto start = std::chrono::steady_clock::now();
    for (int q = 0; q < 5; q++)
        if (points[q].n == 0 || points[q].n > own_msm::MAX_POINTS)
            throw std::invalid_argument("cuzk's MSM takes 1 to 2^30 points per query");
    if (lg_domain >= 32 || points[0].n != ((size_t)1 << lg_domain) - 1)
        throw std::invalid_argument("the H query does not have a point per coefficient but one");
    if (points[4].n != points[3].n)
        throw std::invalid_argument("B_G1 and B_G2 take B's scalars: as many points each");
    if (scalars[0].z_len != scalars[1].z_len || scalars[1].z_len != scalars[2].z_len)
        throw std::invalid_argument("the queries' scalars are of witnesses of different lengths");
    const fr_t* z = ctx.uploaded_witness(scalars[0].z_len, set);
    const fr_t* h_scalars = quotient_stage::coefficients(ctx, set, lg_domain, 0, points[0].n);
    const gpu_t& gpu = ctx.gpu;
    stream_t streams[5] = {gpu.id(), gpu.id(), gpu.id(), gpu.id(), gpu.id()};

    // Every G1 query's points on the device (a streamed key's copied), each on its stream.
    dev_ptr_t<affine_t::mem_t> copies[4] = {{points[0].key ? 0 : points[0].n, streams[0]},
                                            {points[1].key ? 0 : points[1].n, streams[1]},
                                            {points[2].key ? 0 : points[2].n, streams[2]},
                                            {points[3].key ? 0 : points[3].n, streams[3]}};
    dev_ptr_t<g2_affine_t::mem_t> g2_copy{points[4].key ? 0 : points[4].n, streams[4]};
    const affine_t::mem_t* g1_points[4];
    for (int q = 0; q < 4; q++)
        g1_points[q] = device_points<affine_t>(ctx, points[q], streams[q], copies[q], staging);
    const auto* g2_points = device_points<g2_affine_t>(ctx, points[4], streams[4], g2_copy, staging);

    // L's, A's and B's scalars (queries 1, 2, 3), A's and B's selected into their own memory.
    const fr_t* g1_scalars[4] = {h_scalars};
    dev_ptr_t<fr_t> selected[3] = {{has_selection(scalars[0]) ? points[1].n : 0, streams[1]},
                                   {has_selection(scalars[1]) ? points[2].n : 0, streams[2]},
                                   {has_selection(scalars[2]) ? points[3].n : 0, streams[3]}};
    for (int q = 1; q < 4; q++)
        g1_scalars[q] = witness_scalars(ctx, z, points[q].n, scalars[q - 1], streams[q],
                                        selected[q - 1].data(), staging);
    // B_G2 reads B's selection on another stream.
    cudaEvent_t b_selected;
    CUDA_OK(cudaEventCreateWithFlags(&b_selected, cudaEventDisableTiming));
    struct destroy_event {
        cudaEvent_t e;
        ~destroy_event() { (void)cudaEventDestroy(e); }
    } destroy{b_selected};
    CUDA_OK(cudaEventRecord(b_selected, streams[3]));
    CUDA_OK(cudaStreamWaitEvent(streams[4], b_selected, 0));

    // H's MSM over its table when the resident key has one (cuda/h_table.cuh).
    own_msm::point_table<affine_t::mem_t> h_table;
    const own_msm::point_table<affine_t::mem_t>* tables[4] = {
        resident_h_table(points[0], points[0].n, h_table) ? &h_table : nullptr};
    std::unique_ptr<timed_events> marks[5];
    std::unique_ptr<own_msm::g1_msm> g1[4];
    for (int q = 0; q < 4; q++) {
        marks[q].reset(new timed_events(streams[q]));
        g1[q].reset(new own_msm::g1_msm(streams[q], g1_points[q], g1_scalars[q], points[q].n, true, 0,
                                        false, nullptr, 0, nullptr, tables[q]));
        marks[q]->mark(streams[q]);
    }
    marks[4].reset(new timed_events(streams[4]));
    own_msm::g2_msm b_g2{streams[4], g2_points, g1_scalars[3], points[4].n, true};
    marks[4]->mark(streams[4]);
    g2_out = b_g2.result();
    times[4] = marks[4]->ns(0, 1);
    for (int q = 0; q < 4; q++) {
        g1_out[q] = g1[q]->result();
        times[q] = marks[q]->ns(0, 1);
    }
    times[5] = 0;
    times[6] = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - start).count();
}
