// Stage split MSMs at once: a small proof's H MSM and its witness MSMs split by the 0/1
// classes (L, A, B_G1 and B_G2: batch addition of the 1-scalars' points, cuzk's MSM over the
// full-width tail) at the same time, each query on a stream of its own, over a resident key.
// At 2KiB the tails (≈ 43k points each) and batch additions are bound by latency, not
// arithmetic: one after another they took 26 of the GPU phases' 81 ms (docs/PERFORMANCE.md);
// beside H's MSM they fill the SMs it leaves idle.
#pragma once

// H's n = 2^lg_domain − 1 points (points[0]) with the coefficients the last quotient call of
// `set` left; L, A, B_G1, B_G2 (points[1..4]) with queries[0..3]. times: each MSM's own device
// time (H, L, A, B_G1, B_G2; a tail's from its scalars' arrival), the batch additions' together,
// then the wall time of them all.
static void split_msms_at_once(cuzk_gpu_context& ctx, uint32_t set, uint32_t lg_domain,
                               const cuzk_gpu_points points[5],
                               const cuzk_gpu_split_query queries[4], uint32_t implementation,
                               point_t g1_out[4], g2_point_t& g2_out, uint64_t times[7])
{
    typedef batch_add_launch<point_t, bucket_t, affine_t> g1_batch;
    typedef batch_add_launch<g2_point_t, g2_bucket_t, g2_affine_t> g2_batch;
    typedef resident_tail_msm<own_msm::g1_msm, point_t, affine_t> g1_tail;
    typedef resident_tail_msm<own_msm::g2_msm, g2_point_t, g2_affine_t> g2_tail;

    const auto start = std::chrono::steady_clock::now();
    own_msm::check_implementation(implementation);
    if (!own_msm::is_own(implementation))
        throw std::invalid_argument("the MSMs run at once by cuzk's MSM only");
    for (int q = 0; q < 5; q++) {
        if (!points[q].key)
            throw std::invalid_argument("the MSMs run at once over a resident key only");
        if (points[q].n > own_msm::MAX_POINTS)
            throw std::invalid_argument("cuzk's MSM takes at most 2^30 points per query");
    }
    if (lg_domain == 0 || lg_domain >= 32 || points[0].n != ((size_t)1 << lg_domain) - 1)
        throw std::invalid_argument("the H query does not have a point per coefficient but one");
    for (int q = 0; q < 4; q++)
        if (queries[q].tail_n > points[q + 1].n || (queries[q].tail_n && !queries[q].tail_scalars))
            throw std::invalid_argument("a tail has more scalars than its query has points");
    const fr_t* h_scalars = quotient_stage::coefficients(ctx, set, lg_domain, 0, points[0].n);
    const gpu_t& gpu = ctx.gpu;
    stream_t streams[5] = {gpu.id(), gpu.id(), gpu.id(), gpu.id(), gpu.id()};

    // Every copy from the host first: one from pageable memory may wait for its stream's
    // earlier work, which would keep the next queries' kernels from being queued.
    std::unique_ptr<g1_batch> g1_ones[3];
    std::unique_ptr<g1_tail> g1_tails[3];
    for (int q = 0; q < 3; q++) {
        const cuzk_gpu_split_query& s = queries[q];
        if (s.ones_bitmap && points[q + 1].n)
            g1_ones[q].reset(new g1_batch{gpu, streams[q + 1], points[q + 1].n, s.ones_bitmap});
        g1_tails[q].reset(new g1_tail{streams[q + 1], points[q + 1], s.tail_indices,
                                      (const scalar_t*)s.tail_scalars, s.tail_n});
    }
    std::unique_ptr<g2_batch> g2_ones;
    if (queries[3].ones_bitmap && points[4].n)
        g2_ones.reset(new g2_batch{gpu, streams[4], points[4].n, queries[3].ones_bitmap});
    g2_tail b_g2_tail{streams[4], points[4], queries[3].tail_indices,
                      (const scalar_t*)queries[3].tail_scalars, queries[3].tail_n};

    // Then every kernel, H's first: it is the longest.
    timed_events h_marks(streams[0]);
    own_msm::g1_msm h{streams[0], resident_points<affine_t::mem_t>(points[0], points[0].n),
                      h_scalars, points[0].n, true, 0, own_msm::with_affine_rounds(implementation)};
    h_marks.mark(streams[0]);
    // Marks per query: start, batch addition done, tail done.
    std::unique_ptr<timed_events> marks[4];
    for (int q = 0; q < 3; q++) {
        stream_t& s = streams[q + 1];
        marks[q].reset(new timed_events(s));
        if (g1_ones[q])
            g1_ones[q]->launch(resident_points<affine_t::mem_t>(points[q + 1], points[q + 1].n));
        marks[q]->mark(s);
        g1_tails[q]->launch(gpu, implementation);
        marks[q]->mark(s);
    }
    marks[3].reset(new timed_events(streams[4]));
    if (g2_ones)
        g2_ones->launch(resident_points<g2_affine_t::mem_t>(points[4], points[4].n));
    marks[3]->mark(streams[4]);
    b_g2_tail.launch(gpu, implementation);
    marks[3]->mark(streams[4]);

    g1_out[0] = h.result();
    times[0] = h_marks.ns(0, 1);
    uint64_t batch_ns = 0;
    for (int q = 0; q < 3; q++) {
        g1_out[q + 1] = g1_tails[q]->result();
        if (g1_ones[q])
            g1_out[q + 1].add(g1_ones[q]->result());
        batch_ns += marks[q]->ns(0, 1);
        times[q + 1] = marks[q]->ns(1, 2);
    }
    g2_out = b_g2_tail.result();
    if (g2_ones)
        g2_out.add(g2_ones->result());
    batch_ns += marks[3]->ns(0, 1);
    times[4] = marks[3]->ns(1, 2);
    times[5] = batch_ns;
    times[6] = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - start).count();
}
