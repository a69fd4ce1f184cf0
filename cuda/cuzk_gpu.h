/* The C surface of cuzk's CUDA stages, called by src/backend/gpu/ (mirrored in sys.rs; internal:
 * not part of the public include/cuzk.h). Every function catches all C++ exceptions and returns a
 * CUZK_GPU_* code, with a message in the caller's buffer. Field elements and points use
 * blst's layout (Montgomery form, 6 × u64 per Fp coordinate), which is sppark's too. */
#ifndef CUZK_GPU_H
#define CUZK_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    CUZK_GPU_OK = 0,
    CUZK_GPU_ERROR = 1,         /* a CUDA call failed */
    CUZK_GPU_OUT_OF_MEMORY = 2, /* device or host allocation failed */
    CUZK_GPU_INTERNAL = 3,      /* any other exception */
};

/* A G1 point in affine coordinates (blst_p1_affine layout) plus an infinity flag. */
typedef struct {
    uint64_t x[6];
    uint64_t y[6];
    uint32_t infinity;
    uint32_t padding;
} cuzk_gpu_g1;

/* A G2 point in affine coordinates (blst_p2_affine layout: x = (x.re, x.im), 6 × u64 each)
 * plus an infinity flag. */
typedef struct {
    uint64_t x[12];
    uint64_t y[12];
    uint32_t infinity;
    uint32_t padding;
} cuzk_gpu_g2;

/* Device-side durations of H's coefficients, from CUDA events. */
typedef struct {
    uint64_t h2d_ns;  /* a, b, c (or the witness, decoded when compact) to the device */
    uint64_t spmv_ns; /* A·z, B·z, C·z (0 when a, b, c came from the host) */
    uint64_t ntt_ns;  /* 3 iNTT, 3 coset NTT, a·b − c, ÷Z, coset iNTT */
} cuzk_gpu_h_times;

/* The context's sets of NTT and witness buffers: calls of the WinningPoSt class use set 1, the
 * others set 0, so that a WinningPoSt can prove while a partition that left H's coefficients
 * in set 0 makes way for it. */
#define CUZK_GPU_BUFFER_SETS 2

typedef struct {
    char text[512];
} cuzk_gpu_message;

/* Per-device state made once per process: the device, host threads for staging copies,
 * and the NTT buffers of H (grown to the largest domain seen, then reused). */
typedef struct cuzk_gpu_context cuzk_gpu_context;

/* A proving key's points resident in device memory. */
typedef struct cuzk_gpu_key cuzk_gpu_key;

/* A circuit's R1CS matrices resident in device memory. */
typedef struct cuzk_gpu_shape cuzk_gpu_shape;
typedef struct cuzk_gpu_selection cuzk_gpu_selection;

/* Two pinned host buffers of `bytes` each, from the engine's pool, through which pageable
 * host memory is copied to the device (double-buffered). NULL or bytes == 0: plain copies. */
typedef struct {
    void *buffers[2];
    size_t bytes;
} cuzk_gpu_staging;

/* The five point queries of a Groth16 proving key. */
enum {
    CUZK_GPU_QUERY_H = 0,
    CUZK_GPU_QUERY_L = 1,
    CUZK_GPU_QUERY_A = 2,
    CUZK_GPU_QUERY_B_G1 = 3,
    CUZK_GPU_QUERY_B_G2 = 4,
    CUZK_GPU_QUERIES = 5,
};

/* Bytes of one affine point (blst_p1_affine / blst_p2_affine). */
#define CUZK_GPU_G1_AFFINE_BYTES 96
#define CUZK_GPU_G2_AFFINE_BYTES 192

/* Where the points of one MSM are: query `query` of a resident key, or, when key is NULL,
 * `n` points in host memory (sent to the device by this call). */
typedef struct {
    const cuzk_gpu_key *key;
    uint32_t query;
    const void *host;
    size_t n;
} cuzk_gpu_points;

/* Device memory as the driver sees it, and what this context keeps allocated. */
typedef struct {
    uint64_t total;
    uint64_t free;
    uint64_t ntt_buffer_bytes;
    uint64_t witness_buffer_bytes;
} cuzk_gpu_memory;

/* One R1CS matrix in compressed sparse rows (src/synthesis/r1cs/matrix.rs): row r has the entries
 * row_starts[r] .. row_starts[r + 1]; an entry is a column of z and the id of its coefficient
 * in the shape's table (0: +1, 1: −1). */
typedef struct {
    const uint32_t *row_starts; /* rows + 1 */
    const uint32_t *columns;
    const uint32_t *coefficient_ids;
    size_t nonzeros;
} cuzk_gpu_csr_host;

/* A circuit shape to upload: A, B, C over z = (inputs..., aux...) of `variables` values. */
typedef struct {
    cuzk_gpu_csr_host matrices[3];
    const void *coefficients; /* Montgomery scalars */
    size_t num_coefficients;
    size_t rows;
    size_t variables;
} cuzk_gpu_shape_host;

/* The kinds of a compact witness's values (2 bits each). */
enum {
    CUZK_GPU_WITNESS_ZERO = 0,
    CUZK_GPU_WITNESS_ONE = 1,
    CUZK_GPU_WITNESS_FULL = 2,
};

/* z = (inputs..., aux...) of n values as it crosses to the device (Montgomery scalars).
 * Compactly (kinds non-NULL): value i has kind (kinds[i/32] >> 2(i%32)) & 3; the full-width
 * values are full[] in order, full_offsets[w] of them before word w. Whole (kinds NULL: a
 * witness of mostly full-width values, a PoSt's): full[] holds the num_full inputs and aux[]
 * the n − num_full aux values, sent as they are. */
typedef struct {
    const uint64_t *kinds;
    const uint32_t *full_offsets;
    const void *full;
    size_t num_full;
    const void *aux;
    size_t n;
} cuzk_gpu_witness;

/* Which values of the witness z an MSM takes as its scalars, in order, from the device copy
 * that the last cuzk_gpu_quotient_r1cs or cuzk_gpu_witness_upload of the buffer set left
 * (z_len values, checked). Without a selection (selected NULL) scalar i is z[first + i] (L: the
 * aux values); with one, scalar i is the i-th value v of z whose bit (bit v of word v/32) is
 * set (A and B: the variables with a point in the query), selected_offsets[w] being the set
 * bits before word w. A selection kept on the device (resident non-NULL, made by
 * cuzk_gpu_selection_upload for the same z_len and number of points) is taken instead of
 * selected and selected_offsets, which are neither checked nor sent again. */
typedef struct {
    size_t z_len;
    size_t first;
    const uint32_t *selected;
    const uint32_t *selected_offsets;
    const cuzk_gpu_selection *resident;
} cuzk_gpu_witness_scalars;

/* One witness query's MSM split by the 0/1 classes (cuzk_gpu_split_witness_start): the points
 * whose bit is set in ones_bitmap (bit i of word i/32, ⌈n/32⌉ words for the query's n points;
 * NULL: none) added up, plus Σ sᵢ·P_{tail_indices[i]} over the tail_n canonical little-endian
 * scalars tail_scalars (32 bytes each; tail_indices NULL: dense, scalar i belongs to point i). */
typedef struct {
    const uint32_t *ones_bitmap;
    const uint32_t *tail_indices;
    const void *tail_scalars;
    size_t tail_n;
} cuzk_gpu_split_query;

/* Number of CUDA devices this process can use (CUDA_VISIBLE_DEVICES applies). */
int cuzk_gpu_device_count(int *count, cuzk_gpu_message *msg);

/* Name and memory of a device. */
int cuzk_gpu_device_info(int device, char name[256], uint64_t *total_memory, cuzk_gpu_message *msg);

int cuzk_gpu_context_new(int device, cuzk_gpu_context **out, cuzk_gpu_message *msg);
void cuzk_gpu_context_free(cuzk_gpu_context *ctx);
/* Frees the context's NTT and witness buffers; the next call that needs them allocates again. */
int cuzk_gpu_context_release_buffers(cuzk_gpu_context *ctx, cuzk_gpu_message *msg);
int cuzk_gpu_memory_info(cuzk_gpu_context *ctx, cuzk_gpu_memory *out, cuzk_gpu_message *msg);

/* Page-locked host memory (portable to every device) for a device's staging pool, allocated in
 * that device's context (so that resetting another device's context leaves it alone). */
int cuzk_gpu_pinned_alloc(int device, size_t bytes, void **out, cuzk_gpu_message *msg);
void cuzk_gpu_pinned_free(void *ptr);

/* *faulted = 1 when the device's context holds a sticky error (a kernel fault): every CUDA
 * call there fails until cuzk_gpu_device_reset. */
int cuzk_gpu_device_faulted(int device, int *faulted, cuzk_gpu_message *msg);

/* Resets this process's context of the device (never the GPU) and rebuilds sppark's streams
 * of it. Every context, key, shape and pinned buffer of the device must be freed first. */
int cuzk_gpu_device_reset(int device, cuzk_gpu_message *msg);

#ifdef CUZK_FAULT_INJECTION
/* Tests only: launches a kernel that faults (an illegal address) on the context's device. */
int cuzk_gpu_inject_fault(cuzk_gpu_context *ctx, cuzk_gpu_message *msg);
#endif

/* The digit width of the H table (cuda/h_table.cuh) of an H query of n points, and its
 * *windows copies of the query (the query itself the first); 0 (and 0) where there is none:
 * more than 2^22 points, or none. */
uint32_t cuzk_gpu_h_table_bits(size_t n, uint32_t *windows);
/* Device memory for a key of n[q] points in each query q, with room for the H query's table
 * when `with_h_table` (cuzk_gpu_h_table_bits must give one); *out owns it until
 * cuzk_gpu_key_free. The points are copied in by cuzk_gpu_key_upload (decoded) or
 * cuzk_gpu_key_upload_file_points (as the file holds them), in parts; then, with a table,
 * cuzk_gpu_key_build_h_table. */
int cuzk_gpu_key_alloc(cuzk_gpu_context *ctx, const size_t n[CUZK_GPU_QUERIES], int with_h_table,
                       cuzk_gpu_key **out, cuzk_gpu_message *msg);
/* Makes the key's H table from its H query, which must be uploaded whole: from then on H's MSM
 * by cuzk's, whole (not in parts), reads it, until H's points are uploaded again. */
int cuzk_gpu_key_build_h_table(cuzk_gpu_context *ctx, cuzk_gpu_key *key, cuzk_gpu_message *msg);
/* Copies `count` points of query `query` from `host` to the key's points first..first+count. */
int cuzk_gpu_key_upload(cuzk_gpu_context *ctx, cuzk_gpu_key *key, uint32_t query, size_t first,
                        size_t count, const void *host, const cuzk_gpu_staging *staging,
                        cuzk_gpu_message *msg);
/* Copies `count` points of query `query` as a params file holds them (`file_bytes`:
 * uncompressed, big-endian, bellperson's format) to the key's points first..first+count and
 * decodes them there (cuda/key_decode.cuh); *first_bad is the index in the part of the first
 * point the host's reader would refuse, or SIZE_MAX when there is none. */
int cuzk_gpu_key_upload_file_points(cuzk_gpu_context *ctx, cuzk_gpu_key *key, uint32_t query,
                                    size_t first, size_t count, const void *file_bytes,
                                    const cuzk_gpu_staging *staging, size_t *first_bad,
                                    cuzk_gpu_message *msg);
/* Frees the key: its device memory too while the context it was made in lives
 * (`context_lives`); after that context's reset (cuzk_gpu_device_reset) the memory went with
 * it, its addresses may be the new context's, and only the host record is freed. */
void cuzk_gpu_key_free(cuzk_gpu_key *key, int context_lives);

/* The coefficients h of (A·B − C)/Z over the domain of 2^lg_domain into the NTT buffers of
 * `set`, A, B, C given by their n ≤ 2^lg_domain evaluations (Montgomery scalars). */
int cuzk_gpu_quotient(cuzk_gpu_context *ctx, uint32_t set, const void *a, const void *b,
                      const void *c, size_t n, uint32_t lg_domain, const cuzk_gpu_staging *staging,
                      cuzk_gpu_h_times *times, cuzk_gpu_message *msg);

/* Copies a circuit's matrices to the device; *out owns them until cuzk_gpu_shape_free, and
 * *bytes says how much device memory they take. */
int cuzk_gpu_shape_upload(cuzk_gpu_context *ctx, const cuzk_gpu_shape_host *shape,
                          const cuzk_gpu_staging *staging, cuzk_gpu_shape **out, uint64_t *bytes,
                          cuzk_gpu_message *msg);
/* Frees the shape (`context_lives` as for cuzk_gpu_key_free). */
void cuzk_gpu_shape_free(cuzk_gpu_shape *shape, int context_lives);

/* cuzk_gpu_quotient with A, B, C evaluated on the device: A·z, B·z, C·z from the resident
 * `shape` and the compact witness z. */
int cuzk_gpu_quotient_r1cs(cuzk_gpu_context *ctx, uint32_t set, const cuzk_gpu_shape *shape,
                           const cuzk_gpu_witness *witness, uint32_t lg_domain,
                           const cuzk_gpu_staging *staging, cuzk_gpu_h_times *times,
                           cuzk_gpu_message *msg);

/* The witness z into the device copy of `set` without evaluating the matrices (a circuit whose
 * matrices do not fit on the device: a, b, c come from the host), for cuzk_gpu_witness_msm. */
int cuzk_gpu_witness_upload(cuzk_gpu_context *ctx, uint32_t set, const cuzk_gpu_witness *witness,
                            const cuzk_gpu_staging *staging, uint64_t *h2d_ns,
                            cuzk_gpu_message *msg);

/* The MSM implementations (cuzk's own, cuda/msm.cuh, and sppark's). CUZK_GPU_MSM_CUZK_AFFINE
 * is cuzk's with the G1 bucket sums begun by batched-affine rounds (cuda/affine_rounds.cuh);
 * G2 MSMs and the small proofs' MSMs at once take cuzk's as under CUZK_GPU_MSM_CUZK. */
enum {
    CUZK_GPU_MSM_CUZK = 0,
    CUZK_GPU_MSM_SPPARK = 1,
    CUZK_GPU_MSM_CUZK_AFFINE = 2,
};

/* Σ hᵢ·Pᵢ over i in [first, first + count): h the coefficients the last quotient call of
 * `set` left for the domain of 2^lg_domain, P the 2^lg_domain − 1 points of the H query; by
 * `implementation`'s MSM (CUZK_GPU_MSM_*; cuzk's takes at most 2^26 points). */
int cuzk_gpu_h_msm(cuzk_gpu_context *ctx, uint32_t set, uint32_t lg_domain,
                   const cuzk_gpu_points *h_points, size_t first, size_t count,
                   uint32_t implementation, cuzk_gpu_g1 *out, cuzk_gpu_message *msg);

/* Σ Pᵢ over the points whose bit is set in bitmap (bit i of word i/32). */
int cuzk_gpu_batch_add(cuzk_gpu_context *ctx, const cuzk_gpu_points *points,
                       const uint32_t *bitmap, const cuzk_gpu_staging *staging,
                       cuzk_gpu_g1 *out, cuzk_gpu_message *msg);

/* Σ sᵢ·P_{indices[i]} over n scalars (canonical little-endian, 32 bytes each), by
 * `implementation`'s MSM (CUZK_GPU_MSM_*; cuzk's takes at most 2^26 points). With a
 * resident key the points are gathered on the device by `indices`, or, when indices is NULL
 * (dense: scalar i belongs to point i), the query's first n points are read in place; with
 * host points, `points->host` holds the n points already gathered and indices is unused. */
int cuzk_gpu_msm(cuzk_gpu_context *ctx, const cuzk_gpu_points *points, const uint32_t *indices,
                 const void *scalars, size_t n, uint32_t implementation, cuzk_gpu_g1 *out,
                 cuzk_gpu_message *msg);

/* The same two operations in G2 (the B_G2 query). */
int cuzk_gpu_batch_add_g2(cuzk_gpu_context *ctx, const cuzk_gpu_points *points,
                          const uint32_t *bitmap, const cuzk_gpu_staging *staging,
                          cuzk_gpu_g2 *out, cuzk_gpu_message *msg);
int cuzk_gpu_msm_g2(cuzk_gpu_context *ctx, const cuzk_gpu_points *points,
                    const uint32_t *indices, const void *scalars, size_t n,
                    uint32_t implementation, cuzk_gpu_g2 *out, cuzk_gpu_message *msg);

/* Σ sᵢ·Pᵢ over the first points->n points of a query (resident, read in place, or sent from the
 * host), sᵢ the witness values `scalars` names in the device copy of `set`: no scalar crosses
 * PCIe; by `implementation`'s MSM (CUZK_GPU_MSM_*; cuzk's takes at most 2^26 points). A
 * selection is gathered into the NTT buffers of `set`: call after H's MSM. G1 and G2 (B_G2). */
int cuzk_gpu_witness_msm(cuzk_gpu_context *ctx, uint32_t set, const cuzk_gpu_points *points,
                         const cuzk_gpu_witness_scalars *scalars, uint32_t implementation,
                         const cuzk_gpu_staging *staging, cuzk_gpu_g1 *out,
                         cuzk_gpu_message *msg);
int cuzk_gpu_witness_msm_g2(cuzk_gpu_context *ctx, uint32_t set, const cuzk_gpu_points *points,
                            const cuzk_gpu_witness_scalars *scalars, uint32_t implementation,
                            const cuzk_gpu_staging *staging, cuzk_gpu_g2 *out,
                            cuzk_gpu_message *msg);


/* Σ sᵢ·Pᵢ over the points->n points of a resident G1 query, sᵢ the witness values `scalars`
 * names in the device copy of `set` (as cuzk_gpu_witness_msm), split by their classes, found on
 * the device (cuda/witness_classes.cuh): the points whose scalar is 1 added up by batch
 * addition when there are split_min_ones of them or more (and any), else taken into the tail
 * MSM with the full-width scalars; by cuzk's MSM (CUZK_GPU_MSM_CUZK or
 * CUZK_GPU_MSM_CUZK_AFFINE). times: the classes', the batch addition's and the tail MSM's
 * device time (ns). */
int cuzk_gpu_classified_witness_msm(cuzk_gpu_context *ctx, uint32_t set,
                                    const cuzk_gpu_points *points,
                                    const cuzk_gpu_witness_scalars *scalars,
                                    uint64_t split_min_ones, uint32_t implementation,
                                    const cuzk_gpu_staging *staging, cuzk_gpu_g1 *out,
                                    uint64_t times[3], cuzk_gpu_message *msg);

/* B_G1 and B_G2 (points[0], points[1]: resident, as many points) over B's scalars, as
 * cuzk_gpu_classified_witness_msm (B_G2 in G2) with their classes found once: the ones by batch
 * addition whenever there are any. times: the classes' device time, B_G1's batch addition and
 * tail, B_G2's batch addition and tail (ns). */
int cuzk_gpu_classified_b_msms(cuzk_gpu_context *ctx, uint32_t set,
                               const cuzk_gpu_points points[2],
                               const cuzk_gpu_witness_scalars *scalars,
                               uint32_t implementation, const cuzk_gpu_staging *staging,
                               cuzk_gpu_g1 *b_g1, cuzk_gpu_g2 *b_g2, uint64_t times[5],
                               cuzk_gpu_message *msg);

/* A query's selection of z (scalars: selected and selected_offsets, for a query of npoints)
 * checked and copied to the device, for every call whose witness and query it fits (the calls
 * of one circuit shape): *out owns it until cuzk_gpu_selection_free, *bytes of device memory. */
int cuzk_gpu_selection_upload(cuzk_gpu_context *ctx, const cuzk_gpu_witness_scalars *scalars,
                              size_t npoints, const cuzk_gpu_staging *staging,
                              cuzk_gpu_selection **out, uint64_t *bytes, cuzk_gpu_message *msg);
/* Frees the selection (`context_lives` as for cuzk_gpu_key_free). */
void cuzk_gpu_selection_free(cuzk_gpu_selection *selection, int context_lives);

/* H, L, A, B_G1 and B_G2 (points[0..4]) at the same time by cuzk's MSM, each on a stream of
 * its own, for a circuit whose witness z the last quotient call of `set` left there with H's
 * coefficients (domain 2^lg_domain: points[0].n must be 2^lg_domain − 1). scalars[0..2] are L's,
 * A's and B's (B_G1 and B_G2 both take B's; their selections go to memory of their own, the
 * NTT buffers being H's scalars). times: each MSM's own device time (H, L, A, B_G1, B_G2), 0
 * (no batch addition), then the wall time of them all. Every query has 1 to 2^26 points; B_G1
 * and B_G2 as many. */
int cuzk_gpu_witness_msms_at_once(cuzk_gpu_context *ctx, uint32_t set, uint32_t lg_domain,
                                  const cuzk_gpu_points points[5],
                                  const cuzk_gpu_witness_scalars scalars[3],
                                  const cuzk_gpu_staging *staging, cuzk_gpu_g1 g1_out[4],
                                  cuzk_gpu_g2 *g2_out, uint64_t times[7], cuzk_gpu_message *msg);

/* A split witness's MSMs in flight (cuzk_gpu_split_witness_start). */
typedef struct cuzk_gpu_split_witness cuzk_gpu_split_witness;

/* Starts L, A, B_G1 and B_G2 (points[0..3], every one a resident key's) by cuzk's MSM
 * (`implementation` CUZK_GPU_MSM_CUZK or _CUZK_AFFINE), each on a stream of its own, split as
 * queries[0..3] say: queued, not waited for, so that the quotient stage runs beside them.
 * The bitmaps, indices and scalars are copied before it returns. *out: the MSMs in flight,
 * for cuzk_gpu_split_msms_at_once; freed by cuzk_gpu_split_witness_free. The key's points
 * must stay resident until then. */
int cuzk_gpu_split_witness_start(cuzk_gpu_context *ctx, const cuzk_gpu_points points[4],
                                 const cuzk_gpu_split_query queries[4], uint32_t implementation,
                                 cuzk_gpu_split_witness **out, cuzk_gpu_message *msg);
/* Frees the MSMs in flight, their device memory after their kernels are done; after its
 * context's reset (context_lives 0) only forgotten. */
void cuzk_gpu_split_witness_free(cuzk_gpu_split_witness *witness, int context_lives);

/* H's MSM (h_points, a resident key's) by cuzk's MSM with the coefficients the last quotient
 * call of `set` left (domain 2^lg_domain: h_points->n must be 2^lg_domain − 1), while the
 * split witness's MSMs `witness` run; then waits for them all. g1_out: H, L, A, B_G1; times:
 * each MSM's own device time (H, then the tails of L, A, B_G1, B_G2), the batch additions'
 * together, then the wall time from H's launch until every sum is in. */
int cuzk_gpu_split_msms_at_once(cuzk_gpu_context *ctx, uint32_t set, uint32_t lg_domain,
                                const cuzk_gpu_points *h_points, cuzk_gpu_split_witness *witness,
                                uint32_t implementation, cuzk_gpu_g1 g1_out[4],
                                cuzk_gpu_g2 *g2_out, uint64_t times[7], cuzk_gpu_message *msg);

/* Σ sᵢ·Pᵢ by cuzk's own MSM (at most 2^30 points; digits of digit_bits, 8 to 22, or 0 for
 * the width it picks for the size) or sppark's, on device copies of the points->n points and
 * of the scalars from the host (Montgomery form when mont is non-zero); msm_ns gets the MSM's
 * own wall time, its inputs already on the device. For tests and benchmarks that hold the two
 * against each other. The H query of a resident key with an H table (cuzk_gpu_key_build_h_table)
 * is summed over its table by cuzk's MSM when digit_bits is 0. */
int cuzk_gpu_msm_by(cuzk_gpu_context *ctx, const cuzk_gpu_points *points, const void *scalars,
                    int mont, uint32_t implementation, uint32_t digit_bits, cuzk_gpu_g1 *out,
                    uint64_t *msm_ns, cuzk_gpu_message *msg);
int cuzk_gpu_msm_by_g2(cuzk_gpu_context *ctx, const cuzk_gpu_points *points, const void *scalars,
                       int mont, uint32_t implementation, uint32_t digit_bits, cuzk_gpu_g2 *out,
                       uint64_t *msm_ns, cuzk_gpu_message *msg);

/* The host check of cuda/witness_classes.cuh: the classes of a query of npoints whose scalars
 * `scalars` selects from the z_len host values z (Montgomery form, 32 bytes each), by the steps
 * the device runs, on the host. counts: the scalars 1, the full-width ones, and 1 when the ones
 * are split off (split_min_ones or more of them, and any); then bitmap (⌈npoints/32⌉ words)
 * holds their points; the tail, full-width scalars and (not split) the ones, goes to
 * tail_indices and tail_values (Montgomery, 32 bytes each), room for npoints each. */
int cuzk_gpu_witness_classes_check(const void *z, const cuzk_gpu_witness_scalars *scalars,
                                   size_t npoints, uint64_t split_min_ones, uint64_t counts[3],
                                   uint32_t *bitmap, uint32_t *tail_indices, void *tail_values,
                                   cuzk_gpu_message *msg);

/* The host check of the batched-affine rounds (cuda/affine_rounds.cuh), no device needed:
 * `rounds` rounds over m entries sorted by key (keys[i] <= none; entries[i] a point's index
 * below npoints, negated by bit 31; `none` keys last, never added) of the G1 points (blst_p1_affine),
 * run by the same steps as on the device; then sums[k], for every key k < none, is the sum of
 * the reduced list's points of key k. For the tests. */
int cuzk_gpu_affine_rounds_check(const void *points, size_t npoints, const uint32_t *keys,
                                 const uint32_t *entries, size_t m, uint32_t none,
                                 uint32_t rounds, cuzk_gpu_g1 *sums, cuzk_gpu_message *msg);

#ifdef __cplusplus
}
#endif

#endif
