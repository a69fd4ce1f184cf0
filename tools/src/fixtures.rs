//! Test fixtures made with filecoin-proofs itself: random-setup Groth16 parameters for the small
//! sector sizes, and freshly sealed random sectors with their C1 output. FOR TESTS ONLY: the
//! parameters carry the production file names but come from a random setup, so they never
//! verify against the network's keys — keep them in a test cache directory.

use std::fs;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::public_params;
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::seal::{self, SealCommitPhase1Output};
use filecoin_proofs_api::{PaddedBytesAmount, RegisteredSealProof, SectorId, UnpaddedBytesAmount};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::{parameter_cache_dir, CacheableParameters};
use storage_proofs_porep::stacked::StackedCompound;

use cuzk::internals::porep::porep_config;

/// A sealed sector's C2 input and everything needed to verify its proof.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SealedSector {
    pub registered_proof: RegisteredSealProof,
    pub miner_id: u64,
    #[serde(with = "hex::serde")]
    pub prover_id: [u8; 32],
    pub sector_id: u64,
    #[serde(with = "hex::serde")]
    pub comm_r: [u8; 32],
    #[serde(with = "hex::serde")]
    pub comm_d: [u8; 32],
    #[serde(with = "hex::serde")]
    pub ticket: [u8; 32],
    #[serde(with = "hex::serde")]
    pub seed: [u8; 32],
}

/// The prover id Filecoin derives from a miner actor id: the payload of its ID address (the
/// unsigned LEB128 varint of the id), zero-padded to 32 bytes. Same as filecoin-ffi's Go side.
pub fn prover_id_from_miner(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let (mut v, mut i) = (miner_id, 0);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        out[i] = if v == 0 { byte } else { byte | 0x80 };
        i += 1;
        if v == 0 {
            return out;
        }
    }
}

/// Makes sure filecoin-proofs (whose cache location is read once from
/// FIL_PROOFS_PARAMETER_CACHE) writes into `dir`.
fn ensure_settings_dir(dir: &Path) -> Result<()> {
    let settings_dir = parameter_cache_dir();
    ensure!(
        fs::canonicalize(&settings_dir).ok() == fs::canonicalize(dir).ok(),
        "filecoin-proofs uses parameter cache {} but {} was asked for: set FIL_PROOFS_PARAMETER_CACHE before the first filecoin-proofs call",
        settings_dir.display(),
        dir.display()
    );
    Ok(())
}

fn generate_params<Tree: 'static + MerkleTreeTrait>(proof: RegisteredSealProof, rng: &mut (impl RngCore + Send)) -> cuzk::error::Result<PathBuf> {
    let mut run = || -> Result<PathBuf> {
        let config = porep_config(proof)?;
        let params = public_params::<Tree>(&config)?;
        type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
        <Compound<Tree> as CompoundProof<_, _>>::groth_params(Some(&mut *rng), &params)?;
        <Compound<Tree> as CompoundProof<_, _>>::verifying_key(Some(&mut *rng), &params)?;
        let blank = <Compound<Tree> as CompoundProof<_, _>>::blank_circuit(&params);
        <Compound<Tree> as CacheableParameters<_, _>>::get_param_metadata(blank, &params)?;
        config.get_cache_params_path::<Tree>()
    };
    run().map_err(|e| cuzk::error::Error::internal(format!("{e:#}")))
}

/// Generates (random setup) the Groth16 parameters, verifying key and metadata of `proof` into
/// `dir` unless they are there already. Slow: ≈ 12 min for 2KiB on 2 cores.
pub fn ensure_params(proof: RegisteredSealProof, dir: &Path, rng: &mut (impl RngCore + Send)) -> Result<PathBuf> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    ensure_settings_dir(dir)?;
    cuzk::with_porep_shape!(proof, generate_params(proof, rng)).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Seals a sector of random data (PC1, PC2, C1) in `work_dir` and returns its C1 JSON plus the
/// statement its proof must verify against. Needs no Groth16 parameters.
pub fn seal_random_sector(
    proof: RegisteredSealProof,
    miner_id: u64,
    sector_id: u64,
    work_dir: &Path,
    rng: &mut impl Rng,
) -> Result<(Vec<u8>, SealedSector)> {
    let cache_dir = work_dir.join("cache");
    fs::create_dir_all(&cache_dir)?;
    let staged_path = work_dir.join("staged");
    let sealed_path = work_dir.join("sealed");
    let piece_size = UnpaddedBytesAmount::from(PaddedBytesAmount(u64::from(proof.sector_size())));
    let mut piece = vec![0u8; usize::try_from(u64::from(piece_size))?];
    rng.fill_bytes(&mut piece);

    let mut staged = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged_path)?;
    let (piece_info, _) = seal::add_piece(proof, Cursor::new(&piece), &mut staged, piece_size, &[])?;
    drop(staged);
    fs::File::create(&sealed_path)?;

    let prover_id = prover_id_from_miner(miner_id);
    let mut ticket = [0u8; 32];
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut ticket);
    rng.fill_bytes(&mut seed);
    ticket[31] &= 0x3f;
    seed[31] &= 0x3f;
    let sector = SectorId::from(sector_id);
    let pieces = [piece_info];

    let pc1 = seal::seal_pre_commit_phase1(proof, &cache_dir, &staged_path, &sealed_path, prover_id, sector, ticket, &pieces)?;
    let pc2 = seal::seal_pre_commit_phase2(pc1, &cache_dir, &sealed_path)?;
    let (comm_r, comm_d) = (pc2.comm_r, pc2.comm_d);
    let c1: SealCommitPhase1Output = seal::seal_commit_phase1(&cache_dir, &sealed_path, prover_id, sector, ticket, seed, pc2, &pieces)?;
    let json = serde_json::to_vec(&c1)?;
    let sealed = SealedSector {
        registered_proof: proof,
        miner_id,
        prover_id,
        sector_id,
        comm_r,
        comm_d,
        ticket,
        seed,
    };
    Ok((json, sealed))
}

/// Parses "2KiB", "8MiB", "512MiB", "32GiB", "64GiB" into the current (V1_1) seal proof.
pub fn registered_proof_for(size: &str) -> Result<RegisteredSealProof> {
    Ok(match size {
        "2KiB" => RegisteredSealProof::StackedDrg2KiBV1_1,
        "8MiB" => RegisteredSealProof::StackedDrg8MiBV1_1,
        "512MiB" => RegisteredSealProof::StackedDrg512MiBV1_1,
        "32GiB" => RegisteredSealProof::StackedDrg32GiBV1_1,
        "64GiB" => RegisteredSealProof::StackedDrg64GiBV1_1,
        other => bail!("unknown sector size {other:?} (2KiB, 8MiB, 512MiB, 32GiB, 64GiB)"),
    })
}

/// Where tests and tools keep random-setup parameters: `CUZK_TEST_PARAMS`, else
/// `~/.cache/cuzk/test-params` — never the production cache directory.
pub fn default_test_params_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CUZK_TEST_PARAMS") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/tmp"));
    home.join(".cache/cuzk/test-params")
}
