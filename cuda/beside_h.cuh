// Stage witness MSMs beside H: a classified witness's MSMs (witness_classes.cuh: L, A, then
// B_G1 and B_G2 with B's classes found once) on a host thread of their own and the device's
// stream 0, while the calling thread runs a part of H's MSM (quotient.cuh) on its stream. One
// after another after H's MSM they were 0.18 s of a 32GiB partition's 1.29 s of GPU phases
// (docs/PERFORMANCE.md); beside it they take the SMs that H's sorts and launch gaps leave.
// The thread is joined before the call returns, so the part ends with both done: the caller's
// preemption points between H's parts stay points where nothing of the call runs.
#pragma once

#include <exception>
#include <thread>

// times: the H part's own wall time, then L's and A's classes, batch addition and tail, then
// B's classes, B_G1's batch addition and tail, B_G2's batch addition and tail (ns).
static void h_msm_beside_witness(cuzk_gpu_context& ctx, uint32_t set, uint32_t lg_domain,
                                 const cuzk_gpu_points& h_points, size_t first, size_t count,
                                 uint32_t h_implementation,
                                 const cuzk_gpu_classified_queries& witness,
                                 const cuzk_gpu_staging* staging, point_t& h, point_t g1[3],
                                 g2_point_t& b_g2, uint64_t times[12])
{
    std::fill(times, times + 12, 0);
    std::exception_ptr witness_failed;
    std::thread witness_msms([&] {
        try {
            ctx.gpu.select();
            for (int q = 0; q < 2; q++)
                g1[q] = classified_witness_msm_on_device<own_msm::g1_msm, point_t, bucket_t, affine_t>(
                    ctx, set, witness.points[q], witness.scalars[q], witness.split_min_ones[q],
                    witness.implementation, staging, times + 1 + 3 * q);
            classified_b_msms_on_device(ctx, set, witness.points + 2, witness.scalars[2],
                                        witness.implementation, staging, g1[2], b_g2, times + 7);
        } catch (...) {
            witness_failed = std::current_exception();
        }
    });
    // Until the thread is joined nothing may leave this frame: it reads the frame's locals.
    std::exception_ptr h_failed;
    const auto start = std::chrono::steady_clock::now();
    try {
        quotient_stage::msm(ctx, set, lg_domain, h_points, first, count, h_implementation, h);
    } catch (...) {
        h_failed = std::current_exception();
    }
    times[0] = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - start).count();
    witness_msms.join();
    if (h_failed)
        std::rethrow_exception(h_failed);
    if (witness_failed)
        std::rethrow_exception(witness_failed);
}
