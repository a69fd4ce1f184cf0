// Stage tail MSM: Pippenger over the few full-width scalars left after the 0/1 split. Each
// call gets its own msm_t, whose window width sppark derives from that MSM's size (the
// tails of L, A and B_G1 differ by an order of magnitude).
#pragma once

// For G1 (g1_msm_t) and G2 (g2_msm_t).
template<class msm_type, class point_t, class affine_t>
static point_t tail_msm_on_device(const gpu_t& gpu, const affine_t* points,
                                  const scalar_t* canonical_scalars, size_t n)
{
    point_t out;
    out.inf();
    if (n == 0)
        return out;
    msm_type msm{nullptr, n, sizeof(affine_t), gpu.id()};
    check(msm.invoke(out, points, n, canonical_scalars, false));
    return out;
}

