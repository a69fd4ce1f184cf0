//! Parameter files checked against published digests before first use, as filecoin-proofs
//! does under FIL_PROOFS_VERIFY_PRODUCTION_PARAMS: the file's name must be in the table
//! (filecoin-proofs' parameters.json, or a table of the same format the caller names) and the
//! first 32 hex digits of the BLAKE2b-512 of its whole content must be the table's `digest`.
//! Each file identity (path, size, modification time) is hashed once per engine.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use serde::Deserialize;

use super::keys::FileIdentity;
use crate::error::{Error, Result, Status};

/// Hex digits of the digest that the table records (filecoin-proofs truncates to 128 bits).
const DIGEST_HEX_DIGITS: usize = 32;

#[derive(Deserialize)]
struct Entry {
    digest: String,
}

pub(super) struct DigestTable {
    /// Where the table came from, for messages.
    source: String,
    digests: BTreeMap<String, String>,
    verified: Mutex<HashSet<FileIdentity>>,
}

impl DigestTable {
    /// filecoin-proofs' own table (its parameters.json, compiled into storage-proofs-core).
    pub(super) fn filecoin_proofs() -> Self {
        let digests = storage_proofs_core::parameter_cache::PARAMETERS
            .iter()
            .map(|(name, data)| (name.clone(), data.digest.clone()))
            .collect();
        Self::new("filecoin-proofs' parameters.json".into(), digests)
    }

    /// A table in parameters.json's format (file name → {"digest": …, …}).
    pub(super) fn from_file(path: &Path) -> Result<Self> {
        let invalid = |e: String| Error::new(Status::ParametersInvalid, format!("digest table {}: {e}", path.display()));
        let file = File::open(path).map_err(|e| invalid(e.to_string()))?;
        let entries: BTreeMap<String, Entry> = serde_json::from_reader(BufReader::new(file)).map_err(|e| invalid(e.to_string()))?;
        let digests = entries.into_iter().map(|(name, entry)| (name, entry.digest)).collect();
        Ok(Self::new(path.display().to_string(), digests))
    }

    fn new(source: String, digests: BTreeMap<String, String>) -> Self {
        DigestTable {
            source,
            digests,
            verified: Mutex::new(HashSet::new()),
        }
    }

    /// PARAMETERS_INVALID unless `file` (opened from `path`, of `identity`) is in the table
    /// with its digest. Reads the whole file the first time an identity is seen.
    pub(super) fn check(&self, path: &Path, file: &File, identity: &FileIdentity) -> Result<()> {
        if self.verified.lock().unwrap_or_else(|p| p.into_inner()).contains(identity) {
            return Ok(());
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let expected = self.digests.get(&name).ok_or_else(|| {
            Error::new(
                Status::ParametersInvalid,
                format!("{}: no digest for {name:?} in {}", path.display(), self.source),
            )
        })?;
        let start = Instant::now();
        let mut state = blake2b_simd::Params::new().to_state();
        std::io::copy(&mut BufReader::with_capacity(8 << 20, file), &mut state)
            .map_err(|e| Error::new(Status::ParametersInvalid, format!("reading {}: {e}", path.display())))?;
        let hex = state.finalize().to_hex();
        let digest = &hex[..DIGEST_HEX_DIGITS];
        if digest != expected {
            return Err(Error::new(
                Status::ParametersInvalid,
                format!(
                    "{}: digest {digest} is not {expected}, the digest {} gives for it",
                    path.display(),
                    self.source
                ),
            ));
        }
        log::info!("{} matches its digest in {} ({:.2?})", path.display(), self.source, start.elapsed());
        self.verified.lock().unwrap_or_else(|p| p.into_inner()).insert(identity.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's hashlib.blake2b(b"cuzk parameter digest test\n").hexdigest()[:32]: another
    /// implementation's answer for the same bytes.
    const CONTENT: &[u8] = b"cuzk parameter digest test\n";
    const DIGEST: &str = "81008fed679aad6c50cb8243a6033b4f";

    fn identity(path: &Path) -> FileIdentity {
        FileIdentity::of(path, &std::fs::metadata(path).unwrap())
    }

    #[test]
    fn a_file_passes_with_its_digest_and_fails_with_another_or_none() {
        let dir = std::env::temp_dir().join(format!("cuzk-digests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (good, other, unlisted) = (dir.join("good.params"), dir.join("other.params"), dir.join("unlisted.vk"));
        for path in [&good, &other, &unlisted] {
            std::fs::write(path, CONTENT).unwrap();
        }
        std::fs::write(&other, b"cuzk parameter digest test!\n").unwrap();
        let table = dir.join("parameters.json");
        let entry = |digest: &str| serde_json::json!({ "cid": "-", "digest": digest, "sector_size": 2048 });
        std::fs::write(
            &table,
            serde_json::json!({ "good.params": entry(DIGEST), "other.params": entry(DIGEST) }).to_string(),
        )
        .unwrap();
        let table = DigestTable::from_file(&table).unwrap();
        let check = |path: &Path| table.check(path, &File::open(path).unwrap(), &identity(path));

        check(&good).expect("the file with its digest");
        check(&good).expect("again, from the verified set");
        let err = check(&other).unwrap_err();
        assert_eq!(err.status, Status::ParametersInvalid);
        assert!(err.message.contains(DIGEST) && err.message.contains("other.params"), "{err}");
        let err = check(&unlisted).unwrap_err();
        assert!(err.message.contains("no digest for \"unlisted.vk\""), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_built_in_table_is_filecoin_proofs() {
        let table = DigestTable::filecoin_proofs();
        assert!(table.digests.len() > 40, "{} entries", table.digests.len());
        assert!(table.digests.values().all(|d| d.len() == DIGEST_HEX_DIGITS));
    }
}
