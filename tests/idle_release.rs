//! Memory given back: the idle policy (`cuzk_config.idle_release_ms`) and
//! `cuzk_engine_release_memory`. Its own test binary: the engine runs with an idle policy, a
//! configuration no other test shares.

mod common;

use std::ptr::null_mut;
use std::time::{Duration, Instant};

use common::*;
use cuzk::error::Status;
use cuzk::ffi::*;

/// go-state-types' RegisteredPoStProof_StackedDrgWinning2KiBV1.
const WINNING_2KIB: u32 = 0;
const IDLE_RELEASE_MS: u64 = 300;

fn labels(status: &serde_json::Value, field: &str, name: &str) -> Vec<String> {
    status[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k[name].as_str().unwrap().to_string())
        .collect()
}

fn release(engine: &Engine, keep_post_keys: bool) -> cuzk_memory_released {
    let mut released = cuzk_memory_released {
        struct_size: std::mem::size_of::<cuzk_memory_released>() as u32,
        host_key_bytes: u64::MAX,
        host_shape_bytes: u64::MAX,
        device_bytes: u64::MAX,
        pinned_bytes: u64::MAX,
        duration_ns: u64::MAX,
    };
    let mut err = null_mut();
    let status = cuzk_engine_release_memory(engine.0, keep_post_keys, &mut released, &mut err);
    assert_eq!(status, Status::Ok, "{:?}", take_error(err));
    released
}

#[test]
fn idle_engine_gives_memory_back_and_proves_again() {
    let f = fixture();
    let dir = std::ffi::CString::new(f.params_dir.to_str().unwrap()).unwrap();
    let mut config = c_config(&dir);
    assert_eq!((config.idle_release_ms, config.idle_keep_post_keys), (0, true), "the defaults");
    config.idle_release_ms = IDLE_RELEASE_MS;
    let mut engine = null_mut();
    let mut err = null_mut();
    assert_eq!(cuzk_engine_new(&config, &mut engine, &mut err), Status::Ok, "{:?}", take_error(err));
    let engine = Engine(engine);
    let seal = seal_proof_to_abi(f.sector.registered_proof);

    // An engine that never ran holds nothing, and nothing is released.
    std::thread::sleep(Duration::from_millis(2 * IDLE_RELEASE_MS));
    assert_eq!(status_json(&engine)["idle_releases"], 0);

    let mut err = null_mut();
    let status = cuzk_engine_preload_key(engine.0, seal, null_mut(), null_mut(), &mut err);
    assert_eq!(status, Status::Ok, "{:?}", take_error(err));
    let status = cuzk_engine_preload_post_key(engine.0, WINNING_2KIB, null_mut(), null_mut(), &mut err);
    assert_eq!(status, Status::Ok, "{:?}", take_error(err));
    let held = status_json(&engine);
    assert_eq!(labels(&held, "host_keys", "label").len(), 2, "{held}");
    assert_eq!(labels(&held, "circuit_shapes", "id").len(), 2, "{held}");

    // Idle: the PoRep key and shape go, the WinningPoSt ones stay (the default keeps them).
    let start = Instant::now();
    let status = loop {
        let status = status_json(&engine);
        if status["idle_releases"] == 1 {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no idle release: {status}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(start.elapsed() >= Duration::from_millis(IDLE_RELEASE_MS / 2), "released before its time");
    let keys = labels(&status, "host_keys", "label");
    assert_eq!(keys.len(), 1, "{status}");
    assert!(keys[0].contains("proof-of-spacetime"), "the WinningPoSt key stays: {keys:?}");
    let shapes = labels(&status, "circuit_shapes", "id");
    assert!(shapes.len() == 1 && shapes[0].contains("proof-of-spacetime"), "{shapes:?}");
    for device in status["devices"].as_array().unwrap() {
        assert_eq!(
            (device["ntt_buffer_bytes"].as_u64(), device["witness_buffer_bytes"].as_u64()),
            (Some(0), Some(0)),
            "{device}"
        );
        let resident = device["resident_keys"].as_array().unwrap();
        assert!(
            resident.iter().all(|k| k["label"].as_str().unwrap().contains("proof-of-spacetime")),
            "{device}"
        );
        assert!(device["resident_shapes"].as_array().unwrap().is_empty(), "{device}");
        assert_eq!(device["pinned_pool"]["allocated_bytes"], 0, "{device}");
    }

    // Asked for, without keeping the PoSt key: everything goes.
    let released = release(&engine, false);
    assert!(
        released.host_key_bytes > 0 && released.host_shape_bytes > 0,
        "the WinningPoSt key and shape"
    );
    assert!(released.duration_ns > 0 && released.duration_ns < u64::MAX);
    let status = status_json(&engine);
    assert!(
        labels(&status, "host_keys", "label").is_empty() && labels(&status, "circuit_shapes", "id").is_empty(),
        "{status}"
    );
    let again = release(&engine, false);
    assert_eq!(
        (again.host_key_bytes, again.host_shape_bytes, again.pinned_bytes),
        (0, 0, 0),
        "nothing left"
    );

    // The next call reads and uploads what it needs, and its proof verifies.
    let proved = prove(&engine, &f.c1_json, f.sector.sector_id, &f.sector.prover_id, None).expect("a proof after the release");
    assert!(proved.timings.srs_load_ns > 0, "the key is read again");
    assert!(filecoin_verify(&f.sector, &proved.proof));
    // With released_out NULL the release still happens.
    let mut err = null_mut();
    assert_eq!(cuzk_engine_release_memory(engine.0, true, null_mut(), &mut err), Status::Ok);
    assert!(labels(&status_json(&engine), "host_keys", "label").is_empty());
    assert_eq!(
        cuzk_engine_release_memory(std::ptr::null(), true, null_mut(), null_mut()),
        Status::NullArgument
    );
}
