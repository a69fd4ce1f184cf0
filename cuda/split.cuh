// Stage split MSMs at once: a small proof's witness MSMs split by the 0/1 classes (L, A, B_G1
// and B_G2: batch addition of the 1-scalars' points, cuzk's MSM over the full-width tail) and
// its H MSM at the same time, each query on a stream of its own, over a resident key.
// At 2KiB the tails (≈ 43k points each) and batch additions are bound by latency, not
// arithmetic: one after another they took 26 of the GPU phases' 81 ms (docs/PERFORMANCE.md).
// They need only the witness's classes, not H's coefficients, so they are started before the
// quotient stage (cuzk_gpu_split_witness, started by cuzk_gpu_split_witness_start) and fill
// the SMs its memory-bound transforms leave idle; H's MSM follows the quotient stage
// (split_msms_at_once), and the call waits for them all.
#pragma once

// The witness's four split MSMs in flight on streams of their own: L, A, B_G1 (G1) and B_G2.
// The constructor sends the bitmaps, indices and scalars (copies from pageable memory may
// wait for their stream's earlier work, so every copy comes before every kernel) and queues
// every kernel; collect() waits for the sums. Dropped without collect() (a failed call), its
// device memory is freed in stream order, after the kernels that read it.
struct cuzk_gpu_split_witness {
    typedef batch_add_launch<point_t, bucket_t, affine_t> g1_batch;
    typedef batch_add_launch<g2_point_t, g2_bucket_t, g2_affine_t> g2_batch;
    typedef resident_tail_msm<own_msm::g1_msm, point_t, affine_t> g1_tail;
    typedef resident_tail_msm<own_msm::g2_msm, g2_point_t, g2_affine_t> g2_tail;

    // First: the members below free their memory on them.
    stream_t streams[4];
    // Per query: the batch addition of its 1-scalars' points (none without any) and its tail.
    std::unique_ptr<g1_batch> g1_ones[3];
    std::unique_ptr<g1_tail> g1_tails[3];
    std::unique_ptr<g2_batch> g2_ones;
    std::unique_ptr<g2_tail> b_g2_tail;
    // Marks per query: start, batch addition done, tail done.
    std::unique_ptr<timed_events> marks[4];

    // points: L, A, B_G1, B_G2, each a resident key's; queries: their splits.
    cuzk_gpu_split_witness(const gpu_t& gpu, const cuzk_gpu_points points[4],
                           const cuzk_gpu_split_query queries[4], uint32_t implementation)
        : streams{gpu.id(), gpu.id(), gpu.id(), gpu.id()}
    {
        own_msm::check_implementation(implementation);
        if (!own_msm::is_own(implementation))
            throw std::invalid_argument("the MSMs run at once by cuzk's MSM only");
        for (int q = 0; q < 4; q++) {
            if (!points[q].key)
                throw std::invalid_argument("the MSMs run at once over a resident key only");
            if (points[q].n > own_msm::MAX_POINTS)
                throw std::invalid_argument("cuzk's MSM takes at most 2^30 points per query");
            if (queries[q].tail_n > points[q].n || (queries[q].tail_n && !queries[q].tail_scalars))
                throw std::invalid_argument("a tail has more scalars than its query has points");
        }
        for (int q = 0; q < 3; q++) {
            const cuzk_gpu_split_query& s = queries[q];
            if (s.ones_bitmap && points[q].n)
                g1_ones[q].reset(new g1_batch{gpu, streams[q], points[q].n, s.ones_bitmap});
            g1_tails[q].reset(new g1_tail{streams[q], points[q], s.tail_indices,
                                          (const scalar_t*)s.tail_scalars, s.tail_n});
        }
        if (queries[3].ones_bitmap && points[3].n)
            g2_ones.reset(new g2_batch{gpu, streams[3], points[3].n, queries[3].ones_bitmap});
        b_g2_tail.reset(new g2_tail{streams[3], points[3], queries[3].tail_indices,
                                    (const scalar_t*)queries[3].tail_scalars, queries[3].tail_n});

        for (int q = 0; q < 3; q++) {
            stream_t& s = streams[q];
            marks[q].reset(new timed_events(s));
            if (g1_ones[q])
                g1_ones[q]->launch(resident_points<affine_t::mem_t>(points[q], points[q].n));
            marks[q]->mark(s);
            g1_tails[q]->launch(gpu, implementation);
            marks[q]->mark(s);
        }
        marks[3].reset(new timed_events(streams[3]));
        if (g2_ones)
            g2_ones->launch(resident_points<g2_affine_t::mem_t>(points[3], points[3].n));
        marks[3]->mark(streams[3]);
        b_g2_tail->launch(gpu, implementation);
        marks[3]->mark(streams[3]);
    }

    // L, A, B_G1 sums into g1_out[0..2], B_G2's into g2_out; times: the tails' own device
    // times (L, A, B_G1, B_G2), then the batch additions' together.
    void collect(point_t g1_out[3], g2_point_t& g2_out, uint64_t times[5])
    {
        uint64_t batch_ns = 0;
        for (int q = 0; q < 3; q++) {
            g1_out[q] = g1_tails[q]->result();
            if (g1_ones[q])
                g1_out[q].add(g1_ones[q]->result());
            batch_ns += marks[q]->ns(0, 1);
            times[q] = marks[q]->ns(1, 2);
        }
        g2_out = b_g2_tail->result();
        if (g2_ones)
            g2_out.add(g2_ones->result());
        batch_ns += marks[3]->ns(0, 1);
        times[3] = marks[3]->ns(1, 2);
        times[4] = batch_ns;
    }
};

// H's MSM over h_points (n = 2^lg_domain − 1, a resident key's) with the coefficients the last
// quotient call of `set` left, while `witness` runs; g1_out: H, L, A, B_G1; times: each MSM's
// own device time (H, then the tails of L, A, B_G1, B_G2), the batch additions' together,
// then the wall time from H's launch until every sum is in.
static void split_msms_at_once(cuzk_gpu_context& ctx, uint32_t set, uint32_t lg_domain,
                               const cuzk_gpu_points& h_points, cuzk_gpu_split_witness& witness,
                               uint32_t implementation, point_t g1_out[4], g2_point_t& g2_out,
                               uint64_t times[7])
{
    const auto start = std::chrono::steady_clock::now();
    own_msm::check_implementation(implementation);
    if (!own_msm::is_own(implementation))
        throw std::invalid_argument("the MSMs run at once by cuzk's MSM only");
    if (!h_points.key)
        throw std::invalid_argument("the MSMs run at once over a resident key only");
    if (h_points.n > own_msm::MAX_POINTS)
        throw std::invalid_argument("cuzk's MSM takes at most 2^30 points per query");
    if (lg_domain == 0 || lg_domain >= 32 || h_points.n != ((size_t)1 << lg_domain) - 1)
        throw std::invalid_argument("the H query does not have a point per coefficient but one");
    const fr_t* h_scalars = quotient_stage::coefficients(ctx, set, lg_domain, 0, h_points.n);
    stream_t stream{ctx.gpu.id()};
    timed_events h_marks(stream);
    const bool affine = own_msm::with_affine_rounds(implementation);
    own_msm::point_table<affine_t::mem_t> table;
    const bool with_table = !affine && resident_h_table(h_points, h_points.n, table);
    own_msm::g1_msm h{stream, resident_points<affine_t::mem_t>(h_points, h_points.n), h_scalars,
                      h_points.n, true, 0, affine, nullptr, 0, nullptr, with_table ? &table : nullptr};
    h_marks.mark(stream);
    g1_out[0] = h.result();
    times[0] = h_marks.ns(0, 1);
    witness.collect(&g1_out[1], g2_out, &times[1]);
    times[6] = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - start).count();
}
