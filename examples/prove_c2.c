/* prove_c2: prove a Filecoin PoRep commit phase 2 through cuzk's C ABI, print the per-phase
 * timings, verify the proof, and exit non-zero on any failure.
 *
 *   prove_c2 C1_JSON_FILE SECTOR_NUMBER MINER_ID [PARAM_CACHE_DIR]
 *
 * MINER_ID is the miner actor id (1000 for f01000); the prover id is derived from it the way
 * Filecoin does (the ID address payload, zero-padded to 32 bytes). PARAM_CACHE_DIR defaults to
 * FIL_PROOFS_PARAMETER_CACHE. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuzk.h"

static int fail(const char *what, cuzk_status status, cuzk_error *err) {
    fprintf(stderr, "prove_c2: %s failed (status %d): %s\n", what, (int)status, cuzk_error_message(err));
    cuzk_error_free(err);
    return 1;
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "prove_c2: cannot open %s: %s\n", path, strerror(errno));
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
static void prover_id_from_miner(uint64_t miner, uint8_t out[32]) {
    memset(out, 0, 32);
    int i = 0;
    do {
        uint8_t byte = miner & 0x7f;
        miner >>= 7;
        out[i++] = miner ? (byte | 0x80) : byte;
    } while (miner);
}

static void print_timings(const cuzk_timings *t) {
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

int main(int argc, char **argv) {
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: %s C1_JSON_FILE SECTOR_NUMBER MINER_ID [PARAM_CACHE_DIR]\n", argv[0]);
        return 2;
    }
    if (cuzk_abi_version() != CUZK_ABI_VERSION) {
        fprintf(stderr, "prove_c2: libcuzk ABI %u, header ABI %u\n", cuzk_abi_version(), CUZK_ABI_VERSION);
        return 1;
    }
    size_t c1_len = 0;
    unsigned char *c1 = read_file(argv[1], &c1_len);
    if (!c1) return 1;
    uint64_t sector = strtoull(argv[2], NULL, 10);
    uint8_t prover_id[32];
    prover_id_from_miner(strtoull(argv[3], NULL, 10), prover_id);

    cuzk_error *err = NULL;
    cuzk_c1_info info = CUZK_SIZED(cuzk_c1_info);
    cuzk_status status = cuzk_c1_info_parse(c1, c1_len, &info, &err);
    if (status != CUZK_STATUS_OK) return fail("reading the C1", status, err);

    cuzk_config config = CUZK_SIZED(cuzk_config);
    status = cuzk_config_default(&config, &err);
    if (status != CUZK_STATUS_OK) return fail("cuzk_config_default", status, err);
    if (argc == 5) config.param_cache_dir = argv[4];
    cuzk_engine *engine = NULL;
    status = cuzk_engine_new(&config, &engine, &err);
    if (status != CUZK_STATUS_OK) return fail("cuzk_engine_new", status, err);

    printf("cuzk %s: C2 of sector %" PRIu64 " (registered proof %u, %u partition(s))\n", cuzk_version(), sector,
           info.registered_proof, info.partitions);
    cuzk_bytes *proof = NULL;
    cuzk_timings timings = CUZK_SIZED(cuzk_timings);
    // Each partition's timings too: with several, one is synthesized while another is proven.
    cuzk_timings *partitions = calloc(info.partitions, sizeof *partitions);
    if (!partitions) return 1;
    for (uint32_t k = 0; k < info.partitions; k++) partitions[k].struct_size = sizeof *partitions;
    cuzk_prove_options options = CUZK_SIZED(cuzk_prove_options);
    options.partition_timings = partitions;
    options.partition_timings_len = info.partitions;
    status = cuzk_seal_commit_phase2(engine, c1, c1_len, sector, prover_id, &options, &proof, &timings, &err);
    if (status != CUZK_STATUS_OK) return fail("cuzk_seal_commit_phase2", status, err);
    print_timings(&timings);
    for (uint32_t k = 0; k < info.partitions; k++)
        printf("partition %d: synthesis %.3f ms, waited %.3f ms for proving, done after %.3f ms\n",
               partitions[k].partition_index, partitions[k].synthesis_ns / 1e6, partitions[k].proving_wait_ns / 1e6,
               partitions[k].total_ns / 1e6);
    free(partitions);

    bool valid = false;
    status = cuzk_verify_seal(engine, info.registered_proof, info.comm_r, info.comm_d, prover_id, sector, info.ticket,
                              info.seed, proof->data, proof->len, &valid, &err);
    if (status != CUZK_STATUS_OK) return fail("cuzk_verify_seal", status, err);
    printf("proof: %zu bytes, verify_seal: %s\n", proof->len, valid ? "valid" : "INVALID");

    cuzk_bytes_free(proof);
    cuzk_engine_free(engine);
    free(c1);
    return valid ? 0 : 1;
}
