//! cuzk: an embeddable Groth16 proving engine for Filecoin (BLS12-381).
//!
//! The data path (docs/ARCHITECTURE.md): `ffi` (C ABI) → `engine` (config, resident keys and
//! circuit shapes, the prove pipeline, status) → `kinds` (PoRep C2: input checks, partition
//! circuits, verification) → `synthesis` (classic, or R1CS: witness + sparse products) →
//! `backend` (CPU | GPU: NTTs and MSMs) → `groth16` (keys, assembly with r, s) → proof bytes.
//!
//! The Rust API: [`engine::Engine`] proves Filecoin proof kinds as the C ABI does;
//! [`Prover`] proves any bellperson circuit with a given [`ProvingKey`] on a chosen backend.

// A CPU-only build (without the `cuda` feature) leaves the GPU backend's helpers (pinned
// staging, resident caches, the compact witness) unused.
#![cfg_attr(not(feature = "cuda"), allow(dead_code, unused_imports))]

mod allocator;
mod backend;
pub mod cancel;
pub mod engine;
pub mod error;
pub mod ffi;
mod groth16;
mod host_memory;
mod kinds;
mod logging;
mod parallel;
mod prover;
mod synthesis;
pub mod timings;

pub use groth16::ProvingKey;
pub use prover::{BackendChoice, CircuitOptions, Prover};
pub use synthesis::r1cs::{CircuitShape, SegmentedCircuit, Whole};

/// The engine's internals, for cuzk-tools (fixtures, benchmarks, made-up sectors) and the
/// comparison tests only: NOT part of the API, and absent from the shipped library (the
/// `internals` feature is never on there).
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    pub use crate::allocator::{heap_stats, live_heap_bytes, return_free_memory, HeapStats};
    pub use crate::backend::cpu::{CpuBackend, Domain};
    /// Tests only: faults on demand on the GPU (feature `fault-injection`).
    #[cfg(feature = "fault-injection")]
    pub use crate::backend::gpu::injection as gpu_fault_injection;
    #[cfg(feature = "cuda")]
    pub use crate::backend::gpu::{device_count, GpuBackend, GpuConfig};
    pub use crate::backend::{Backend, DeviceStatus, ResidentKey};
    pub use crate::engine::MadeUpSector;
    pub use crate::engine::SectorInput;
    pub use crate::groth16::{assemble, check_key_fits, MsmResults, QuerySizes};
    pub use crate::kinds::porep;
    pub use crate::kinds::post;
    pub use crate::kinds::post::MadeUpPost;
    pub use crate::kinds::update::MadeUpUpdate;
    pub use crate::kinds::{ProofJob, ProofRequest, SynthesisPath};
    pub use crate::synthesis::r1cs;
    pub use crate::synthesis::{synthesize, synthesize_classic, synthesize_with_shape, Density, Products, SynthesizedCircuit};
}
