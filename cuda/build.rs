//! Compiles this directory's CUDA pipeline (cuzk_gpu.cu and the stage headers it includes)
//! with nvcc into the static library `cuzk_cuda`, linked with CUDA's static runtime.

use std::path::{Path, PathBuf};

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

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let repository = here.parent().expect("cuda/ lies in cuzk's repository");
    for var in ["NVCC", "CUDA_HOME", "CUZK_CUDA_ARCHS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed={}", here.display());
    let nvcc = find_nvcc(repository).unwrap_or_else(|| {
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
    // nvcc compiles the architectures one after another unless told to run them in parallel:
    // as many at once as cargo runs jobs.
    build
        .flag("--threads")
        .flag(std::env::var("NUM_JOBS").unwrap_or_else(|_| "1".to_string()));
    build.file(here.join("cuzk_gpu.cu")).compile("cuzk_cuda");
    for lib in ["lib64", "lib"] {
        println!("cargo:rustc-link-search=native={}", cuda_home.join(lib).display());
    }
}
