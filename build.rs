//! Generates the C header from the ABI sources with cbindgen (the committed include/cuzk.h
//! must equal the fresh one: tests/header.rs checks; `CUZK_UPDATE_HEADER=1 cargo build`
//! rewrites it), and with the `cuda` feature compiles cuda/ with nvcc.

use std::path::{Path, PathBuf};

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

    if std::env::var_os("CARGO_FEATURE_CUDA").is_some() {
        compile_cuda(&root);
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

/// GPU architectures compiled by default: A100 (sm_80), L40/4090 (sm_89), H100/H200 (sm_90),
/// Blackwell consumer (sm_120), plus compute_90 PTX for newer devices to JIT.
/// `CUZK_CUDA_ARCHS="90"` (a comma list) narrows it, e.g. for a quick build.
const DEFAULT_CUDA_ARCHS: &str = "80,89,90,120";

/// nvcc from NVCC, CUDA_HOME, PATH, or the repository's .cuda/ (scripts/install-cuda.sh).
fn find_nvcc(root: &Path) -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("NVCC").map(PathBuf::from),
        std::env::var_os("CUDA_HOME").map(|h| PathBuf::from(h).join("bin/nvcc")),
        std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|p| p.join("nvcc")).find(|p| p.is_file())),
        Some(root.join(".cuda/bin/nvcc")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

fn compile_cuda(root: &Path) {
    for var in ["NVCC", "CUDA_HOME", "CUZK_CUDA_ARCHS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=cuda");
    let nvcc = find_nvcc(root).unwrap_or_else(|| {
        panic!("the `cuda` feature needs nvcc: run scripts/install-cuda.sh (or set NVCC / CUDA_HOME), or build with --no-default-features")
    });
    let cuda_home = nvcc.parent().and_then(Path::parent).expect("nvcc lives in <CUDA_HOME>/bin").to_path_buf();
    let sppark = std::env::var("DEP_SPPARK_ROOT").expect("the sppark crate exports its headers' root");
    let blst = std::env::var("DEP_BLST_C_SRC").expect("the blst crate exports its sources' path");

    // cc's CUDA mode runs $NVCC (else `nvcc` from PATH); point it at the one found above.
    std::env::set_var("NVCC", &nvcc);
    let mut build = cc::Build::new();
    build
        .cuda(true)
        .cudart("static")
        .debug(false)
        .opt_level(3)
        .include(&sppark)
        .include(&blst)
        .define("FEATURE_BLS12_381", None)
        .define("TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE", None)
        .flag("-std=c++17")
        .flag("-Xcompiler")
        .flag("-Wno-unused-function");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") && cfg!(target_arch = "x86_64") && std::is_x86_feature_detected!("adx") {
        build.define("__ADX__", None);
    }
    let archs = std::env::var("CUZK_CUDA_ARCHS").unwrap_or_else(|_| DEFAULT_CUDA_ARCHS.to_string());
    for arch in archs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        build.flag("-gencode").flag(format!("arch=compute_{arch},code=sm_{arch}"));
    }
    build.flag("-gencode").flag("arch=compute_90,code=compute_90");
    if std::env::var_os("CARGO_FEATURE_FAULT_INJECTION").is_some() {
        build.define("CUZK_FAULT_INJECTION", None);
    }
    build.file(root.join("cuda/cuzk_gpu.cu")).compile("cuzk_cuda");
    for lib in ["lib64", "lib"] {
        println!("cargo:rustc-link-search=native={}", cuda_home.join(lib).display());
    }
}
