// Stage R1CS: a = A·z, b = B·z, c = C·z on the device, from the circuit's matrices kept
// resident (uploaded once per circuit shape) and a witness z sent compactly. a, b, c are
// written straight into the NTT buffers of stage H: they never exist in host memory and
// never cross PCIe (3 × 4.2 GB per 32GiB partition); the witness crosses as a 2-bit kind
// per value plus its full-width values (PoRep: ~97 % of the values are 0 or 1).
#pragma once

#include <ff/shfl.cuh>

// One matrix in compressed sparse rows; an entry's coefficient is an index into the shape's
// coefficient table, ids 0 and 1 being +1 and −1 (src/synthesis/r1cs/matrix.rs).
struct device_csr {
    uint32_t* row_starts = nullptr; // rows + 1
    uint32_t* columns = nullptr;
    uint32_t* coefficient_ids = nullptr;
};

struct cuzk_gpu_shape {
    const gpu_t& gpu;
    // False once the context it was made in is reset: its device memory went with it.
    bool owns_device_memory = true;
    device_csr matrices[3];
    fr_t* coefficients = nullptr;
    size_t rows = 0;
    size_t variables = 0; // inputs + aux: the length of z
    size_t bytes = 0;

    explicit cuzk_gpu_shape(const gpu_t& device) : gpu(device) {}
    cuzk_gpu_shape(const cuzk_gpu_shape&) = delete;
    cuzk_gpu_shape& operator=(const cuzk_gpu_shape&) = delete;
    ~cuzk_gpu_shape()
    {
        if (!owns_device_memory)
            return;
        gpu.select();
        for (auto& m : matrices)
            for (void* p : {(void*)m.row_starts, (void*)m.columns, (void*)m.coefficient_ids})
                if (p)
                    (void)cudaFree(p);
        if (coefficients)
            (void)cudaFree(coefficients);
    }
};

template<class T>
static T* upload_array(cuzk_gpu_context& ctx, cudaStream_t stream, const T* host, size_t n,
                       const cuzk_gpu_staging* staging, size_t& total_bytes)
{
    T* d = nullptr;
    const size_t bytes = std::max<size_t>(n, 1) * sizeof(T);
    CUDA_OK(cudaMalloc(&d, bytes));
    total_bytes += bytes;
    staged_htod(ctx, stream, d, host, n * sizeof(T), staging);
    return d;
}

static cuzk_gpu_shape* upload_shape(cuzk_gpu_context& ctx, const cuzk_gpu_shape_host& host,
                                    const cuzk_gpu_staging* staging)
{
    std::unique_ptr<cuzk_gpu_shape> shape{new cuzk_gpu_shape(ctx.gpu)};
    ctx.gpu.select();
    stream_t& stream = ctx.gpu[0];
    shape->rows = host.rows;
    shape->variables = host.variables;
    for (int k = 0; k < 3; k++) {
        const cuzk_gpu_csr_host& m = host.matrices[k];
        device_csr& d = shape->matrices[k];
        d.row_starts = upload_array(ctx, stream, m.row_starts, host.rows + 1, staging, shape->bytes);
        d.columns = upload_array(ctx, stream, m.columns, m.nonzeros, staging, shape->bytes);
        d.coefficient_ids = upload_array(ctx, stream, m.coefficient_ids, m.nonzeros, staging,
                                         shape->bytes);
    }
    shape->coefficients = upload_array(ctx, stream, (const fr_t*)host.coefficients,
                                       host.num_coefficients, staging, shape->bytes);
    stream.sync();
    return shape.release();
}

// z from its compact form: value i is 0, 1 or the next full-width value, by its 2-bit kind.
__launch_bounds__(1024) __global__
void decode_witness(fr_t* z, const uint64_t* kinds, const uint32_t* full_offsets,
                    const fr_t* full, size_t n)
{
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        const uint64_t word = kinds[i / 32];
        const uint32_t slot = i % 32;
        const uint32_t kind = (word >> (2 * slot)) & 3;
        if (kind == CUZK_GPU_WITNESS_FULL) {
            // Full values before this one in its word: kind 2 has the high bit of its pair set.
            const uint64_t below = word & ((slot == 0) ? 0 : (~0ull >> (64 - 2 * slot)));
            const uint32_t rank = __popcll(below & 0xAAAAAAAAAAAAAAAAull);
            z[i] = full[full_offsets[i / 32] + rank];
        } else {
            z[i] = fr_t::one(kind == CUZK_GPU_WITNESS_ZERO);
        }
    }
}

// Rows longer than this are summed by their whole warp. A thread per row leaves its warp as
// slow as its longest row: PoRep's A has ~0.1 % rows of 129–1024 entries (bits packed with
// power-of-two coefficients, each a multiplication), one in ~30 warp iterations, which made
// those rows most of the SpMV's time with one lane of 32 working.
constexpr uint32_t WARP_ROW = 16;

// Σ coefficient·z over entries [begin, end) of a row, every `step`-th from `begin`.
__device__ __forceinline__ fr_t row_part(size_t begin, size_t end, uint32_t step,
                                         const uint32_t* columns, const uint32_t* coefficient_ids,
                                         const fr_t* coefficients, const fr_t* z)
{
    fr_t acc = fr_t::one(1);
    for (size_t e = begin; e < end; e += step) {
        const fr_t value = z[columns[e]];
        switch (const uint32_t id = coefficient_ids[e]) {
        case 0: acc += value; break;
        case 1: acc -= value; break;
        default: acc += value * coefficients[id]; break;
        }
    }
    return acc;
}

// Σ of `part` over the warp's lanes, in every lane: a butterfly of sppark's shuffles.
__device__ __forceinline__ fr_t warp_sum(fr_t part)
{
    for (uint32_t offset = warpSize / 2; offset > 0; offset /= 2)
        part += shfl_xor(part, offset);
    return part;
}

// One thread per row: rows are short (PoRep: 1–3 entries), mostly ±1 coefficients, which cost
// one addition each; the other coefficients one multiplication. A warp's rows longer than
// WARP_ROW are summed first, each by the whole warp (its lanes take every 32nd entry, then a
// butterfly of shuffles adds their parts); field addition is exact, so any order gives the
// same sums. The grid's threads are a whole number of warps, so a warp's lanes iterate
// together.
__launch_bounds__(256) __global__
void sparse_rows_times_z(fr_t* out, const uint32_t* row_starts, const uint32_t* columns,
                         const uint32_t* coefficient_ids, const fr_t* coefficients,
                         const fr_t* z, size_t rows)
{
    const uint32_t lane = threadIdx.x % warpSize;
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t first = threadIdx.x - lane + (size_t)blockIdx.x * blockDim.x; first < rows;
         first += stride) {
        const size_t row = first + lane;
        uint32_t begin = 0, end = 0;
        if (row < rows) {
            begin = row_starts[row];
            end = row_starts[row + 1];
        }
        const bool long_row = end - begin > WARP_ROW;
        for (uint32_t long_lanes = __ballot_sync(0xffffffffu, long_row); long_lanes != 0;
             long_lanes &= long_lanes - 1) {
            const uint32_t owner = __ffs(long_lanes) - 1;
            const uint32_t row_begin = __shfl_sync(0xffffffffu, begin, owner);
            const uint32_t row_end = __shfl_sync(0xffffffffu, end, owner);
            const fr_t sum = warp_sum(row_part((size_t)row_begin + lane, row_end, warpSize, columns,
                                               coefficient_ids, coefficients, z));
            if (lane == owner)
                out[row] = sum;
        }
        if (row < rows && !long_row)
            out[row] = row_part(begin, end, 1, columns, coefficient_ids, coefficients, z);
    }
}

// z from `witness` into the context's witness buffer of `set` (reused between calls), in
// stream order: sent whole, or compactly and decoded there.
static fr_t* upload_witness(cuzk_gpu_context& ctx, uint32_t set, stream_t& stream,
                            const cuzk_gpu_witness& witness, const cuzk_gpu_staging* staging)
{
    fr_t* z = ctx.witness_buffer(witness.n, set);
    if (witness.kinds == nullptr) {
        if (witness.num_full > witness.n)
            throw std::invalid_argument("the witness has more inputs than values");
        staged_htod(ctx, stream, z, witness.full, witness.num_full * sizeof(fr_t), staging);
        staged_htod(ctx, stream, z + witness.num_full, witness.aux,
                    (witness.n - witness.num_full) * sizeof(fr_t), staging);
        return z;
    }
    const size_t words = (witness.n + 31) / 32;
    // The compact witness is small (PoRep 32GiB: ~170 MB): plain device buffers per call.
    // Freed in stream order, after the kernels below have read them.
    dev_ptr_t<uint64_t> kinds{std::max<size_t>(words, 1), stream};
    dev_ptr_t<uint32_t> offsets{std::max<size_t>(words, 1), stream};
    dev_ptr_t<fr_t> full{std::max<size_t>(witness.num_full, 1), stream};
    staged_htod(ctx, stream, kinds.data(), witness.kinds, words * sizeof(uint64_t), staging);
    staged_htod(ctx, stream, offsets.data(), witness.full_offsets, words * sizeof(uint32_t),
                staging);
    staged_htod(ctx, stream, full.data(), witness.full, witness.num_full * sizeof(fr_t), staging);
    decode_witness<<<4 * ctx.gpu.sm_count(), 1024, 0, stream>>>(z, kinds.data(), offsets.data(),
                                                                full.data(), witness.n);
    CUDA_OK(cudaGetLastError());
    return z;
}

// Fills the first shape.rows scalars of d[0], d[1], d[2] with A·z, B·z, C·z, z sent from
// `witness` (upload_witness).
static void evaluate_shape(cuzk_gpu_context& ctx, uint32_t set, stream_t& stream,
                           const cuzk_gpu_shape& shape, const cuzk_gpu_witness& witness,
                           const cuzk_gpu_staging* staging, fr_t* const d[3], timed_events& ev)
{
    if (witness.n != shape.variables)
        throw std::invalid_argument("the witness does not have the circuit shape's length");
    const fr_t* z = upload_witness(ctx, set, stream, witness, staging);
    ev.mark(stream);

    const int sms = ctx.gpu.sm_count();
    for (int k = 0; k < 3; k++) {
        const device_csr& m = shape.matrices[k];
        sparse_rows_times_z<<<16 * sms, 256, 0, stream>>>(d[k], m.row_starts, m.columns,
                                                          m.coefficient_ids, shape.coefficients,
                                                          z, shape.rows);
        CUDA_OK(cudaGetLastError());
    }
}
