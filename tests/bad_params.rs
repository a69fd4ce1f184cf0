//! Missing and corrupt parameter files (this test binary's engine uses its own empty
//! parameter directory, so it runs in a process of its own).

mod common;

use common::*;
use cuzk::error::Status;
use cuzk::ffi::{cuzk_engine_memory_estimate, seal_proof_to_abi};
use cuzk::internals::porep;
use filecoin_proofs::constants::SectorShape2KiB;
use storage_proofs_core::parameter_cache::parameter_id;

#[test]
fn missing_then_corrupt_then_truncated_parameters() {
    let f = fixture();
    let dir = std::env::temp_dir().join(format!("cuzk-bad-params-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let engine = engine_for(&dir).expect("engine");
    let config = porep::porep_config(f.sector.registered_proof).unwrap();
    let file = parameter_id(&porep::parameter_cache_id::<SectorShape2KiB>(&config).unwrap());
    let prove_once = || {
        prove(&engine, &f.c1_json, f.sector.sector_id, &f.sector.prover_id, None)
            .err()
            .expect("must fail")
    };

    // The memory estimate reads the key file's counts: the same statuses as a proof.
    let seal = seal_proof_to_abi(f.sector.registered_proof);
    let estimate_once = || c_estimate(&engine, |e, out, err| cuzk_engine_memory_estimate(e, seal, out, err)).expect_err("must fail");

    let (status, message) = prove_once();
    assert_eq!(status, Status::ParametersNotFound, "{message}");
    assert!(message.contains(&file), "{message}");
    assert_eq!(estimate_once().0, Status::ParametersNotFound);

    let garbage: Vec<u8> = (0..1 << 20).map(|_| rand::random::<u8>()).collect();
    std::fs::write(dir.join(&file), &garbage).unwrap();
    let (status, message) = prove_once();
    assert_eq!(status, Status::ParametersInvalid, "{message}");
    assert!(message.contains("corrupt"), "{message}");
    assert_eq!(estimate_once().0, Status::ParametersInvalid);

    // A truncated copy of the real file: a valid start, then end of file.
    let real = std::fs::File::open(f.params_dir.join(&file)).unwrap();
    let mut head = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(real, 8 << 20), &mut head).unwrap();
    std::fs::write(dir.join(&file), &head).unwrap();
    let (status, message) = prove_once();
    assert_eq!(status, Status::ParametersInvalid, "{message}");
    let (status, message) = estimate_once();
    assert_eq!(status, Status::ParametersInvalid, "{message}");
    assert!(message.contains("truncated"), "{message}");

    // The verifying key is missing too: verification says so instead of answering false.
    let (status, message) = verify(&engine, &f.sector, &[0u8; 192]).expect_err("no vk");
    assert_eq!(status, Status::ParametersNotFound, "{message}");
    std::fs::remove_dir_all(&dir).unwrap();
}
