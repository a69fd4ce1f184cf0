//! Generates the C header from the ABI sources with cbindgen (the committed include/cuzk.h
//! must equal the fresh one: tests/header.rs checks; `CUZK_UPDATE_HEADER=1 cargo build`
//! rewrites it). cuda/ is compiled by its own crate, cuzk-cuda (cuda/build.rs).

use std::path::PathBuf;

// The files cbindgen reads. It follows their `mod` declarations: src/ffi/mod.rs brings in the
// ABI's files in the order the header lists them, while src/lib.rs is not read, so that the
// backends' internal FFI never reaches the public header.
const ABI_SOURCES: [&str; 3] = ["src/ffi/mod.rs", "src/error.rs", "src/timings.rs"];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    // src/ffi as a directory: a file added to it counts too.
    for input in ABI_SOURCES.iter().chain(&["src/ffi", "cbindgen.toml"]) {
        println!("cargo:rerun-if-changed={input}");
    }
    println!("cargo:rerun-if-env-changed=CUZK_UPDATE_HEADER");
    // tests/gpu.rs runs only in builds made with CUZK_GPU_TESTS=1; elsewhere it is ignored.
    println!("cargo:rustc-check-cfg=cfg(cuzk_gpu_tests)");
    println!("cargo:rerun-if-env-changed=CUZK_GPU_TESTS");
    if std::env::var_os("CUZK_GPU_TESTS").is_some_and(|v| v == "1") {
        println!("cargo:rustc-cfg=cuzk_gpu_tests");
    }
    // The shared library carries the ABI major version in its SONAME (libcuzk.so.1), so
    // programs linked against ABI v1 never load an incompatible build.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuzk.so.{}", abi_version(&root));
    }

    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut builder = cbindgen::Builder::new().with_config(config);
    for source in ABI_SOURCES {
        builder = builder.with_src(root.join(source));
    }
    let header = builder.generate().expect("cbindgen could not generate the C header");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("cuzk.h");
    header.write_to_file(&out);
    if std::env::var_os("CUZK_UPDATE_HEADER").is_some_and(|v| v == "1") {
        header.write_to_file(root.join("include/cuzk.h"));
    }
}

/// CUZK_ABI_VERSION as written in src/ffi/mod.rs (build scripts cannot use the crate itself).
fn abi_version(root: &std::path::Path) -> u32 {
    let ffi = std::fs::read_to_string(root.join("src/ffi/mod.rs")).expect("src/ffi/mod.rs");
    ffi.lines()
        .find_map(|line| line.strip_prefix("pub const CUZK_ABI_VERSION: u32 = "))
        .and_then(|rest| rest.trim_end_matches(';').parse().ok())
        .expect("src/ffi/mod.rs defines CUZK_ABI_VERSION")
}
