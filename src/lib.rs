//! cuzk: an embeddable Groth16 proving engine for Filecoin (BLS12-381).
//!
//! The data path: `ffi` (C ABI) → `engine` (one per process: config, resident keys, backend)
//! → `porep` (C1 checks, partition circuits) → `synthesis` (our ConstraintSystem) →
//! `backend` (cpu | gpu: NTT + MSMs; the GPU keeps keys `resident` in device memory and
//! stages copies through a `pinned` pool) → `groth16` (assembly with r, s) → proof bytes.

pub mod backend;
pub mod cancel;
pub mod engine;
pub mod error;
pub mod ffi;
pub mod fixtures;
pub mod groth16;
pub mod keys;
mod parallel;
pub mod porep;
pub mod r1cs;
pub mod synthesis;
pub mod testing;
pub mod timings;
pub mod workloads;
