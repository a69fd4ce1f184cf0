/* prove_c2: prove a Filecoin PoRep commit phase 2 through cuzk's C ABI, print the per-phase
 * timings, verify the proof, and exit non-zero on any failure.
 *
 *   prove_c2 C1_JSON_FILE SECTOR_NUMBER MINER_ID [PARAM_CACHE_DIR]
 *
 * MINER_ID is the miner actor id (1000 for f01000); the prover id is derived from it the way
 * Filecoin does (the ID address payload, zero-padded to 32 bytes). PARAM_CACHE_DIR defaults to
 * FIL_PROOFS_PARAMETER_CACHE. */

#include "example_util.h"

int main(int argc, char **argv) {
    program = "prove_c2";
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
