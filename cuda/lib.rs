//! cuzk's CUDA pipeline, compiled by this crate's build script into a static library that
//! rustc links into every artefact of the `cuzk` crate; cuzk's src/backend/gpu/sys.rs declares
//! its C surface (cuzk_gpu.h).
//!
//! A crate of its own so that nvcc, the slowest step of a build, runs once for all of cuzk's
//! feature sets (the shipped library, the tools' `internals`, the tests): a build script
//! reruns whenever its package's features change, and this package's never do (except the
//! tests-only `fault-injection`).

// sppark's device registry (select_gpu, ngpus) is compiled by its build script into its rlib:
// name the crate so that it is linked.
extern crate sppark;
