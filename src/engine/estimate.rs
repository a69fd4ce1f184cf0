//! What a proof kind takes in memory, for a caller's scheduler to declare before it proves
//! (Curio's tasks declare their RAM): what the engine keeps for the kind between calls, and
//! what one call adds while it runs, on the host and on each device. Upper bounds computed
//! from the proving key's query sizes (read from the parameter file's counts), the circuit's
//! shape, the engine's host memory budget and proving lanes, and the backend's buffers.

use super::pipeline::{partition_bytes, places_ahead};
use super::{Engine, RegisteredProof};
use crate::error::Result;
use crate::timings::Timings;

/// What a call allocates beside its partitions and lanes, as a share of those and a floor: its
/// inputs decoded, synthesis's bookkeeping, the proof and its verification (measured at 2KiB:
/// 0.1 MiB over the rest for a WindowPoSt partition; tests/memory_estimate.rs).
const CALL_OVERHEAD_SHARE: u64 = 8;
const CALL_OVERHEAD_FLOOR: u64 = 1 << 20;

/// The memory of one proof kind (`Engine::memory_estimate`), in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemoryEstimate {
    /// Partition circuits one call proves.
    pub partitions: u64,
    /// Host memory the engine keeps for the kind between calls (a preload makes it): the
    /// proving key's points (none for a key resident on the devices: they are read from the
    /// parameter file as they are copied there), the circuit's shape, and the verifying key
    /// prepared by the first self-verification.
    pub host_resident_bytes: u64,
    /// Host memory a call adds while it runs: its partitions synthesized and waiting or in
    /// proving (one more than its proving lanes, as many as the engine's host memory budget
    /// lets wait, at least one), the working memory of each proving lane the call can use, a
    /// resident key's upload when it is not on the devices yet (two parts read from its
    /// file), and an allowance for the rest (its inputs decoded, the proof).
    pub host_call_bytes: u64,
    /// Device memory the engine keeps for the kind between calls, on each device: the key's
    /// copy when it fits the key budget (else it is streamed) and the circuit's matrices.
    pub device_resident_bytes: u64,
    /// Device memory a call adds on each device it proves on (one partition there at a time):
    /// NTT and witness buffers and the largest MSM's scratch.
    pub device_call_bytes: u64,
}

impl Engine {
    /// The memory a proof of `proof` takes with this engine's configuration. Reads the counts
    /// of the proving key's file (not its points) unless the key is resident, and extracts the
    /// circuit's shape when the engine does not hold it yet (as a preload does; it is kept).
    pub fn memory_estimate(&self, proof: impl Into<RegisteredProof>) -> Result<MemoryEstimate> {
        let proof = proof.into();
        let (id, source) = proof.circuit()?;
        let partitions = proof.partitions()? as u64;
        let sizes = self.keys.query_sizes(&self.proving_key_path(&id))?;
        let shape_bytes = self
            .cached_shape(&id, source, &mut Timings::new())?
            .map_or(0, |shape| shape.size_bytes() as u64);
        let backend = &*self.prover.backend;
        let call = backend.call_memory(&sizes, shape_bytes);
        let partition = partition_bytes(&sizes, backend.evaluates_products());
        let lanes = self.proving_lanes(backend);
        let held = partitions.min(places_ahead(lanes)) * partition;
        let waiting = held.min(partition.max(self.pipeline_budget.limit()));
        let lanes_used = partitions.min(lanes as u64);
        let call_bytes = waiting + lanes_used * call.host_lane_bytes + call.host_key_upload_bytes;
        Ok(MemoryEstimate {
            partitions,
            host_resident_bytes: call.host_key_bytes + shape_bytes + sizes.prepared_verifying_key_bytes(),
            host_call_bytes: call_bytes + call_bytes / CALL_OVERHEAD_SHARE + CALL_OVERHEAD_FLOOR,
            device_resident_bytes: call.device_resident_bytes,
            device_call_bytes: call.device_call_bytes,
        })
    }
}
