/* The C surface of cuzk's CUDA stages, called by src/backend/gpu.rs (internal: not part of
 * the public include/cuzk.h). Every function catches all C++ exceptions and returns a
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

/* Device-side durations of the H stage, from CUDA events. */
typedef struct {
    uint64_t h2d_ns;  /* a, b, c to the device */
    uint64_t ntt_ns;  /* 3 iNTT, 3 coset NTT, a·b − c, ÷Z, coset iNTT */
    uint64_t msm_ns;  /* MSM over the H points */
} cuzk_gpu_h_times;

typedef struct {
    char text[512];
} cuzk_gpu_message;

/* Number of CUDA devices this process can use (CUDA_VISIBLE_DEVICES applies). */
int cuzk_gpu_device_count(int *count, cuzk_gpu_message *msg);

/* Name and memory of a device. */
int cuzk_gpu_device_info(int device, char name[256], uint64_t *total_memory, cuzk_gpu_message *msg);

/* H = Σ hᵢ·Pᵢ where h are the coefficients of (A·B − C)/Z over the domain of 2^lg_domain,
 * A, B, C given by their n ≤ 2^lg_domain evaluations (Montgomery scalars), and P the
 * 2^lg_domain − 1 points of the H query. */
int cuzk_gpu_quotient_msm(int device, const void *a, const void *b, const void *c, size_t n,
                          uint32_t lg_domain, const void *h_points, cuzk_gpu_g1 *out,
                          cuzk_gpu_h_times *times, cuzk_gpu_message *msg);

/* Σ Pᵢ over the points whose bit is set in bitmap (bit i of word i/32). */
int cuzk_gpu_batch_add(int device, const void *points, size_t npoints, const uint32_t *bitmap,
                       cuzk_gpu_g1 *out, cuzk_gpu_message *msg);

/* Σ sᵢ·Pᵢ, scalars in canonical little-endian form (32 bytes each). */
int cuzk_gpu_msm(int device, const void *points, const void *scalars, size_t n, cuzk_gpu_g1 *out,
                 cuzk_gpu_message *msg);

/* The same two operations in G2 (the B_G2 query). */
int cuzk_gpu_batch_add_g2(int device, const void *points, size_t npoints, const uint32_t *bitmap,
                          cuzk_gpu_g2 *out, cuzk_gpu_message *msg);
int cuzk_gpu_msm_g2(int device, const void *points, const void *scalars, size_t n, cuzk_gpu_g2 *out,
                    cuzk_gpu_message *msg);

#ifdef __cplusplus
}
#endif

#endif
