//! Circuit shapes (R1CS matrices) by circuit identity, each extracted once per process and
//! kept for the witness-only synthesis of every later proof of that circuit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use once_cell::sync::OnceCell;

use crate::error::{Error, Result};
use crate::synthesis::r1cs::CircuitShape;
use crate::timings::{nanos, Timings};

/// Circuit shapes (R1CS matrices) by circuit identity, each extracted once.
#[derive(Default)]
pub(super) struct ShapeCache {
    shapes: Mutex<HashMap<String, Arc<OnceCell<Arc<CircuitShape>>>>>,
}

impl ShapeCache {
    /// The shape of the circuits named `id`, made by `extract` (timed into `shape_extract_ns`)
    /// on first use; concurrent first calls extract it once.
    pub(super) fn get(&self, id: &str, extract: impl FnOnce() -> Result<CircuitShape>, t: &mut Timings) -> Result<Arc<CircuitShape>> {
        let slot = self
            .shapes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(id.to_string())
            .or_default()
            .clone();
        let shape = slot.get_or_try_init(|| {
            let start = Instant::now();
            let shape = extract()?;
            t.shape_extract_ns += nanos(start.elapsed());
            log::info!(
                "circuit shape {id}: {} constraints, {} MiB, extracted in {:.2?}",
                shape.num_constraints(),
                shape.size_bytes() >> 20,
                start.elapsed()
            );
            Ok::<_, Error>(Arc::new(shape))
        })?;
        Ok(shape.clone())
    }

    pub(super) fn evict(&self, id: &str) -> bool {
        self.shapes.lock().unwrap_or_else(|p| p.into_inner()).remove(id).is_some()
    }

    /// Drops the shapes whose circuit id `keep` refuses; their bytes.
    pub(super) fn evict_unless(&self, keep: impl Fn(&str) -> bool) -> u64 {
        let mut shapes = self.shapes.lock().unwrap_or_else(|p| p.into_inner());
        let mut dropped = 0;
        shapes.retain(|id, slot| {
            let kept = keep(id);
            if !kept {
                dropped += slot.get().map_or(0, |s| s.size_bytes() as u64);
            }
            kept
        });
        dropped
    }

    pub(super) fn status(&self) -> Vec<ShapeStatus> {
        let shapes = self.shapes.lock().unwrap_or_else(|p| p.into_inner());
        shapes
            .iter()
            .filter_map(|(id, slot)| {
                slot.get().map(|s| ShapeStatus {
                    id: id.clone(),
                    constraints: s.num_constraints() as u64,
                    bytes: s.size_bytes() as u64,
                })
            })
            .collect()
    }
}

/// A circuit shape the engine holds (engine status).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ShapeStatus {
    pub id: String,
    pub constraints: u64,
    pub bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;
    use crate::synthesis::r1cs::synthesize_witness;
    use crate::synthesis::SynthesizedCircuit;
    use bellperson::{Circuit, ConstraintSystem, SynthesisError};
    use blstrs::Scalar;

    /// `n` constraints x·x = y.
    #[derive(Clone)]
    struct Squares(u64);

    impl Circuit<Scalar> for Squares {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> std::result::Result<(), SynthesisError> {
            for i in 0..self.0 {
                let x = cs.alloc(|| "x", || Ok(Scalar::from(i)))?;
                let y = cs.alloc(|| "y", || Ok(Scalar::from(i * i)))?;
                cs.enforce(|| "x·x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            }
            Ok(())
        }
    }

    #[test]
    fn shapes_are_extracted_once_per_circuit_id() {
        let (small, large) = (Squares(100), Squares(200));
        let cache = ShapeCache::default();
        let mut t = Timings::new();
        let first = cache.get("small", || CircuitShape::extract(small.clone()), &mut t).unwrap();
        assert!(t.shape_extract_ns > 0);
        let mut t = Timings::new();
        let again = cache.get("small", || panic!("extracted twice"), &mut t).unwrap();
        assert!(Arc::ptr_eq(&first, &again) && t.shape_extract_ns == 0);
        // Another identity (another sector size) gets its own shape, never the cached one.
        let other = cache.get("large", || CircuitShape::extract(large.clone()), &mut t).unwrap();
        assert_ne!(other.num_constraints(), first.num_constraints());
        // A witness of another shape is refused, not proven.
        let witness = synthesize_witness(large, None).unwrap();
        assert_eq!(
            SynthesizedCircuit::from_shape(&first, witness).err().unwrap().status,
            Status::InvalidArgument
        );
        assert!(cache.evict("small") && !cache.evict("small"));
        assert_eq!(cache.status().len(), 1);
    }
}
