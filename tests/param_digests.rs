//! Parameter files checked against a digest table before use (FIL_PROOFS_VERIFY_PRODUCTION_PARAMS,
//! as filecoin-proofs). This binary's engines use their own parameter directories and the
//! process environment, so it runs in a process of its own.

mod common;

use std::path::Path;

use common::fixture;
use cuzk::engine::{Engine, EngineConfig};
use cuzk::error::Status;
use cuzk::internals::porep;
use filecoin_proofs::constants::SectorShape2KiB;
use storage_proofs_core::parameter_cache::parameter_id;

fn digest_of(path: &Path) -> String {
    let mut state = blake2b_simd::Params::new().to_state();
    std::io::copy(&mut std::fs::File::open(path).unwrap(), &mut state).unwrap();
    state.finalize().to_hex()[..32].to_string()
}

fn write_table(path: &Path, entries: &[(&str, &str)]) {
    let table: serde_json::Map<String, serde_json::Value> = entries
        .iter()
        .map(|(name, digest)| (name.to_string(), serde_json::json!({ "cid": "-", "digest": digest, "sector_size": 2048 })))
        .collect();
    std::fs::write(path, serde_json::Value::Object(table).to_string()).unwrap();
}

#[test]
fn parameter_files_are_checked_against_the_digest_table_when_asked() {
    let f = fixture();
    let proof = f.sector.registered_proof;
    let config = porep::porep_config(proof).unwrap();
    let file = parameter_id(&porep::parameter_cache_id::<SectorShape2KiB>(&config).unwrap());
    let dir = std::env::temp_dir().join(format!("cuzk-param-digests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(f.params_dir.join(&file), dir.join(&file)).unwrap();
    let table = dir.join("parameters.json");
    let engine_with = |verify: bool| {
        Engine::acquire(EngineConfig {
            param_cache_dir: Some(dir.clone()),
            verify_param_digests: verify,
            param_digests_file: verify.then(|| table.clone()),
            ..EngineConfig::default()
        })
        .expect("engine")
    };

    // The file's own digest: it loads.
    write_table(&table, &[(&file, &digest_of(&dir.join(&file)))]);
    let engine = engine_with(true);
    engine.preload_key(proof).expect("the key matches its digest");
    drop(engine);

    // Another digest, or no entry: PARAMETERS_INVALID naming the file, before any use.
    write_table(&table, &[(&file, "00000000000000000000000000000000")]);
    let err = engine_with(true).preload_key(proof).unwrap_err();
    assert_eq!(err.status, Status::ParametersInvalid, "{err}");
    assert!(err.message.contains(&file) && err.message.contains("is not 0000"), "{err}");
    write_table(&table, &[("another.params", "00000000000000000000000000000000")]);
    let err = engine_with(true).preload_key(proof).unwrap_err();
    assert!(err.message.contains("no digest for"), "{err}");

    // Not asked: no check.
    engine_with(false).preload_key(proof).expect("no digest check when not asked");

    // Asked through filecoin-proofs' variable with filecoin-proofs' own table: this random-setup
    // file has a production file's name but not its content.
    std::env::set_var("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS", "1");
    let engine = Engine::acquire(EngineConfig {
        param_cache_dir: Some(dir.clone()),
        ..EngineConfig::default()
    })
    .expect("engine");
    let err = engine.preload_key(proof).unwrap_err();
    std::env::remove_var("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS");
    assert_eq!(err.status, Status::ParametersInvalid, "{err}");
    assert!(err.message.contains("filecoin-proofs' parameters.json"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
