// A query's selection of the witness z (A's or B's: the values of the variables with a point
// in the query), as cuzk_gpu_witness_scalars names it: checked here, and kept on the device
// with a circuit shape's matrices, so that a call of that shape neither checks nor sends its
// selections. At 32GiB a selection is 2 × 16.8 MB, and checking and sending A's and B's (B's
// twice, for B_G1 and B_G2) took ≈ 60 ms of each partition's turn (docs/PERFORMANCE.md).
#pragma once

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

// Whether `s` takes a selection of z (resident or sent from the host), not z's values in place.
static bool has_selection(const cuzk_gpu_witness_scalars& s)
{
    return s.selected != nullptr || s.resident != nullptr;
}

struct cuzk_gpu_selection {
    const gpu_t& gpu;
    // False once the context it was made in is reset: its device memory went with it.
    bool owns_device_memory = true;
    uint32_t* bitmap = nullptr;
    uint32_t* offsets = nullptr;
    size_t z_len = 0;
    size_t npoints = 0;
    size_t bytes = 0;

    explicit cuzk_gpu_selection(const gpu_t& device) : gpu(device) {}
    cuzk_gpu_selection(const cuzk_gpu_selection&) = delete;
    cuzk_gpu_selection& operator=(const cuzk_gpu_selection&) = delete;
    ~cuzk_gpu_selection()
    {
        if (!owns_device_memory)
            return;
        gpu.select();
        for (void* p : {(void*)bitmap, (void*)offsets})
            if (p)
                (void)cudaFree(p);
    }
};

// The selection `s` names (with its bitmap, for a query of npoints) checked and copied to the
// device of `ctx`.
static cuzk_gpu_selection* upload_selection(cuzk_gpu_context& ctx, const cuzk_gpu_witness_scalars& s,
                                            size_t npoints, const cuzk_gpu_staging* staging)
{
    if (s.selected == nullptr || s.selected_offsets == nullptr)
        throw std::invalid_argument("a resident selection needs its bitmap and offsets");
    if (s.resident != nullptr)
        throw std::invalid_argument("the selection to upload is already resident");
    if (s.z_len == 0)
        throw std::invalid_argument("a selection of an empty witness");
    check_selection(s, npoints);
    std::unique_ptr<cuzk_gpu_selection> out{new cuzk_gpu_selection(ctx.gpu)};
    ctx.gpu.select();
    stream_t& stream = ctx.gpu[0];
    const size_t words = (s.z_len + 31) / 32;
    for (uint32_t** to : {&out->bitmap, &out->offsets})
        CUDA_OK(cudaMalloc(to, words * sizeof(uint32_t)));
    out->bytes = 2 * words * sizeof(uint32_t);
    staged_htod(ctx, stream, out->bitmap, s.selected, words * sizeof(uint32_t), staging);
    staged_htod(ctx, stream, out->offsets, s.selected_offsets, words * sizeof(uint32_t), staging);
    stream.sync();
    out->z_len = s.z_len;
    out->npoints = npoints;
    return out.release();
}

// The resident selection `s` names for a query of npoints on the device of `ctx`, NULL when
// `s` names none (its bitmap is the host's); checked against the call's witness and query.
static const cuzk_gpu_selection* resident_selection(const cuzk_gpu_context& ctx,
                                                    const cuzk_gpu_witness_scalars& s,
                                                    size_t npoints)
{
    const cuzk_gpu_selection* r = s.resident;
    if (r == nullptr)
        return nullptr;
    if (r->gpu.id() != ctx.gpu.id())
        throw std::invalid_argument("the resident selection is on another device");
    if (r->z_len != s.z_len)
        throw std::invalid_argument("the resident selection is of a witness of another length");
    if (r->npoints != npoints)
        throw std::invalid_argument("the resident selection does not have one value per point of the query");
    return r;
}
