//! Circuit shapes (R1CS matrices) by circuit identity, each extracted once and kept for the
//! witness-only synthesis of every later proof of that circuit: in memory for the process, and
//! in a directory on disk (`EngineConfig::shape_cache`) for the next processes, which read it
//! instead of extracting it again. A file that cannot be read or does not check out
//! (`CircuitShape::read_file`) is logged and replaced by a fresh extraction.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use once_cell::sync::OnceCell;
use rayon::ThreadPool;

use crate::error::{Error, Result};
use crate::synthesis::r1cs::{CircuitShape, SHAPE_FILE_VERSION};
use crate::timings::{nanos, Timings};

/// Circuit shapes (R1CS matrices) by circuit identity, each extracted once.
#[derive(Default)]
pub(super) struct ShapeCache {
    shapes: Mutex<HashMap<String, Arc<OnceCell<Arc<CircuitShape>>>>>,
    /// Where shapes are kept between processes; None: nowhere.
    dir: Option<PathBuf>,
    /// Files being written, off the callers' threads; finished when the cache is dropped.
    writers: Mutex<Vec<JoinHandle<()>>>,
}

impl ShapeCache {
    pub(super) fn new(dir: Option<PathBuf>) -> Self {
        ShapeCache {
            shapes: Mutex::default(),
            dir,
            writers: Mutex::default(),
        }
    }

    /// The shape of the circuits named `id` on first use: read from the cache directory, else
    /// made by `extract` and written there; both in `pool`, timed into `shape_extract_ns`.
    /// Concurrent first calls make it once.
    pub(super) fn get(
        &self,
        id: &str,
        pool: &ThreadPool,
        extract: impl FnOnce() -> Result<CircuitShape> + Send,
        t: &mut Timings,
    ) -> Result<Arc<CircuitShape>> {
        let slot = self
            .shapes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(id.to_string())
            .or_default()
            .clone();
        let shape = slot.get_or_try_init(|| {
            let start = Instant::now();
            let file = self.dir.as_ref().map(|dir| dir.join(format!("{id}.v{SHAPE_FILE_VERSION}.cuzk-shape")));
            let (shape, how) = match file.as_deref().and_then(|file| pool.install(|| read(file, id))) {
                Some(shape) => (Arc::new(shape), "read from disk"),
                None => {
                    let shape = Arc::new(pool.install(extract)?);
                    if let Some(file) = file {
                        self.write_later(file, id, &shape);
                    }
                    (shape, "extracted")
                }
            };
            t.shape_extract_ns += nanos(start.elapsed());
            log::info!(
                "circuit shape {id}: {} constraints, {} MiB, {how} in {:.2?}",
                shape.num_constraints(),
                shape.size_bytes() >> 20,
                start.elapsed()
            );
            Ok::<_, Error>(shape)
        })?;
        Ok(shape.clone())
    }

    /// Writes `shape` to `file` on a thread of its own: into a temporary file beside it, renamed
    /// into place once complete, so that no reader ever sees half a file.
    fn write_later(&self, file: PathBuf, id: &str, shape: &Arc<CircuitShape>) {
        let (owned_id, shape) = (id.to_string(), Arc::clone(shape));
        let writer = std::thread::Builder::new().name("cuzk-shape-writer".into()).spawn(move || {
            let (id, start) = (owned_id, Instant::now());
            match write(&file, &id, &shape) {
                Ok(()) => {
                    shape.set_file(&file, &id);
                    remove_other_versions(&file, &id);
                    log::info!("circuit shape {id} written to {} in {:.2?}", file.display(), start.elapsed())
                }
                Err(e) => log::warn!("circuit shape {id} not kept on disk: {}: {e}", file.display()),
            }
        });
        match writer {
            Ok(writer) => self.writers.lock().unwrap_or_else(|p| p.into_inner()).push(writer),
            Err(e) => log::warn!("circuit shape {id} not kept on disk: no writer thread: {e}"),
        }
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
                dropped += slot.get().map_or(0, |s| s.held_bytes() as u64);
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
                    bytes: s.held_bytes() as u64,
                    shape_bytes: s.size_bytes() as u64,
                })
            })
            .collect()
    }
}

impl Drop for ShapeCache {
    fn drop(&mut self) {
        for writer in self.writers.get_mut().unwrap_or_else(|p| p.into_inner()).drain(..) {
            let _ = writer.join();
        }
    }
}

/// The shape of circuit `id` in `file`; None when there is none, or it does not check out
/// (logged: it is extracted and written again).
fn read(file: &Path, id: &str) -> Option<CircuitShape> {
    if !file.exists() {
        return None;
    }
    match CircuitShape::read_path(file, id) {
        Ok(shape) => Some(shape),
        Err(e) => {
            log::warn!("circuit shape file {}: {e}: extracting the shape again", file.display());
            None
        }
    }
}

fn write(file: &Path, id: &str, shape: &CircuitShape) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let temporary = file.with_extension(format!("tmp.{}", std::process::id()));
    let written = std::fs::File::create(&temporary)
        .and_then(|f| {
            shape.write_file(id, &f)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&temporary, file));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Removes the shape files of circuit `id` beside `file` that another format version wrote
/// (`{id}.v{N}.cuzk-shape`): this library never reads them, and a 32GiB shape's file is GBs.
fn remove_other_versions(file: &Path, id: &str) {
    let (Some(dir), Some(current)) = (file.parent(), file.file_name()) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let version = name
            .to_str()
            .and_then(|n| n.strip_prefix(id)?.strip_prefix(".v")?.strip_suffix(".cuzk-shape"))
            .and_then(|v| v.parse::<u32>().ok());
        if version.is_some() && name != current {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => log::info!("circuit shape {id}: {} of another format version removed", entry.path().display()),
                Err(e) => log::warn!("circuit shape {id}: {} of another format version kept: {e}", entry.path().display()),
            }
        }
    }
}

/// A circuit shape the engine holds (engine status).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ShapeStatus {
    pub id: String,
    pub constraints: u64,
    /// Held in host memory: the densities, and the matrices unless every device holds them
    /// and the shape file can give them back.
    pub bytes: u64,
    /// The whole shape, matrices included wherever they are.
    pub shape_bytes: u64,
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
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let mut t = Timings::new();
        let first = cache.get("small", &pool, || CircuitShape::extract(small.clone()), &mut t).unwrap();
        assert!(t.shape_extract_ns > 0);
        let mut t = Timings::new();
        let again = cache.get("small", &pool, || panic!("extracted twice"), &mut t).unwrap();
        assert!(Arc::ptr_eq(&first, &again) && t.shape_extract_ns == 0);
        // Another identity (another sector size) gets its own shape, never the cached one.
        let other = cache.get("large", &pool, || CircuitShape::extract(large.clone()), &mut t).unwrap();
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
