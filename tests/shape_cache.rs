//! The circuit shape cache on disk (issue 23, cold start): the first engine extracts a
//! circuit's shape and writes it; the next engine (a new process, as far as the engine knows)
//! reads it instead, and its proof verifies; a damaged, truncated or foreign file is never
//! trusted: the shape is extracted and written again. Its own process: it starts and stops
//! the process's engine.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use cuzk::engine::{Engine, EngineConfig, ProveOptions, ShapeCacheLocation};
use cuzk::internals::r1cs::CircuitShape;

/// The shape files in `dir`.
fn shape_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "cuzk-shape"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// The circuit id a shape file is named after.
fn circuit_id(file: &Path) -> String {
    let name = file.file_name().unwrap().to_str().unwrap();
    name[..name.find(".v").unwrap()].to_string()
}

#[test]
fn the_next_engine_reads_the_shape_and_bad_files_are_rebuilt() {
    let f = fixture();
    let dir = std::env::temp_dir().join(format!("cuzk-shape-cache-{}", std::process::id()));
    let config = |shape_cache| EngineConfig {
        param_cache_dir: Some(f.params_dir.clone()),
        shape_cache,
        ..Default::default()
    };
    // One engine per step, dropped at its end (which finishes writing its shape files): a
    // preload (key and shape), and a proof when `prove`. The shape's time.
    let step = |shape_cache: ShapeCacheLocation, what: &str, prove: bool| -> u64 {
        let engine = Engine::acquire(config(shape_cache)).expect("engine");
        let shape_ns = engine
            .preload_key(f.sector.registered_proof)
            .unwrap_or_else(|e| panic!("{what}: {e}"))
            .shape_extract_ns;
        if prove {
            let out = engine
                .seal_commit_phase2(&f.c1_json, f.sector.sector_id, f.sector.prover_id, &ProveOptions::default())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(filecoin_verify(&f.sector, &out.proof), "{what}: filecoin-proofs rejects the proof");
        }
        shape_ns
    };
    let cached = || ShapeCacheLocation::Dir(dir.clone());

    let extracted_ns = step(cached(), "first engine", false);
    let files = shape_files(&dir);
    assert_eq!(files.len(), 1, "one circuit, one file: {files:?}");
    let (file, id) = (&files[0], circuit_id(&files[0]));
    let written = std::fs::read(file).unwrap();
    let shape = CircuitShape::read_file(&written, &id).expect("the written file checks out");

    // The file as the first engine left it: a shape extracted again would be written again,
    // into a new file renamed over this one (a new inode, a new modification time).
    let identity = |file: &Path| {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(file).unwrap();
        (meta.ino(), meta.modified().unwrap())
    };
    let first_identity = identity(file);

    let read_ns = step(cached(), "second engine", true);
    eprintln!(
        "2KiB PoRep circuit shape ({} constraints, {} MiB, its file {} MiB): extracted in {:.3} s, read from disk in {:.3} s ({:.0}x)",
        shape.num_constraints(),
        shape.size_bytes() >> 20,
        written.len() >> 20,
        extracted_ns as f64 / 1e9,
        read_ns as f64 / 1e9,
        extracted_ns as f64 / read_ns as f64
    );
    assert!(read_ns > 0, "the second engine has no shape time");
    assert_eq!(
        identity(file),
        first_identity,
        "the second engine extracted the shape again: its file was rewritten"
    );
    assert_eq!(std::fs::read(file).unwrap(), written, "a file that checks out is not written again");

    // Damaged in the middle, cut short, or another circuit's file under this name: each time
    // the shape is extracted again, the proof verifies, and the file is good again.
    let other_circuit = {
        let mut bytes = Vec::new();
        shape.write_file("another-circuit", &mut bytes).unwrap();
        bytes
    };
    // A file of another format version of this circuit: removed once this version's is written.
    let old_version = dir.join(format!("{id}.v0.cuzk-shape"));
    std::fs::write(&old_version, b"an older format").unwrap();
    let mut flipped = written.clone();
    flipped[written.len() / 2] ^= 0x10;
    for (what, bad) in [
        ("a flipped bit", flipped),
        ("a truncated file", written[..written.len() / 3].to_vec()),
        ("another circuit's file", other_circuit),
    ] {
        std::fs::write(file, &bad).unwrap();
        step(cached(), what, false);
        let rewritten = std::fs::read(file).unwrap();
        assert_eq!(
            CircuitShape::read_file(&rewritten, &id).as_ref(),
            Ok(&shape),
            "{what}: the file is rebuilt"
        );
        assert!(!old_version.exists(), "{what}: the older format's file is still there");
        assert_eq!(shape_files(&dir), files, "{what}: one circuit, one file");
    }

    // Off: nothing is written.
    std::fs::remove_dir_all(&dir).unwrap();
    step(ShapeCacheLocation::Off, "no shape cache", false);
    assert!(!dir.exists(), "the cache is off, yet {} was made", dir.display());
}
