//! Key residency through the C ABI: preload, engine status, evict. Its own test binary (its own
//! process and engine), so that evicting the key never races the proofs of other tests. On the
//! CPU backend the key is resident in host memory only; tests/gpu.rs covers device copies.

mod common;

use std::ptr::{null, null_mut};

use common::*;
use cuzk::error::Status;
use cuzk::ffi::*;

fn preload(engine: &Engine, proof: u32) -> Result<(u64, u64), (Status, String)> {
    let (mut load_ns, mut upload_ns) = (u64::MAX, u64::MAX);
    let mut err = null_mut();
    match cuzk_engine_preload_key(engine.0, proof, &mut load_ns, &mut upload_ns, &mut err) {
        Status::Ok => Ok((load_ns, upload_ns)),
        _ => Err(take_error(err)),
    }
}

fn evict(engine: &Engine, proof: u32) -> bool {
    let mut evicted = false;
    let mut err = null_mut();
    assert_eq!(
        cuzk_engine_evict_key(engine.0, proof, &mut evicted, &mut err),
        Status::Ok,
        "{:?}",
        take_error(err)
    );
    evicted
}

#[test]
fn preload_status_evict() {
    let f = fixture();
    let engine = engine();
    let proof = seal_proof_to_abi(f.sector.registered_proof);

    let status = status_json(&engine);
    assert_eq!(status["proofs_in_flight"], 0);
    assert!(status["host_keys"].as_array().unwrap().is_empty(), "{status}");

    let (load_ns, upload_ns) = preload(&engine, proof).expect("preload");
    assert!(load_ns > 0, "the first preload reads the key");
    let status = status_json(&engine);
    let keys = status["host_keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1, "{status}");
    assert!(keys[0]["label"].as_str().unwrap().ends_with(".params"));
    let (host_bytes, points_bytes) = (keys[0]["bytes"].as_u64().unwrap(), keys[0]["points_bytes"].as_u64().unwrap());
    assert!(points_bytes > 1 << 20, "{status}");
    // The circuit's R1CS shape is extracted too (from a blank circuit), for the first proof.
    let shapes = status["circuit_shapes"].as_array().unwrap();
    assert_eq!(shapes.len(), 1, "{status}");
    assert!(shapes[0]["constraints"].as_u64().unwrap() > 2_000_000 && shapes[0]["shape_bytes"].as_u64().unwrap() > 1 << 20);
    match status["backend"].as_str().unwrap() {
        // The CPU proves from the points in host memory; a key resident on the device is not
        // also held there.
        "cpu" => assert_eq!((upload_ns, status["devices"].as_array().unwrap().len(), host_bytes), (0, 0, points_bytes)),
        "gpu" => assert!(
            upload_ns > 0 && status["devices"][0]["resident_keys"][0]["loaded"] == true && host_bytes == 0,
            "{status}"
        ),
        other => panic!("backend {other}"),
    }
    assert_eq!(preload(&engine, proof).expect("preload"), (0, 0), "a resident key is not read again");

    assert!(evict(&engine, proof));
    let status = status_json(&engine);
    assert!(
        status["host_keys"].as_array().unwrap().is_empty() && status["circuit_shapes"].as_array().unwrap().is_empty(),
        "{status}"
    );
    assert!(!evict(&engine, proof), "nothing left to evict");
    // Concurrent first loads, as concurrent first calls make them: the key is read once, and
    // nobody waits for the load on one of the engine's workers (the load's parallel decoding
    // may need that worker: a deadlock, seen in CI).
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let (done, engine) = (done.clone(), &engine);
            scope.spawn(move || done.send(preload(engine, proof)).unwrap());
        }
        let loads: Vec<u64> = (0..4)
            .map(|_| {
                let result = finished.recv_timeout(std::time::Duration::from_secs(600)).unwrap_or_else(|_| {
                    eprintln!("concurrent preloads after an evict hang (deadlock)");
                    std::process::abort()
                });
                result.expect("preload after evict").0
            })
            .collect();
        // One call opens the file and one (the same or another) decodes its points.
        let reading = loads.iter().filter(|&&ns| ns > 0).count();
        assert!((1..=2).contains(&reading), "an evicted key is read again, once: {loads:?}");
    });
}

#[test]
fn bad_arguments_are_errors() {
    let engine = engine();
    let mut json = null_mut();
    assert_eq!(cuzk_engine_status(null(), &mut json, null_mut()), Status::NullArgument);
    assert_eq!(cuzk_engine_status(engine.0, null_mut(), null_mut()), Status::NullArgument);
    assert_eq!(cuzk_engine_evict_key(engine.0, 5, null_mut(), null_mut()), Status::NullArgument);
    let err = preload(&engine, 9999).expect_err("unknown proof");
    assert_eq!(err.0, Status::InvalidArgument, "{}", err.1);
    // A proof kind whose parameters are not in the directory (64GiB).
    let err = preload(&engine, 4).expect_err("no 64GiB parameters here");
    assert_eq!(err.0, Status::ParametersNotFound, "{}", err.1);
}
