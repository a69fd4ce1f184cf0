/* prove_update: prove a Filecoin SnapDeals update (empty-sector update) through cuzk's C ABI,
 * print the per-phase timings, verify the proof, and exit non-zero on any failure.
 *
 *   prove_update FIXTURE_DIR REGISTERED_UPDATE_PROOF [PARAM_CACHE_DIR]
 *
 * FIXTURE_DIR is what `cuzk-fixtures update` writes: comms.bin (comm_r_old, comm_r_new and
 * comm_d_new, 32 bytes each) and vanilla-0.bin, vanilla-1.bin, ... (the partition vanilla
 * proofs, as filecoin-ffi's GenerateUpdateVanillaProofs returns them). REGISTERED_UPDATE_PROOF
 * is go-state-types' number (0 for 2KiB). PARAM_CACHE_DIR defaults to
 * FIL_PROOFS_PARAMETER_CACHE. */

#include "example_util.h"

int main(int argc, char **argv) {
    program = "prove_update";
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s FIXTURE_DIR REGISTERED_UPDATE_PROOF [PARAM_CACHE_DIR]\n", argv[0]);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/comms.bin", argv[1]);
    size_t comms_len = 0;
    unsigned char *comms = read_file(path, &comms_len);
    if (!comms) return 1;
    if (comms_len != 96) {
        fprintf(stderr, "prove_update: %s is %zu bytes, not 96\n", path, comms_len);
        return 1;
    }
    unsigned char *vanilla[CUZK_MAX_UPDATE_PARTITIONS];
    cuzk_byte_slice slices[CUZK_MAX_UPDATE_PARTITIONS];
    size_t partitions = 0;
    for (; partitions < CUZK_MAX_UPDATE_PARTITIONS; partitions++) {
        snprintf(path, sizeof path, "%s/vanilla-%zu.bin", argv[1], partitions);
        FILE *probe = fopen(path, "rb");
        if (!probe) break;
        fclose(probe);
        vanilla[partitions] = read_file(path, &slices[partitions].len);
        if (!vanilla[partitions]) return 1;
        slices[partitions].data = vanilla[partitions];
    }

    cuzk_error *err = NULL;
    cuzk_config config = CUZK_SIZED(cuzk_config);
    cuzk_status status = cuzk_config_default(&config, &err);
    if (status != CUZK_STATUS_OK) return fail("cuzk_config_default", status, err);
    if (argc == 4) config.param_cache_dir = argv[3];
    cuzk_engine *engine = NULL;
    status = cuzk_engine_new(&config, &engine, &err);
    if (status != CUZK_STATUS_OK) return fail("cuzk_engine_new", status, err);

    uint32_t proof_type = (uint32_t)strtoul(argv[2], NULL, 10);
    cuzk_update_request request = {
        .registered_update_proof = proof_type,
        .comm_r_old = comms,
        .comm_r_new = comms + 32,
        .comm_d_new = comms + 64,
        .vanilla_proofs = slices,
        .vanilla_proofs_len = partitions,
    };
    printf("cuzk %s: update proof (registered update proof %u, %zu partition vanilla proof(s))\n", cuzk_version(),
           proof_type, partitions);
    cuzk_bytes *proof = NULL;
    cuzk_timings timings = CUZK_SIZED(cuzk_timings);
    status = cuzk_generate_update_proof(engine, &request, NULL, &proof, &timings, &err);
    if (status != CUZK_STATUS_OK) return fail("cuzk_generate_update_proof", status, err);
    print_timings(&timings);

    bool valid = false;
    status = cuzk_verify_update_proof(engine, proof_type, comms, comms + 32, comms + 64, proof->data, proof->len, &valid,
                                      &err);
    if (status != CUZK_STATUS_OK) return fail("cuzk_verify_update_proof", status, err);
    printf("proof: %zu bytes, verify_update_proof: %s\n", proof->len, valid ? "valid" : "INVALID");

    cuzk_bytes_free(proof);
    cuzk_engine_free(engine);
    for (size_t k = 0; k < partitions; k++) free(vanilla[k]);
    free(comms);
    return valid ? 0 : 1;
}
