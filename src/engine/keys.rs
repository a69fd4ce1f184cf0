//! Proving and verifying keys of a filecoin-proofs parameter cache directory, opened once and
//! kept, keyed by file identity (path, size, modification time) so that a replaced file is read
//! again. Concurrent first requests for one key open it once. A proving key keeps its file open
//! and decodes its points where a call needs them (`ProvingKey`): part by part into device
//! memory, or whole into host memory.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use bellperson::groth16::{PreparedVerifyingKey, VerifyingKey};
use blstrs::Bls12;
use once_cell::sync::OnceCell;

use super::digests::DigestTable;
use crate::error::{Error, Result, Status};
use crate::groth16::{ProvingKey, QuerySizes};
use crate::timings::nanos;

/// A file as the engine caches what it read from it: a replaced file has another identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct FileIdentity {
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileIdentity {
    pub(super) fn of(path: &Path, meta: &std::fs::Metadata) -> Self {
        FileIdentity {
            path: path.to_path_buf(),
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

fn open(path: &Path) -> Result<(File, FileIdentity)> {
    let file = File::open(path).map_err(|e| {
        let status = if e.kind() == ErrorKind::NotFound {
            Status::ParametersNotFound
        } else {
            Status::ParametersInvalid
        };
        Error::new(
            status,
            format!(
                "cannot open {}: {e} (production parameters come from `paramfetch`; test parameters from `cuzk-fixtures params`)",
                path.display()
            ),
        )
    })?;
    let meta = file
        .metadata()
        .map_err(|e| Error::new(Status::ParametersInvalid, format!("{}: {e}", path.display())))?;
    Ok((file, FileIdentity::of(path, &meta)))
}

fn corrupt(path: &Path, e: std::io::Error) -> Error {
    Error::new(Status::ParametersInvalid, format!("corrupt parameter file {}: {e}", path.display()))
}

type Slot<T> = Arc<OnceCell<Arc<T>>>;

/// A map from file identity to a value loaded at most once (per identity) at a time.
struct LoadOnce<T> {
    slots: Mutex<HashMap<FileIdentity, Slot<T>>>,
}

impl<T> LoadOnce<T> {
    fn new() -> Self {
        LoadOnce {
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// The value for `path`, loading it with `load` if it is not resident. Returns the value
    /// and whether this call did the loading.
    fn get(&self, path: &Path, load: impl FnOnce(File, &FileIdentity) -> Result<T>) -> Result<(Arc<T>, bool)> {
        let (file, identity) = open(path)?;
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            // A file that changed on disk replaces the old entry instead of piling up beside it.
            slots.retain(|id, _| id.path != identity.path || *id == identity);
            slots.entry(identity.clone()).or_default().clone()
        };
        let mut loaded_here = false;
        let value = slot.get_or_try_init(|| {
            loaded_here = true;
            load(file, &identity).map(Arc::new)
        })?;
        Ok((value.clone(), loaded_here))
    }

    /// Forgets the value of `path` (every identity of it); true when one was resident.
    fn forget(&self, path: &Path) -> bool {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let before = slots.len();
        slots.retain(|id, _| id.path != path);
        slots.len() != before
    }

    /// The values loaded so far.
    fn resident(&self) -> Vec<Arc<T>> {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.values().filter_map(|slot| slot.get().cloned()).collect()
    }
}

pub struct KeyStore {
    proving: LoadOnce<ProvingKey>,
    verifying: LoadOnce<PreparedVerifyingKey<Bls12>>,
    /// When set, every file is checked against its digest before it is read (`digests`).
    digests: Option<Arc<DigestTable>>,
}

impl KeyStore {
    pub(super) fn new(digests: Option<Arc<DigestTable>>) -> Self {
        KeyStore {
            proving: LoadOnce::new(),
            verifying: LoadOnce::new(),
            digests,
        }
    }

    fn check_digest(&self, path: &Path, file: &File, identity: &FileIdentity) -> Result<()> {
        self.digests.as_ref().map_or(Ok(()), |table| table.check(path, file, identity))
    }

    /// The proving key in `path` (its verifying key and query sizes read, its points not yet);
    /// `load_ns` gets the time spent opening it (0 when held). Never called on one of `pool`'s
    /// threads, which decode its points: a worker waiting for another call's load would hold a
    /// worker that call's decoding may wait for (rayon runs other queued jobs while a worker
    /// waits for its own).
    pub fn proving_key(&self, path: &Path, pool: &rayon::ThreadPool, load_ns: &mut u64) -> Result<Arc<ProvingKey>> {
        if pool.current_thread_index().is_some() {
            return Err(Error::internal(
                "a proving key was requested from one of the engine's workers (it may wait for a load that needs that worker)",
            ));
        }
        let start = Instant::now();
        let (key, loaded) = self.proving.get(path, |file, identity| {
            self.check_digest(path, &file, identity)?;
            let key = ProvingKey::open(file, path.display().to_string()).map_err(|e| corrupt(path, e))?;
            log::info!("opened proving key {} in {:.2?}", path.display(), start.elapsed());
            Ok(key)
        })?;
        if loaded {
            *load_ns += nanos(start.elapsed());
        }
        Ok(key)
    }

    /// How many points each query of the proving key in `path` holds: the resident key's, else
    /// read from the file's counts (its points are not read).
    pub fn query_sizes(&self, path: &Path) -> Result<QuerySizes> {
        let label = path.display().to_string();
        if let Some(key) = self.resident_proving_keys().iter().find(|k| k.label() == label) {
            return Ok(key.query_sizes());
        }
        let (file, _) = open(path)?;
        QuerySizes::read(&mut BufReader::new(file)).map_err(|e| corrupt(path, e))
    }

    /// Forgets the proving key of `path` (calls using it keep it until they end); true when it
    /// was held.
    pub fn evict_proving_key(&self, path: &Path) -> bool {
        self.proving.forget(path)
    }

    /// The proving keys held (their points in host memory or not).
    pub fn resident_proving_keys(&self) -> Vec<Arc<ProvingKey>> {
        self.proving.resident()
    }

    /// The prepared verifying key in `path` (a `.vk` file).
    pub fn verifying_key(&self, path: &Path) -> Result<Arc<PreparedVerifyingKey<Bls12>>> {
        let (vk, _) = self.verifying.get(path, |file, identity| {
            self.check_digest(path, &file, identity)?;
            let vk = VerifyingKey::<Bls12>::read(BufReader::new(file)).map_err(|e| corrupt(path, e))?;
            Ok(bellperson::groth16::prepare_verifying_key(&vk))
        })?;
        Ok(vk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn loads_once_per_identity_and_reloads_changed_files() {
        let dir = std::env::temp_dir().join(format!("cuzk-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k");
        std::fs::write(&path, b"one").unwrap();
        let cache = LoadOnce::<usize>::new();
        let loads = AtomicUsize::new(0);
        let load = |_f: File, _: &FileIdentity| {
            loads.fetch_add(1, Ordering::SeqCst);
            Ok(std::fs::metadata(&path).unwrap().len() as usize)
        };
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| assert_eq!(*cache.get(&path, load).unwrap().0, 3));
            }
        });
        assert_eq!(loads.load(Ordering::SeqCst), 1, "concurrent first calls must load once");
        std::fs::write(&path, b"three").unwrap();
        assert_eq!(*cache.get(&path, load).unwrap().0, 5);
        assert_eq!(loads.load(Ordering::SeqCst), 2);
        assert_eq!(cache.slots.lock().unwrap().len(), 1, "the stale entry is dropped");
        let missing = cache.get(&dir.join("missing"), load).unwrap_err();
        assert_eq!(missing.status, Status::ParametersNotFound);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn failed_load_is_not_cached() {
        let dir = std::env::temp_dir().join(format!("cuzk-keys-fail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k");
        std::fs::write(&path, b"x").unwrap();
        let cache = LoadOnce::<u8>::new();
        assert!(cache.get(&path, |_, _| Err(Error::internal("boom"))).is_err());
        assert_eq!(*cache.get(&path, |_, _| Ok(7)).unwrap().0, 7);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
