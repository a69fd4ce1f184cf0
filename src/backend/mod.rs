//! Backends compute the MSMs of a synthesized circuit; everything around them (synthesis,
//! key handling, assembly, verification) is shared. The CPU backend runs everywhere; a GPU
//! backend plugs in behind the same trait.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod prep;

use crate::error::Result;
use crate::groth16::{MsmResults, ProvingKey};
use crate::synthesis::SynthesizedCircuit;
use crate::cancel::CancelToken;
pub use crate::timings::BackendKind;
use crate::timings::Timings;

pub trait Backend: Send + Sync {
    fn kind(&self) -> BackendKind;

    /// Device ordinal for GPU backends, -1 for the CPU.
    fn device_index(&self) -> i32;

    /// The H, L, A, B_G1 and B_G2 sums of one circuit. Consumes the circuit so that its large
    /// vectors can be freed (or handed to the device) as soon as they are used. Adds the time
    /// of each phase to `timings`; stops with `Cancelled` between phases once `cancel` is set.
    fn compute_msms(
        &self,
        key: &ProvingKey,
        circuit: SynthesizedCircuit,
        cancel: &CancelToken,
        timings: &mut Timings,
    ) -> Result<MsmResults>;
}
