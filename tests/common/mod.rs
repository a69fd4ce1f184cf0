//! Shared by the integration tests: the 2KiB fixtures (random-setup parameters, made once by
//! `cuzk-fixtures params` or scripts/test.sh; a sector sealed fresh for every test process, and
//! for the PoSt tests three sealed sectors with their vanilla proofs), filecoin-proofs' own
//! verifiers, and thin wrappers over the C ABI.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use cuzk::error::Status;
use cuzk::ffi::*;
use cuzk::internals::{ProofJob, SynthesisPath, SynthesizedCircuit};
use cuzk::timings::Timings;
use cuzk_tools::fixtures::{
    default_test_params_dir, make_post_fixture, make_update_fixture, registered_proof_for, seal_random_sector, PostFixture, SealedSector,
    UpdateFixture,
};
use filecoin_proofs_api::post::{verify_window_post, verify_winning_post};
use filecoin_proofs_api::{PublicReplicaInfo, SectorId};
use rand::SeedableRng;

pub struct Fixture {
    pub params_dir: PathBuf,
    pub c1_json: Vec<u8>,
    pub sector: SealedSector,
}

/// The 2KiB fixture of this test process. Fails (never skips) when the parameters are
/// missing: CPU tests must run everywhere.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let params_dir = default_test_params_dir();
        let has_params = std::fs::read_dir(&params_dir)
            .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().ends_with(".params")))
            .unwrap_or(false);
        assert!(
            has_params,
            "no test parameters in {}: run `scripts/test.sh` or `cuzk-fixtures params --sector-size 2KiB` first",
            params_dir.display()
        );
        // filecoin-proofs' own verifier (used as the independent check) reads this once.
        if std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").as_deref() != Some(params_dir.as_os_str()) {
            std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params_dir);
        }
        let work = std::env::temp_dir().join(format!("cuzk-test-seal-{}", std::process::id()));
        let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
        let sector_id = rand::Rng::gen_range(&mut rng, 1..1_000_000);
        let (c1_json, sector) =
            seal_random_sector(registered_proof_for("2KiB").unwrap(), 1000, sector_id, &work, &mut rng).expect("sealing a 2KiB sector");
        let _ = std::fs::remove_dir_all(&work);
        Fixture { params_dir, c1_json, sector }
    })
}

/// Three sealed 2KiB sectors (partition 0 full, partition 1 short) and their vanilla proofs,
/// made once per test process.
pub fn post_fixture() -> &'static PostFixture {
    static FIXTURE: OnceLock<PostFixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let params = default_test_params_dir();
        // filecoin-proofs' own verifier (the independent check) reads this once.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
        let work = std::env::temp_dir().join(format!("cuzk-test-post-{}", std::process::id()));
        let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
        let fixture = make_post_fixture("2KiB", 1000, 3, &work, &mut rng).expect("2KiB PoSt fixture");
        let _ = std::fs::remove_dir_all(&work);
        fixture
    })
}

/// A CC sector ([`update_sector_size`], 2KiB by default) updated with random data and its update
/// vanilla proofs, made once per test process.
pub fn update_fixture() -> &'static UpdateFixture {
    static FIXTURE: OnceLock<UpdateFixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let params = default_test_params_dir();
        // filecoin-proofs' own verifier (the independent check) reads this once.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
        let work = std::env::temp_dir().join(format!("cuzk-test-update-{}", std::process::id()));
        let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
        let size = update_sector_size();
        let fixture = make_update_fixture(&size, 1000, &work, &mut rng).unwrap_or_else(|e| panic!("{size} update fixture: {e:#}"));
        let _ = std::fs::remove_dir_all(&work);
        fixture
    })
}

/// The sector size of the update fixture: `CUZK_TEST_UPDATE_SECTOR_SIZE`, 2KiB by default (the
/// GPU machine also runs the GPU update test at 8MiB, whose parameters it makes:
/// `scripts/gpu-run.sh update-8m`).
pub fn update_sector_size() -> String {
    std::env::var("CUZK_TEST_UPDATE_SECTOR_SIZE").unwrap_or_else(|_| "2KiB".to_string())
}

/// filecoin-proofs-api's `verify_empty_sector_update_proof` of the update fixture's statement
/// with `comms` (comm_r_old, comm_r_new, comm_d_new) in place of its own.
pub fn filecoin_verify_update(comms: [[u8; 32]; 3], proof: &[u8]) -> bool {
    let f = update_fixture();
    let [old, new, d] = comms;
    filecoin_proofs_api::update::verify_empty_sector_update_proof(f.registered_proof, proof, old, new, d)
        .expect("filecoin-proofs verify_empty_sector_update_proof")
}

/// (sector id, comm_r) of every WindowPoSt sector of the PoSt fixture, in partition order.
pub fn all_window_sectors() -> Vec<(u64, [u8; 32])> {
    post_fixture()
        .window
        .partitions
        .iter()
        .flat_map(|p| p.sectors.iter().map(|s| (s.sector_id, s.comm_r)))
        .collect()
}

/// filecoin-proofs-api's `verify_window_post` of a merged proof over every sector of the PoSt
/// fixture.
pub fn filecoin_verify_window(randomness: &[u8; 32], proof: &[u8]) -> bool {
    let f = post_fixture();
    let replicas: BTreeMap<SectorId, PublicReplicaInfo> = all_window_sectors()
        .into_iter()
        .map(|(id, comm_r)| (SectorId::from(id), PublicReplicaInfo::new(f.window.registered_proof, comm_r)))
        .collect();
    let proofs = [(f.window.registered_proof, proof)];
    verify_window_post(randomness, &proofs, &replicas, f.prover_id).expect("filecoin-proofs verify_window_post")
}

pub fn filecoin_verify_winning(randomness: &[u8; 32], proof: &[u8]) -> bool {
    let f = post_fixture();
    let sector = &f.winning.sectors[0];
    let replicas = BTreeMap::from([(
        SectorId::from(sector.sector_id),
        PublicReplicaInfo::new(f.winning.registered_proof, sector.comm_r),
    )]);
    verify_winning_post(randomness, proof, &replicas, f.prover_id).expect("filecoin-proofs verify_winning_post")
}

/// A C-ABI engine handle on the fixture's parameters.
pub struct Engine(pub *mut cuzk_engine);

// SAFETY: the engine behind the handle is Sync; the handle is only freed in Drop.
unsafe impl Send for Engine {}
unsafe impl Sync for Engine {}

impl Drop for Engine {
    fn drop(&mut self) {
        cuzk_engine_free(self.0);
    }
}

pub fn c_config(dir: &CStr) -> cuzk_config {
    let mut config = cuzk_config {
        struct_size: std::mem::size_of::<cuzk_config>() as u32,
        num_threads: 0,
        cpu_only: false,
        self_verify: false,
        param_cache_dir: std::ptr::null(),
        gpu_key_memory_budget: 0,
        pinned_pool_bytes: 0,
        host_memory_budget: 0,
        devices: std::ptr::null(),
        devices_len: 0,
        proving_lanes: 0,
        idle_release_ms: 0,
        idle_keep_post_keys: false,
        shape_cache_dir: std::ptr::null(),
        malloc_arena_max: 0,
        gpu_h_msm_chunk: 0,
    };
    assert_eq!(cuzk_config_default(&mut config, std::ptr::null_mut()), Status::Ok);
    config.param_cache_dir = dir.as_ptr();
    config
}

pub fn engine_for(dir: &std::path::Path) -> Result<Engine, (Status, String)> {
    let dir = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    let config = c_config(&dir);
    let mut engine = std::ptr::null_mut();
    let mut err = std::ptr::null_mut();
    let status = cuzk_engine_new(&config, &mut engine, &mut err);
    if status == Status::Ok {
        Ok(Engine(engine))
    } else {
        Err(take_error(err))
    }
}

pub fn engine() -> Engine {
    engine_for(&fixture().params_dir).expect("engine")
}

/// `cuzk_engine_status` through the C ABI, parsed.
pub fn status_json(engine: &Engine) -> serde_json::Value {
    let mut json = std::ptr::null_mut();
    let mut err = std::ptr::null_mut();
    assert_eq!(cuzk_engine_status(engine.0, &mut json, &mut err), Status::Ok, "{:?}", take_error(err));
    // SAFETY: a cuzk_bytes from the library, freed below.
    let value = unsafe { serde_json::from_slice(std::slice::from_raw_parts((*json).data, (*json).len)) }.expect("status is JSON");
    cuzk_bytes_free(json);
    value
}

/// A `cuzk_engine_memory_estimate*` call (`call`) on `engine` with a current output struct.
pub fn c_estimate(
    engine: &Engine,
    call: impl FnOnce(*const cuzk_engine, *mut cuzk_memory_estimate, *mut *mut cuzk_error) -> Status,
) -> Result<cuzk_memory_estimate, (Status, String)> {
    let mut out = cuzk_memory_estimate {
        struct_size: std::mem::size_of::<cuzk_memory_estimate>() as u32,
        partitions: 0,
        host_resident_bytes: 0,
        host_call_bytes: 0,
        device_resident_bytes: 0,
        device_call_bytes: 0,
    };
    let mut err = std::ptr::null_mut();
    match call(engine.0, &mut out, &mut err) {
        Status::Ok => Ok(out),
        _ => Err(take_error(err)),
    }
}

/// Status and message of an error object, which is freed.
pub fn take_error(err: *mut cuzk_error) -> (Status, String) {
    assert!(!err.is_null(), "a failing call must return an error object");
    let status = cuzk_error_status(err);
    let message = unsafe { CStr::from_ptr(cuzk_error_message(err)) }.to_string_lossy().into_owned();
    cuzk_error_free(err);
    (status, message)
}

pub struct Proved {
    pub proof: Vec<u8>,
    pub timings: Timings,
}

/// `cuzk_seal_commit_phase2` through the C ABI.
pub fn prove(
    engine: &Engine,
    c1_json: &[u8],
    sector_id: u64,
    prover_id: &[u8; 32],
    options: Option<&cuzk_prove_options>,
) -> Result<Proved, (Status, String)> {
    let mut proof = std::ptr::null_mut();
    let mut timings = Timings {
        struct_size: std::mem::size_of::<Timings>() as u32,
        ..Default::default()
    };
    let mut err = std::ptr::null_mut();
    let status = cuzk_seal_commit_phase2(
        engine.0,
        c1_json.as_ptr(),
        c1_json.len(),
        sector_id,
        prover_id.as_ptr(),
        options.map_or(std::ptr::null(), |o| o as *const _),
        &mut proof,
        &mut timings,
        &mut err,
    );
    if status != Status::Ok {
        assert!(proof.is_null(), "no proof on failure");
        let (s, m) = take_error(err);
        assert_eq!(s, status);
        return Err((s, m));
    }
    assert!(err.is_null());
    let bytes = unsafe { std::slice::from_raw_parts((*proof).data, (*proof).len) }.to_vec();
    cuzk_bytes_free(proof);
    Ok(Proved { proof: bytes, timings })
}

/// `cuzk_verify_seal` through the C ABI.
pub fn verify(engine: &Engine, s: &SealedSector, proof: &[u8]) -> Result<bool, (Status, String)> {
    verify_on(engine.0, s, proof)
}

/// `cuzk_verify_seal` with `engine` (NULL: without an engine).
pub fn verify_on(engine: *const cuzk_engine, s: &SealedSector, proof: &[u8]) -> Result<bool, (Status, String)> {
    let mut valid = false;
    let mut err = std::ptr::null_mut();
    let registered = seal_proof_to_abi(s.registered_proof);
    let status = cuzk_verify_seal(
        engine,
        registered,
        s.comm_r.as_ptr(),
        s.comm_d.as_ptr(),
        s.prover_id.as_ptr(),
        s.sector_id,
        s.ticket.as_ptr(),
        s.seed.as_ptr(),
        proof.as_ptr(),
        proof.len(),
        &mut valid,
        &mut err,
    );
    if status == Status::Ok {
        Ok(valid)
    } else {
        Err(take_error(err))
    }
}

/// filecoin-proofs-api's own `verify_seal` (the independent check).
pub fn filecoin_verify(s: &SealedSector, proof: &[u8]) -> bool {
    s.verify_with_filecoin_proofs(proof).expect("filecoin-proofs verify_seal")
}

/// Equality of two synthesized circuits, field by field first so that a failure names the
/// first differing row or variable instead of printing megabytes.
pub fn assert_same(ours: &SynthesizedCircuit, theirs: &SynthesizedCircuit, what: &str) {
    let (a, b, c) = ours.evaluated().expect("our products evaluated on the host");
    let (their_a, their_b, their_c) = theirs.evaluated().expect("synthesis evaluates a, b, c");
    let vectors = [
        ("a", a, their_a),
        ("b", b, their_b),
        ("c", c, their_c),
        ("input_assignment", &ours.input_assignment[..], &theirs.input_assignment[..]),
        ("aux_assignment", &ours.aux_assignment[..], &theirs.aux_assignment[..]),
    ];
    for (name, x, y) in vectors {
        assert_eq!(x.len(), y.len(), "{what}: length of {name}");
        assert_eq!(
            x.iter().zip(y.iter()).position(|(p, q)| p != q),
            None,
            "{what}: first difference in {name}"
        );
    }
    let densities = [
        ("a_aux_density", &ours.a_aux_density, &theirs.a_aux_density),
        ("b_input_density", &ours.b_input_density, &theirs.b_input_density),
        ("b_aux_density", &ours.b_aux_density, &theirs.b_aux_density),
    ];
    for (name, x, y) in densities {
        assert!(
            x == y,
            "{what}: {name}: {} of {} set, synthesis {} of {}",
            x.count_ones(),
            x.len(),
            y.count_ones(),
            y.len()
        );
    }
    assert!(ours == theirs, "{what}: synthesized circuits differ");
}

/// Partition `k` of a job on the split path (its shape, its witness: native where the kind has
/// one, as a PoSt's slots in `kinds::poseidon`) gives classic synthesis' result
/// (filecoin-proofs' gadgets) value for value; returns both times.
pub fn check_job_split_path(job: &dyn ProofJob, k: usize, what: &str) -> (Duration, Duration) {
    let shape = Arc::new(job.extract_shape().unwrap());
    let mut t = Timings::default();
    let start = Instant::now();
    let theirs = job.synthesize(k, &SynthesisPath::Classic, None, &mut t).unwrap();
    let classic = start.elapsed();
    let start = Instant::now();
    let path = SynthesisPath::Shape {
        shape,
        defer_products: false,
    };
    let ours = job.synthesize(k, &path, None, &mut t).unwrap();
    let split = start.elapsed();
    assert_same(&ours, &theirs, what);
    (classic, split)
}
