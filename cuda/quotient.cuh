// Stage H: the coefficients of H = (A·B − C)/Z on the device, left in the context's NTT
// buffers of the call's set, then their MSM with the H query, in chunks (`msm`) that the
// caller may interleave with calls of the top class, which use the other set. The chunks of
// one MSM are its parts (msm.cuh's shared_buckets): they add into one set of buckets, kept in
// the NTT buffers the coefficients leave free, and the last sums the windows, so that the
// MSM has the windows and the single reduction of its whole size. A, B, C come
// from the host or from stage R1CS (spmv.cuh). 6 NTTs of the domain size, not the textbook 7:
// Z is the constant z on the coset g·⟨ω⟩, and the inverse coset NTT of C's coset values is C's
// coefficients (deg C < n), so H = (icoset(A·B on the coset) − C's coefficients)/z, the same
// coefficients for any a, b, c. A and B: an inverse and a coset NTT each; C: an inverse NTT;
// then a·b, the inverse coset NTT, the subtraction and the scaling.
#pragma once

// A's and B's values on the coset: a ← a·b.
__launch_bounds__(1024) __global__
void coset_product(fr_t* a, const fr_t* b, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        a[i] = a[i] * b[i];
}

// H from icoset(A·B) and C's coefficients (both in the same order): h ← (h − c)/z.
__launch_bounds__(1024) __global__
void subtract_and_scale(fr_t* h, const fr_t* c, fr_t z_inverse, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x)
        h[i] = (h[i] - c[i]) * z_inverse;
}

class quotient_stage : public NTT {
    // Z(x) = x^n − 1 is g^n − 1 everywhere on the coset g·⟨ω⟩.
    static fr_t z_inverse_on_coset(uint32_t lg_domain)
    {
        fr_t g_pow_n = group_gen;
        for (uint32_t i = 0; i < lg_domain; i++)
            g_pow_n ^= 2;
        return (g_pow_n - fr_t::one()).reciprocal();
    }

    // Evaluations → coefficients → evaluations on the coset, in place.
    static void to_coset(fr_t* d, uint32_t lg_domain, stream_t& stream)
    {
        NTT_internal(d, lg_domain, InputOutputOrder::NR, Direction::inverse, Type::standard, stream);
        NTT_internal(d, lg_domain, InputOutputOrder::RN, Direction::forward, Type::coset, stream);
    }

    struct buffers {
        fr_t* d[3];
        size_t domain;
    };

    static buffers ntt_buffers(cuzk_gpu_context& ctx, uint32_t set, size_t n, uint32_t lg_domain)
    {
        const size_t domain = (size_t)1 << lg_domain;
        if (n > domain)
            throw std::invalid_argument("more evaluations than the domain holds");
        fr_t* d_abc = ctx.ntt_buffers(3 * domain, set);
        return {{d_abc, d_abc + domain, d_abc + 2 * domain}, domain};
    }

    // H's coefficients from the n evaluations of A, B, C at the start of each buffer (the
    // rest is zeroed here) into the first buffer, enqueued after what `ev` marked last: NTT
    // time = from that mark to the next.
    static void finish(cuzk_gpu_context& ctx, stream_t& stream, const buffers& b, size_t n,
                       uint32_t lg_domain, timed_events& ev, cuzk_gpu_h_times& times)
    {
        const gpu_t& gpu = ctx.gpu;
        const size_t domain = b.domain;
        fr_t* const* d = b.d;
        for (int k = 0; k < 3; k++)
            if (n < domain)
                CUDA_OK(cudaMemsetAsync(d[k] + n, 0, (domain - n) * sizeof(fr_t), stream));
        to_coset(d[0], lg_domain, stream);
        to_coset(d[1], lg_domain, stream);
        // C's coefficients and icoset(A·B) both bit-reversed (no reversal of their own), then
        // H put in natural order once.
        NTT_internal(d[2], lg_domain, InputOutputOrder::NR, Direction::inverse, Type::standard, stream);
        coset_product<<<gpu.sm_count(), 1024, 0, stream>>>(d[0], d[1], domain);
        CUDA_OK(cudaGetLastError());
        NTT_internal(d[0], lg_domain, InputOutputOrder::NR, Direction::inverse, Type::coset, stream);
        subtract_and_scale<<<gpu.sm_count(), 1024, 0, stream>>>(d[0], d[2], z_inverse_on_coset(lg_domain),
                                                               domain);
        CUDA_OK(cudaGetLastError());
        bit_rev(d[0], d[0], lg_domain, stream);
        const size_t ntt_start = ev.last();
        ev.mark(stream);
        stream.sync();
        times.ntt_ns = ev.ns(ntt_start, ntt_start + 1);
    }

public:
    // A, B, C evaluated on the host: copied in.
    static void from_host(cuzk_gpu_context& ctx, uint32_t set, const fr_t* a, const fr_t* b,
                          const fr_t* c, size_t n, uint32_t lg_domain,
                          const cuzk_gpu_staging* staging, cuzk_gpu_h_times& times)
    {
        const buffers buf = ntt_buffers(ctx, set, n, lg_domain);
        stream_t& stream = ctx.gpu[0];
        const fr_t* host[3] = {a, b, c};
        timed_events ev(stream);
        for (int k = 0; k < 3; k++)
            staged_htod(ctx, stream, buf.d[k], host[k], n * sizeof(fr_t), staging);
        ev.mark(stream);
        finish(ctx, stream, buf, n, lg_domain, ev, times);
        times.h2d_ns = ev.ns(0, 1);
        times.spmv_ns = 0;
    }

    // A, B, C evaluated on the device from the resident shape and the compact witness.
    static void from_shape(cuzk_gpu_context& ctx, uint32_t set, const cuzk_gpu_shape& shape,
                           const cuzk_gpu_witness& witness, uint32_t lg_domain,
                           const cuzk_gpu_staging* staging, cuzk_gpu_h_times& times)
    {
        const buffers buf = ntt_buffers(ctx, set, shape.rows, lg_domain);
        stream_t& stream = ctx.gpu[0];
        timed_events ev(stream);
        evaluate_shape(ctx, set, stream, shape, witness, staging, buf.d, ev);
        ev.mark(stream);
        finish(ctx, stream, buf, shape.rows, lg_domain, ev, times);
        times.h2d_ns = ev.ns(0, 1);
        times.spmv_ns = ev.ns(1, 2);
    }

    // The coefficients of H's MSM chunk [first, first + count): what the last from_host /
    // from_shape of `set` left for a domain of 2^lg_domain (Montgomery form).
    static const fr_t* coefficients(cuzk_gpu_context& ctx, uint32_t set, uint32_t lg_domain,
                                    size_t first, size_t count)
    {
        const size_t domain = (size_t)1 << lg_domain;
        if (first > domain - 1 || count > domain - 1 - first)
            throw std::invalid_argument("H's MSM chunk lies past the H query");
        return ctx.ntt_results(domain, set) + first;
    }

    // An H MSM of `npoints` in parts, a part of `count` points, in the `words` free words of
    // the NTT buffers: the whole MSM's digit width; its shared buckets there, at their start
    // (their words 256-byte aligned), when a group of a window's sort fits beside them, else
    // in memory of the context's (cuzk_gpu_context::h_msm_buckets); the windows a group sorts
    // in the free words left.
    struct parts_layout {
        uint32_t c;
        size_t bucket_bytes, bucket_words;
        bool buckets_in_ntt_buffers;
        uint32_t group_windows;

        parts_layout(size_t npoints, size_t count, size_t words)
            : c(own_msm::digit_bits(npoints)),
              bucket_bytes(own_msm::buckets_of(c) * sizeof(bucket_t::mem_t)),
              bucket_words((bucket_bytes / sizeof(uint32_t) + 63) / 64 * 64)
        {
            const size_t stride = (count + 63) / 64 * 64;
            buckets_in_ntt_buffers = bucket_words + 4 * stride <= words;
            const size_t sort_words = buckets_in_ntt_buffers ? words - bucket_words : words;
            group_windows = (uint32_t)std::max<size_t>(1, std::min<size_t>(own_msm::windows_of(c),
                                                                           sort_words / (4 * stride)));
        }
    };

    // Σ coefficient_i · H_i over i in [first, first + count), by sppark's MSM or cuzk's
    // (implementation, CUZK_GPU_MSM_*). With cuzk's (no batched-affine rounds), a chunk of
    // an MSM of more than one is a part of it (parts_layout): it returns the identity but
    // for the last, which returns the whole sum; the parts must come in order, from first = 0.
    static void msm(cuzk_gpu_context& ctx, uint32_t set, uint32_t lg_domain,
                    const cuzk_gpu_points& h_points, size_t first, size_t count,
                    uint32_t implementation, point_t& out)
    {
        const size_t npoints = ((size_t)1 << lg_domain) - 1;
        const fr_t* coefficients = quotient_stage::coefficients(ctx, set, lg_domain, first, count);
        own_msm::check_implementation(implementation);
        if (own_msm::is_own(implementation)) {
            out.inf();
            if (count == 0)
                return;
            stream_t stream{ctx.gpu.id()};
            dev_ptr_t<affine_t::mem_t> copy{h_points.key ? 0 : count, stream};
            const affine_t::mem_t* points;
            if (h_points.key) {
                points = resident_points<affine_t::mem_t>(h_points, npoints) + first;
            } else {
                stream.HtoD(copy.data(), (const affine_t::mem_t*)h_points.host + first, count);
                points = copy.data();
            }
            // The set's two other NTT buffers, free once the coefficients are made, take the
            // sort's keys and entries (2^28 entries of a 2^26-point chunk alone: 4.3 GB of its
            // 11 GB, which an 80 GB card lacks beside a resident 32GiB PoRep key), and the
            // buckets of an MSM in parts beside them.
            const size_t domain = (size_t)1 << lg_domain;
            uint32_t* const free = (uint32_t*)(ctx.ntt_results(3 * domain, set) + domain);
            const size_t free_words = 2 * domain * sizeof(fr_t) / sizeof(uint32_t);
            const bool affine = own_msm::with_affine_rounds(implementation);
            size_t& next_part = ctx.h_msm_next_part(set);
            if (count < npoints && !affine) {
                const bool first_part = first == 0, last_part = first + count == npoints;
                if (!first_part && next_part != first)
                    throw std::invalid_argument("a part of H's MSM that does not follow the last one of its buffer set");
                // Until this part is done: a part that fails ends the MSM.
                next_part = 0;
                const parts_layout parts{npoints, count, free_words};
                typedef bucket_t::mem_t bucket_mem_t;
                bucket_mem_t* const buckets = parts.buckets_in_ntt_buffers
                    ? (bucket_mem_t*)free
                    : (bucket_mem_t*)ctx.h_msm_buckets(parts.bucket_bytes, set);
                const size_t skipped = parts.buckets_in_ntt_buffers ? parts.bucket_words : 0;
                const own_msm::shared_buckets<bucket_mem_t> shared{buckets, first_part, last_part,
                                                                   parts.group_windows};
                own_msm::g1_msm msm{stream, points, coefficients, count, true, parts.c, false,
                                    free + skipped, free_words - skipped, &shared};
                out = msm.result();
                next_part = last_part ? 0 : first + count;
                return;
            }
            own_msm::point_table<affine_t::mem_t> table;
            const bool with_table = !affine && resident_h_table(h_points, npoints, table);
            own_msm::g1_msm msm{stream, points, coefficients, count, true, 0, affine, free, free_words,
                                nullptr, with_table ? &table : nullptr};
            out = msm.result();
            return;
        }
        abandoned_on_fault<g1_msm_t> msm{nullptr, count, sizeof(affine_t), ctx.gpu.id()};
        dev_ptr_t<fr_t> scalars{const_cast<fr_t*>(coefficients), count};
        if (h_points.key)
            check(msm->invoke(out,
                              dev_ptr_t<affine_t>{resident_points<affine_t>(h_points, npoints) + first, count},
                              count, scalars, true));
        else
            check(msm->invoke(out, (const affine_t*)h_points.host + first, count, scalars, true));
    }
};
