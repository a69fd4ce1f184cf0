/* Helpers shared by the C examples: errors, reading a file, printing a call's timings. */
#ifndef CUZK_EXAMPLE_UTIL_H
#define CUZK_EXAMPLE_UTIL_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuzk.h"

/* The example's name, for its messages. */
static const char *program = "cuzk example";

static inline int fail(const char *what, cuzk_status status, cuzk_error *err) {
    fprintf(stderr, "%s: %s failed (status %d): %s\n", program, what, (int)status, cuzk_error_message(err));
    cuzk_error_free(err);
    return 1;
}

static inline unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open %s: %s\n", program, path, strerror(errno));
        return NULL;
    }
    unsigned char *buf = NULL;
    size_t cap = 0;
    *len = 0;
    for (;;) {
        if (*len == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            unsigned char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        size_t n = fread(buf + *len, 1, cap - *len, f);
        if (n == 0) break;
        *len += n;
    }
    fclose(f);
    return buf;
}

/* The payload of the ID address f0<miner>: the unsigned LEB128 varint of the id. */
static inline void prover_id_from_miner(uint64_t miner, uint8_t out[32]) {
    memset(out, 0, 32);
    int i = 0;
    do {
        uint8_t byte = miner & 0x7f;
        miner >>= 7;
        out[i++] = miner ? (byte | 0x80) : byte;
    } while (miner);
}

static inline void print_timings(const cuzk_timings *t) {
    /* Phases of cuzk_timings (tests/phases.rs checks the table against the library's list);
     * not shown: queue_wait, srs_upload, pin, shape_extract, shape_upload, witness_upload,
     * spmv_gpu. */
    const struct { const char *name; uint64_t ns; } rows[] = {
        {"input check", t->input_check_ns}, {"SRS load", t->srs_load_ns},
        {"synthesis", t->synthesis_ns},     {"proving wait", t->proving_wait_ns},
        {"prep_msm", t->prep_msm_ns},
        {"pin + H2D", t->pin_h2d_ns},       {"NTT (H)", t->ntt_ns},
        {"MSM H", t->msm_h_ns},             {"batch addition", t->batch_add_ns},
        {"MSM L", t->msm_l_ns},             {"MSM A", t->msm_a_ns},
        {"MSM B_G1", t->msm_b_g1_ns},       {"MSM B_G2", t->msm_b_g2_ns},
        {"assembly", t->assembly_ns},       {"self-verify", t->verify_ns},
    };
    printf("backend %s (device %d), %u partition(s), %" PRIu64 " constraints, domain 2^%u\n",
           t->backend == CUZK_BACKEND_KIND_GPU ? "GPU" : "CPU", t->device_index, t->partitions,
           t->num_constraints, t->domain_log2);
    printf("%-16s %12s %7s\n", "phase", "ms", "%");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        printf("%-16s %12.3f %6.1f%%\n", rows[i].name, rows[i].ns / 1e6, 100.0 * rows[i].ns / (double)t->total_ns);
    printf("%-16s %12.3f\n", "total", t->total_ns / 1e6);
}

#endif
