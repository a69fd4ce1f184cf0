//! Bad input through the C ABI: every case gets its status and a useful message, and the
//! process stays alive. (Needs the test parameters only for the "wrong size" case's engine.)

mod common;

use std::ptr::{null, null_mut};

use common::*;
use cuzk::error::Status;
use cuzk::ffi::*;

fn expect_err(result: Result<Proved, (Status, String)>, status: Status, needle: &str) {
    match result {
        Ok(_) => panic!("expected {status:?}, got a proof"),
        Err((s, m)) => {
            assert_eq!(s, status, "message: {m}");
            assert!(
                m.to_lowercase().contains(&needle.to_lowercase()),
                "message {m:?} does not mention {needle:?}"
            );
        }
    }
}

#[test]
fn malformed_json_is_a_parse_error() {
    let f = fixture();
    let e = engine();
    let (id, prover) = (f.sector.sector_id, f.sector.prover_id);
    expect_err(prove(&e, b"", id, &prover, None), Status::ParseError, "empty");
    expect_err(
        prove(&e, &f.c1_json[..f.c1_json.len() / 2], id, &prover, None),
        Status::ParseError,
        "C1 JSON",
    );
    expect_err(prove(&e, b"\x00\xffgarbage{{", id, &prover, None), Status::ParseError, "C1 JSON");
    expect_err(
        prove(&e, br#"{"registered_proof":"StackedDrg2KiBV1_1"}"#, id, &prover, None),
        Status::ParseError,
        "missing field",
    );
}

#[test]
fn oversized_json_is_refused_without_parsing() {
    let f = fixture();
    let huge = vec![b' '; CUZK_MAX_C1_JSON_BYTES + 1];
    expect_err(prove(&engine(), &huge, 1, &f.sector.prover_id, None), Status::InvalidArgument, "limit");
    // Reading a C1's facts refuses it the same way.
    // SAFETY: cuzk_c1_info is plain integers and byte arrays; all zeros is a valid value.
    let mut info: cuzk_c1_info = unsafe { std::mem::zeroed() };
    info.struct_size = std::mem::size_of::<cuzk_c1_info>() as u32;
    let mut err = std::ptr::null_mut();
    let status = cuzk_c1_info_parse(huge.as_ptr(), huge.len(), &mut info, &mut err);
    assert_eq!(status, Status::InvalidArgument);
    let message = unsafe { std::ffi::CStr::from_ptr(cuzk_error_message(err)) }
        .to_string_lossy()
        .into_owned();
    assert!(message.contains("limit"), "{message}");
    cuzk_error_free(err);
}

#[test]
fn a_rejected_input_is_not_echoed_whole_in_the_message() {
    let f = fixture();
    // Under the size limit, but not a C1: serde quotes the whole string it rejects.
    let json = format!("\"{}\"", "a".repeat(3 << 20));
    match prove(&engine(), json.as_bytes(), 1, &f.sector.prover_id, None) {
        Ok(_) => panic!("a string proved"),
        Err((status, message)) => {
            assert_eq!(status, Status::ParseError, "{message}");
            assert!(message.len() < 2000, "a {} byte message", message.len());
            assert!(message.contains("bytes in all"), "{message}");
        }
    }
}

#[test]
fn c1_of_another_sector_size_than_its_registered_proof() {
    let f = fixture();
    let mut c1: serde_json::Value = serde_json::from_slice(&f.c1_json).unwrap();
    for other in [
        "StackedDrg8MiBV1_1",
        "StackedDrg512MiBV1",
        "StackedDrg32GiBV1_1",
        "StackedDrg64GiBV1_1_Feat_SyntheticPoRep",
    ] {
        c1["registered_proof"] = serde_json::json!(other);
        let mismatched = serde_json::to_vec(&c1).unwrap();
        expect_err(
            prove(&engine(), &mismatched, f.sector.sector_id, &f.sector.prover_id, None),
            Status::InvalidArgument,
            "byte sector",
        );
    }
    // The same sector size under another porep id: the C1's replica id was sealed with its own.
    for other in ["StackedDrg2KiBV1", "StackedDrg2KiBV1_1_Feat_SyntheticPoRep"] {
        c1["registered_proof"] = serde_json::json!(other);
        let relabelled = serde_json::to_vec(&c1).unwrap();
        expect_err(
            prove(&engine(), &relabelled, f.sector.sector_id, &f.sector.prover_id, None),
            Status::InvalidArgument,
            "registered proof",
        );
    }
    c1["registered_proof"] = serde_json::json!("StackedDrg2KiBV1_2_Feat_NonInteractivePoRep");
    let ni = serde_json::to_vec(&c1).unwrap();
    expect_err(
        prove(&engine(), &ni, f.sector.sector_id, &f.sector.prover_id, None),
        Status::InvalidArgument,
        "non-interactive",
    );
}

#[test]
fn null_pointers_are_reported_per_argument() {
    let f = fixture();
    let e = engine();
    let c1 = &f.c1_json;
    let prover = f.sector.prover_id;
    let mut proof = null_mut();
    let call = |engine: *const cuzk_engine, json: *const u8, prover: *const u8, proof: *mut *mut cuzk_bytes| {
        let mut err = null_mut();
        let status = cuzk_seal_commit_phase2(engine, json, c1.len(), 1, prover, null(), proof, null_mut(), &mut err);
        let (s, m) = take_error(err);
        assert_eq!(s, status);
        (s, m)
    };
    for (engine, json, prover_ptr, out, name) in [
        (null(), c1.as_ptr(), prover.as_ptr(), &mut proof as *mut _, "engine"),
        (e.0 as *const _, null(), prover.as_ptr(), &mut proof as *mut _, "c1_json"),
        (e.0 as *const _, c1.as_ptr(), null(), &mut proof as *mut _, "prover_id"),
        (e.0 as *const _, c1.as_ptr(), prover.as_ptr(), null_mut(), "proof_out"),
    ] {
        let (status, message) = call(engine, json, prover_ptr, out);
        assert_eq!(status, Status::NullArgument, "{name}: {message}");
        assert!(message.contains(name), "{message}");
    }
    // NULL error pointer: the status alone still comes back.
    assert_eq!(
        cuzk_seal_commit_phase2(null(), null(), 0, 0, null(), null(), null_mut(), null_mut(), null_mut()),
        Status::NullArgument
    );

    let mut valid = true;
    let s = &f.sector;
    let status = cuzk_verify_seal(
        e.0,
        5,
        s.comm_r.as_ptr(),
        null(),
        s.prover_id.as_ptr(),
        1,
        s.ticket.as_ptr(),
        s.seed.as_ptr(),
        c1.as_ptr(),
        1,
        &mut valid,
        null_mut(),
    );
    assert_eq!(status, Status::NullArgument);
    assert!(!valid);
    let status = cuzk_verify_seal(
        e.0,
        99,
        s.comm_r.as_ptr(),
        s.comm_d.as_ptr(),
        s.prover_id.as_ptr(),
        1,
        s.ticket.as_ptr(),
        s.seed.as_ptr(),
        c1.as_ptr(),
        1,
        &mut valid,
        null_mut(),
    );
    assert_eq!(status, Status::InvalidArgument, "unknown registered proof");
    assert_eq!(cuzk_engine_new(null(), null_mut(), null_mut()), Status::NullArgument);
    assert_eq!(cuzk_c1_info_parse(c1.as_ptr(), c1.len(), null_mut(), null_mut()), Status::NullArgument);
}

#[test]
fn struct_size_too_small_is_refused() {
    let f = fixture();
    let e = engine();
    let options = cuzk_prove_options {
        struct_size: 2,
        ..Default::default()
    };
    expect_err(
        prove(&e, &f.c1_json, 1, &f.sector.prover_id, Some(&options)),
        Status::InvalidArgument,
        "struct_size",
    );
}

#[test]
fn pinning_a_device_that_is_not_there_is_refused() {
    let f = fixture();
    let e = engine();
    let mut options = cuzk_prove_options {
        pin_device: true,
        device: 99,
        ..Default::default()
    };
    // Options are checked before the input (the sector id 1 does not match the C1).
    expect_err(
        prove(&e, &f.c1_json, 1, &f.sector.prover_id, Some(&options)),
        Status::InvalidArgument,
        "device 99",
    );
    // A caller compiled against the first layout (without pin_device) passes a smaller
    // struct_size: the fields past it are not read, so the input error comes first.
    options.struct_size = std::mem::offset_of!(cuzk_prove_options, pin_device) as u32;
    expect_err(
        prove(&e, &f.c1_json, 1, &f.sector.prover_id, Some(&options)),
        Status::InvalidArgument,
        "sector",
    );
}

#[test]
fn unknown_priority_is_refused_and_older_layouts_keep_the_default() {
    let f = fixture();
    let e = engine();
    let mut options = cuzk_prove_options {
        priority: 7,
        ..Default::default()
    };
    // Options are checked before the input (the sector id 1 does not match the C1).
    expect_err(
        prove(&e, &f.c1_json, 1, &f.sector.prover_id, Some(&options)),
        Status::InvalidArgument,
        "priority",
    );
    // A caller compiled before `priority` existed: the field is not read.
    options.struct_size = std::mem::offset_of!(cuzk_prove_options, priority) as u32;
    expect_err(
        prove(&e, &f.c1_json, 1, &f.sector.prover_id, Some(&options)),
        Status::InvalidArgument,
        "sector",
    );
}

/// A caller compiled against the first cuzk_config (without the GPU memory fields) passes a
/// smaller struct_size: accepted, the new fields keep their defaults; anything smaller than
/// that first layout is refused.
#[test]
fn config_of_the_first_layout_is_accepted() {
    let f = fixture();
    let dir = std::ffi::CString::new(f.params_dir.to_str().unwrap()).unwrap();
    let mut config = c_config(&dir);
    config.struct_size = std::mem::offset_of!(cuzk_config, gpu_key_memory_budget) as u32;
    config.gpu_key_memory_budget = 12345; // past struct_size: must not be read
    let mut engine = null_mut();
    let mut err = null_mut();
    let status = cuzk_engine_new(&config, &mut engine, &mut err);
    assert_eq!(status, Status::Ok, "{:?}", take_error(err));
    cuzk_engine_free(engine);
    config.struct_size -= 8;
    let status = cuzk_engine_new(&config, &mut engine, &mut err);
    assert_eq!(status, Status::InvalidArgument);
    assert!(take_error(err).1.contains("struct_size"));
}

/// A chunk of H's MSM below the least is refused naming the field, GPU or not; a caller of
/// revision 6 (without `gpu_h_msm_chunk`) gets the default, whatever lies past its struct.
#[test]
fn an_h_msm_chunk_below_the_least_is_refused() {
    let f = fixture();
    let dir = std::ffi::CString::new(f.params_dir.to_str().unwrap()).unwrap();
    let mut config = c_config(&dir);
    config.gpu_h_msm_chunk = 65_535;
    let mut engine = null_mut();
    let mut err = null_mut();
    let status = cuzk_engine_new(&config, &mut engine, &mut err);
    assert!(engine.is_null());
    assert_eq!(status, Status::InvalidArgument);
    let (_, message) = take_error(err);
    assert!(message.contains("gpu_h_msm_chunk is 65535 points, at least 65536"), "{message}");
    config.struct_size = std::mem::offset_of!(cuzk_config, gpu_h_msm_chunk) as u32;
    let status = cuzk_engine_new(&config, &mut engine, &mut err);
    assert_eq!(status, Status::Ok, "{:?}", take_error(err));
    cuzk_engine_free(engine);
}

/// Device lists the engine could never honour are refused before anything starts (and so
/// before the one-configuration-per-process check).
#[test]
fn unusable_device_lists_are_refused() {
    let f = fixture();
    let dir = std::ffi::CString::new(f.params_dir.to_str().unwrap()).unwrap();
    let new_engine = |devices: &[i32], len: u32, cpu_only: bool| {
        let mut config = c_config(&dir);
        config.devices = if devices.is_empty() { std::ptr::null() } else { devices.as_ptr() };
        config.devices_len = len;
        config.cpu_only = cpu_only;
        let mut engine = null_mut();
        let mut err = null_mut();
        let status = cuzk_engine_new(&config, &mut engine, &mut err);
        assert!(engine.is_null(), "no engine for {devices:?}");
        let (s, message) = take_error(err);
        assert_eq!(s, status);
        (s, message)
    };
    for (devices, len, cpu_only, needle) in [
        (&[0][..], 1, true, "cpu_only"),
        (&[-1][..], 1, false, "devices[0] is -1"),
        (&[0, 1, 0][..], 3, false, "devices[2]: device 0 is listed twice"),
        (&[0][..], 65, false, "devices_len is 65"),
        (&[][..], 2, false, "devices"),
    ] {
        let (status, message) = new_engine(devices, len, cpu_only);
        let expected = if needle == "devices" {
            Status::NullArgument
        } else {
            Status::InvalidArgument
        };
        assert_eq!(status, expected, "{devices:?}: {message}");
        assert!(message.contains(needle), "{devices:?}: {message}");
    }
}

/// Thread and lane counts no machine could use are refused before anything starts: each
/// worker thread is started with the engine, and each proving lane with every call.
#[test]
fn thread_and_lane_counts_past_their_limits_are_refused() {
    let f = fixture();
    let dir = std::ffi::CString::new(f.params_dir.to_str().unwrap()).unwrap();
    for (lanes, threads, needle) in [
        (u32::MAX, 0, "proving_lanes is 4294967295, at most 256"),
        (257, 0, "proving_lanes is 257, at most 256"),
        (0, u32::MAX, "num_threads is 4294967295, at most 4096"),
        (0, 4097, "num_threads is 4097, at most 4096"),
    ] {
        let mut config = c_config(&dir);
        config.proving_lanes = lanes;
        config.num_threads = threads;
        let mut engine = null_mut();
        let mut err = null_mut();
        let status = cuzk_engine_new(&config, &mut engine, &mut err);
        assert!(engine.is_null(), "no engine for {lanes} lanes, {threads} threads");
        let (s, message) = take_error(err);
        assert_eq!((status, s), (Status::InvalidArgument, Status::InvalidArgument), "{message}");
        assert!(message.contains(needle), "{message:?} does not say {needle:?}");
    }
}

/// Chunks of H's MSM below the fewest points a configuration may ask for are refused before
/// anything starts, as the engine's other limits are.
#[test]
fn h_msm_chunks_below_their_least_are_refused() {
    use cuzk::engine::{Engine, EngineConfig, MIN_GPU_H_MSM_CHUNK};
    for points in [1, MIN_GPU_H_MSM_CHUNK - 1] {
        let config = EngineConfig {
            gpu_h_msm_chunk: points,
            ..EngineConfig::default()
        };
        let e = Engine::acquire(config).err().expect("refused");
        assert_eq!(e.status, Status::InvalidArgument, "{}", e.message);
        let needle = format!("gpu_h_msm_chunk is {points} points, at least {MIN_GPU_H_MSM_CHUNK}");
        assert!(e.message.contains(&needle), "{:?} does not say {needle:?}", e.message);
    }
}

/// `cuzk_verify_seal` with arguments it cannot check a proof against: each a clean error
/// naming what is wrong (PARAMETERS_NOT_FOUND for a sector size whose key is not here), never
/// a PANIC, never an answer.
#[test]
fn verify_seal_refuses_unusable_arguments() {
    use filecoin_proofs_api::RegisteredSealProof as P;
    let f = fixture();
    let e = engine();
    let mut high = f.sector.comm_r;
    high[31] = 0xff;
    type Change = Box<dyn Fn(&mut cuzk_tools::fixtures::SealedSector)>;
    let cases: Vec<(&str, Change, Vec<u8>, Status, &str)> = vec![
        (
            "a proof a byte short",
            Box::new(|_| {}),
            vec![0; 191],
            Status::InvalidArgument,
            "proof is 191 bytes",
        ),
        (
            "an empty proof",
            Box::new(|_| {}),
            Vec::new(),
            Status::InvalidArgument,
            "proof is 0 bytes",
        ),
        (
            "bytes that are no curve points",
            Box::new(|_| {}),
            vec![0xff; 192],
            Status::InvalidArgument,
            "proof bytes",
        ),
        (
            "comm_r not canonical",
            Box::new(move |s| s.comm_r = high),
            vec![0xff; 192],
            Status::InvalidArgument,
            "comm_r",
        ),
        (
            "comm_d not canonical",
            Box::new(move |s| s.comm_d = high),
            vec![0xff; 192],
            Status::InvalidArgument,
            "comm_d",
        ),
        (
            "an all-zero comm_r",
            Box::new(|s| s.comm_r = [0; 32]),
            vec![0xff; 192],
            Status::InvalidArgument,
            "all-zero",
        ),
        (
            "an all-zero seed",
            Box::new(|s| s.seed = [0; 32]),
            vec![0xff; 192],
            Status::InvalidArgument,
            "seed",
        ),
        (
            "a non-interactive PoRep",
            Box::new(|s| s.registered_proof = P::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep),
            vec![0xff; 192],
            Status::InvalidArgument,
            "non-interactive",
        ),
        (
            "32GiB: ten partitions",
            Box::new(|s| s.registered_proof = P::StackedDrg32GiBV1_1),
            vec![0xff; 192],
            Status::InvalidArgument,
            "StackedDrg32GiBV1_1 proofs are 1920",
        ),
        (
            "8MiB: no verifying key here",
            Box::new(|s| s.registered_proof = P::StackedDrg8MiBV1_1),
            vec![0xff; 192],
            Status::ParametersNotFound,
            ".vk",
        ),
    ];
    for (what, change, proof, status, needle) in cases {
        let mut sector = f.sector.clone();
        change(&mut sector);
        let (s, message) = verify(&e, &sector, &proof).expect_err(what);
        assert_eq!(s, status, "{what}: {message}");
        assert!(message.contains(needle), "{what}: {message:?} does not say {needle:?}");
    }
}

#[test]
fn second_engine_with_another_config_is_a_clean_error() {
    let f = fixture();
    let _first = engine();
    let same = engine_for(&f.params_dir);
    assert!(same.is_ok(), "same config joins the engine");
    let other = engine_for(std::path::Path::new("/nonexistent/other-params"));
    let (status, message) = other.err().expect("a different config must be refused");
    assert_eq!(status, Status::EngineState, "{message}");
}

/// Malformed vanilla proofs inside a C1 (paths a hash short or long, a level missing, a sibling
/// changed, columns a row short, parent columns or labeling proofs missing, non-canonical
/// elements): each an INVALID_ARGUMENT naming its place in the C1 JSON, before any synthesis —
/// never a panic, never a proof — and the engine proves afterwards.
#[test]
fn malformed_vanilla_proofs_name_their_place_in_the_c1() {
    use serde_json::{json, Value};
    let f = fixture();
    let base: Value = serde_json::from_slice(&f.c1_json).unwrap();
    /// Partition 0 of the C1's vanilla proofs (of its one sector-size variant).
    fn partition(c1: &mut Value) -> &mut Value {
        &mut c1["vanilla_proofs"].as_object_mut().unwrap().values_mut().next().unwrap()[0]
    }
    fn challenge(c1: &mut Value) -> &mut Value {
        &mut partition(c1)[1]
    }
    type Mutation = Box<dyn Fn(&mut Value)>;
    let path_of = |proof: &str| format!("/{proof}/data/Single/path/path");
    let cases: Vec<(&str, Mutation, &str)> = vec![
        (
            "a tree_r_last path a hash short",
            Box::new(move |c1| {
                let p = challenge(c1);
                p.pointer_mut(&path_of("comm_r_last_proof")).unwrap()[0]["hashes"]
                    .as_array_mut()
                    .unwrap()
                    .truncate(6)
            }),
            "vanilla_proofs[0][1].comm_r_last_proof",
        ),
        (
            "a tree_r_last path a hash long",
            Box::new(move |c1| {
                let p = challenge(c1);
                let hashes = p.pointer_mut(&path_of("comm_r_last_proof")).unwrap()[0]["hashes"].as_array_mut().unwrap();
                hashes.push(hashes[0].clone());
            }),
            "vanilla_proofs[0][1].comm_r_last_proof",
        ),
        (
            "a comm_d path a level short",
            Box::new(move |c1| {
                let p = challenge(c1);
                p.pointer_mut(&path_of("comm_d_proofs")).unwrap().as_array_mut().unwrap().pop();
            }),
            "vanilla_proofs[0][1].comm_d_proofs",
        ),
        (
            "a comm_d sibling byte changed",
            Box::new(move |c1| {
                let p = challenge(c1);
                let byte = &mut p.pointer_mut(&path_of("comm_d_proofs")).unwrap()[0]["hashes"][0][3];
                *byte = json!((byte.as_u64().unwrap() + 1) % 256);
            }),
            "comm_d_proofs: the path does not hash to its root",
        ),
        (
            "a tree_r_last sibling byte changed",
            Box::new(move |c1| {
                let p = challenge(c1);
                let byte = &mut p.pointer_mut(&path_of("comm_r_last_proof")).unwrap()[1]["hashes"][3][0];
                *byte = json!((byte.as_u64().unwrap() + 1) % 256);
            }),
            "comm_r_last_proof: the path does not hash to its root",
        ),
        (
            "a tree_r_last sibling not canonical",
            Box::new(move |c1| {
                let p = challenge(c1);
                p.pointer_mut(&path_of("comm_r_last_proof")).unwrap()[0]["hashes"][0][31] = json!(255);
            }),
            "non-canonical",
        ),
        (
            "the challenge's column a row short",
            Box::new(|c1| {
                let p = challenge(c1);
                p["replica_column_proofs"]["c_x"]["column"]["rows"].as_array_mut().unwrap().pop();
            }),
            "replica_column_proofs.c_x: 1 rows",
        ),
        (
            "a parent column a row short",
            Box::new(|c1| {
                let p = challenge(c1);
                p["replica_column_proofs"]["drg_parents"][2]["column"]["rows"]
                    .as_array_mut()
                    .unwrap()
                    .pop();
            }),
            "replica_column_proofs.drg_parents[2]",
        ),
        (
            "a parent column's path a hash short",
            Box::new(|c1| {
                let p = challenge(c1);
                p["replica_column_proofs"]["exp_parents"][3]["inclusion_proof"]["data"]["Single"]["path"]["path"][1]["hashes"]
                    .as_array_mut()
                    .unwrap()
                    .pop();
            }),
            "replica_column_proofs.exp_parents[3]: inclusion_proof",
        ),
        (
            "an expander parent column missing",
            Box::new(|c1| {
                let p = challenge(c1);
                p["replica_column_proofs"]["exp_parents"].as_array_mut().unwrap().pop();
            }),
            "exp_parents: 7 columns",
        ),
        (
            "a labeling proof missing",
            Box::new(|c1| {
                let p = challenge(c1);
                p["labeling_proofs"].as_array_mut().unwrap().pop();
            }),
            "labeling_proofs",
        ),
        (
            "a challenge proof missing from a partition",
            Box::new(|c1| {
                partition(c1).as_array_mut().unwrap().pop();
            }),
            "vanilla_proofs[0] has 1 challenge proofs",
        ),
        (
            "replica_id not canonical",
            Box::new(|c1| c1["replica_id"][31] = json!(255)),
            "replica_id is not a canonical",
        ),
    ];
    for (what, mutate, needle) in cases {
        let mut c1 = base.clone();
        mutate(&mut c1);
        let json = serde_json::to_vec(&c1).unwrap();
        match prove(&engine(), &json, f.sector.sector_id, &f.sector.prover_id, None) {
            Ok(_) => panic!("{what}: proved"),
            Err((status, message)) => {
                assert_eq!(status, Status::InvalidArgument, "{what}: {message}");
                assert!(message.contains(needle), "{what}: {message:?} does not say {needle:?}");
            }
        }
    }
    prove(&engine(), &f.c1_json, f.sector.sector_id, &f.sector.prover_id, None).expect("the untouched C1 proves afterwards");
}

/// Every JSON pointer of `value`'s nodes, the root excluded.
fn json_pointers(value: &serde_json::Value, at: String, out: &mut Vec<String>) {
    let children: Vec<(String, &serde_json::Value)> = match value {
        serde_json::Value::Array(items) => items.iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect(),
        serde_json::Value::Object(map) => map.iter().map(|(k, v)| (k.replace('~', "~0").replace('/', "~1"), v)).collect(),
        _ => Vec::new(),
    };
    for (key, child) in children {
        let pointer = format!("{at}/{key}");
        out.push(pointer.clone());
        json_pointers(child, pointer, out);
    }
}

/// One random change to the C1 at a random node (or to its raw text), and what it was.
fn mutate(c1: &serde_json::Value, pointers: &[String], raw: &[u8], rng: &mut impl rand::Rng) -> (Vec<u8>, String) {
    use serde_json::Value;
    if rng.gen_ratio(1, 10) {
        let mut bytes = raw.to_vec();
        let at = rng.gen_range(0..bytes.len());
        return match rng.gen_bool(0.5) {
            true => (bytes[..at].to_vec(), format!("truncated at byte {at}")),
            false => {
                bytes[at] ^= 1 << rng.gen_range(0..8);
                (bytes, format!("a bit of byte {at} flipped"))
            }
        };
    }
    let mut c1 = c1.clone();
    let pointer = &pointers[rng.gen_range(0..pointers.len())];
    let node = c1.pointer_mut(pointer).unwrap();
    let what = match node {
        Value::Array(items) if !items.is_empty() => match rng.gen_range(0..3) {
            0 => {
                items.remove(rng.gen_range(0..items.len()));
                "an element removed"
            }
            1 => {
                let item = items[rng.gen_range(0..items.len())].clone();
                items.insert(rng.gen_range(0..=items.len()), item);
                "an element duplicated"
            }
            _ => {
                let (i, j) = (rng.gen_range(0..items.len()), rng.gen_range(0..items.len()));
                items.swap(i, j);
                "two elements swapped"
            }
        },
        Value::Object(map) if !map.is_empty() => {
            let key = map.keys().nth(rng.gen_range(0..map.len())).unwrap().clone();
            map.remove(&key);
            "a field removed"
        }
        _ => {
            *node = match rng.gen_range(0..5) {
                0 => Value::from(255),
                1 => Value::from(rng.gen::<u8>()),
                2 => Value::from(1u64 << 40),
                3 => Value::from(-1),
                _ => Value::from("x"),
            };
            "a value replaced"
        }
    };
    (serde_json::to_vec(&c1).unwrap(), format!("{what} at {pointer}"))
}

/// Random structure-aware mutations of the fixture's C1 through the C ABI, on an engine with
/// self-verify off: never a PANIC status, messages of a few KiB at most, and any input the
/// checks accept gives a proof that filecoin-proofs verifies.
#[test]
fn random_c1_mutations_never_panic_and_accepted_ones_verify() {
    use rand::SeedableRng;
    let f = fixture();
    let e = engine();
    let c1: serde_json::Value = serde_json::from_slice(&f.c1_json).unwrap();
    let mut pointers = Vec::new();
    json_pointers(&c1, String::new(), &mut pointers);
    let seed: u64 = rand::random();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..400 {
        let (input, what) = mutate(&c1, &pointers, &f.c1_json, &mut rng);
        let outcome = match prove(&e, &input, f.sector.sector_id, &f.sector.prover_id, None) {
            Ok(proved) => {
                assert!(
                    filecoin_verify(&f.sector, &proved.proof),
                    "seed {seed}: {what}: accepted, and its proof does not verify"
                );
                "proof".to_string()
            }
            Err((status, message)) => {
                assert_ne!(status, Status::Panic, "seed {seed}: {what}: {message}");
                assert!(message.len() < 4096, "seed {seed}: {what}: a {}-byte message", message.len());
                format!("{status:?}")
            }
        };
        *outcomes.entry(outcome).or_default() += 1;
    }
    eprintln!("seed {seed}: {outcomes:?}");
}

/// The key, status and small entry points with NULL handles and outputs and unknown proof
/// numbers: a NULL_ARGUMENT or INVALID_ARGUMENT naming the argument, never a PANIC; the
/// free and accessor functions accept NULL.
#[test]
fn key_status_and_accessor_entry_points_refuse_null_and_unknown_values() {
    let e = engine();
    let call = |f: &dyn Fn(*mut *mut cuzk_error) -> Status| {
        let mut err = null_mut();
        let status = f(&mut err);
        let (s, m) = take_error(err);
        assert_eq!(s, status);
        (s, m)
    };
    type Preload = extern "C" fn(*const cuzk_engine, u32, *mut u64, *mut u64, *mut *mut cuzk_error) -> Status;
    type Evict = extern "C" fn(*const cuzk_engine, u32, *mut bool, *mut *mut cuzk_error) -> Status;
    let kinds: [(&str, Preload, Evict); 3] = [
        ("seal", cuzk_engine_preload_key, cuzk_engine_evict_key),
        ("post", cuzk_engine_preload_post_key, cuzk_engine_evict_post_key),
        ("update", cuzk_engine_preload_update_key, cuzk_engine_evict_update_key),
    ];
    for (kind, preload, evict) in kinds {
        let (s, m) = call(&|err| preload(null(), 0, null_mut(), null_mut(), err));
        assert_eq!((s, m.contains("engine")), (Status::NullArgument, true), "{kind}: {m}");
        let (s, m) = call(&|err| preload(e.0, 9999, null_mut(), null_mut(), err));
        assert_eq!(s, Status::InvalidArgument, "{kind}: {m}");
        let mut evicted = true;
        let evicted_ptr: *mut bool = &mut evicted;
        let (s, m) = call(&|err| evict(null(), 0, evicted_ptr, err));
        assert_eq!((s, m.contains("engine")), (Status::NullArgument, true), "{kind}: {m}");
        let (s, m) = call(&|err| evict(e.0, 0, null_mut(), err));
        assert_eq!((s, m.contains("evicted_out")), (Status::NullArgument, true), "{kind}: {m}");
        let (s, m) = call(&|err| evict(e.0, 9999, evicted_ptr, err));
        assert_eq!(s, Status::InvalidArgument, "{kind}: {m}");
        assert!(!evicted, "{kind}: false on failure");
    }
    let (s, m) = call(&|err| cuzk_engine_status(null(), &mut null_mut(), err));
    assert_eq!(s, Status::NullArgument, "{m}");
    let (s, m) = call(&|err| cuzk_engine_status(e.0, null_mut(), err));
    assert_eq!((s, m.contains("json_out")), (Status::NullArgument, true), "{m}");
    let (s, _) = call(&|err| cuzk_config_default(null_mut(), err));
    assert_eq!(s, Status::NullArgument);
    // NULL is accepted where the header says so.
    assert_eq!(cuzk_error_status(null()), Status::NullArgument);
    assert!(!cuzk_error_message(null()).is_null());
    let mut sectors = std::ptr::dangling::<u64>();
    assert_eq!(cuzk_error_faulty_sectors(null(), &mut sectors), 0);
    assert!(sectors.is_null());
    cuzk_error_free(null_mut());
    cuzk_bytes_free(null_mut());
    cuzk_cancel_token_cancel(null());
    cuzk_cancel_token_free(null_mut());
}
