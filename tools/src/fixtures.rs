//! Test fixtures: random-setup Groth16 parameters of filecoin-proofs' circuits for the small
//! sector sizes (PoRep, WindowPoSt, WinningPoSt, SnapDeals; made by [`crate::setup`] from their
//! blank circuits, under filecoin-proofs' cache names), and, made with filecoin-proofs itself,
//! freshly sealed random sectors with their C1 output, sealed sectors' PoSt vanilla proofs, and
//! CC sectors updated with new data with their update vanilla proofs. FOR TESTS ONLY: the
//! parameters carry the production file names but come from a random setup, so they never
//! verify against the network's keys — keep them in a test cache directory.

use std::fs;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::{public_params, window_post_public_params, winning_post_public_params};
use filecoin_proofs::types::{MerkleTreeTrait, PoStConfig, PoStType};
use filecoin_proofs_api::seal::{self, SealCommitPhase1Output, SealPreCommitPhase2Output};
use filecoin_proofs_api::{post, update, PrivateReplicaInfo, PublicReplicaInfo, RegisteredPoStProof, RegisteredUpdateProof};
use filecoin_proofs_api::{PaddedBytesAmount, PieceInfo, RegisteredSealProof, SectorId, UnpaddedBytesAmount};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::{
    parameter_cache_dir, parameter_cache_params_path, parameter_cache_verifying_key_path, CacheableParameters, ParameterSetMetadata,
};
use storage_proofs_porep::stacked::StackedCompound;
use storage_proofs_post::fallback::{self, FallbackPoStCompound};
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::EmptySectorUpdateCompound;

use cuzk::internals::porep::porep_config;

use crate::params_file::{write_parameters, write_renamed};

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

impl SealedSector {
    /// filecoin-proofs-api's own `verify_seal` of `proof` for this sector (the independent
    /// check), with the verifying key from FIL_PROOFS_PARAMETER_CACHE.
    pub fn verify_with_filecoin_proofs(&self, proof: &[u8]) -> Result<bool> {
        seal::verify_seal(
            self.registered_proof,
            self.comm_r,
            self.comm_d,
            self.prover_id,
            self.sector_id.into(),
            self.ticket,
            self.seed,
            proof,
        )
    }

    /// A fixture written by `cuzk-fixtures seal`: its C1 JSON and sector.
    pub fn read_fixture(dir: &Path) -> Result<(Vec<u8>, SealedSector)> {
        let c1_json = fs::read(dir.join("c1.json")).with_context(|| format!("{}/c1.json", dir.display()))?;
        let sector = serde_json::from_slice(&fs::read(dir.join("sector.json")).with_context(|| format!("{}/sector.json", dir.display()))?)?;
        Ok((c1_json, sector))
    }
}

/// The prover id of a miner actor id (the engine's, shared with the daemon).
pub use cuzk::engine::prover_id_from_miner;

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
        let params = public_params::<Tree>(&porep_config(proof)?)?;
        type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
        let blank = || <Compound<Tree> as CompoundProof<_, _>>::blank_circuit(&params);
        ensure_random_setup::<Compound<Tree>, _, _>(&params, blank, rng)
    };
    run().map_err(|e| cuzk::error::Error::internal(format!("{e:#}")))
}

/// Makes the random-setup Groth16 parameters and verifying key of the compound proof `K`
/// (`setup.rs`) under filecoin-proofs' names in its parameter cache unless both are there,
/// each written to a temporary file renamed into place, and its metadata; returns the
/// `.params` path. A process making them holds `<id>.lock` in the cache: another one making
/// the same waits, then finds both (never a key from one setup beside a verifying key from
/// another).
fn ensure_random_setup<K, C, P>(params: &P, blank: impl Fn() -> C, rng: &mut (impl RngCore + Send)) -> Result<PathBuf>
where
    K: CacheableParameters<C, P>,
    C: bellperson::Circuit<blstrs::Scalar>,
    P: ParameterSetMetadata,
{
    let id = K::cache_identifier(params);
    let params_path = parameter_cache_params_path(&id);
    let vk_path = parameter_cache_verifying_key_path(&id);
    let present = || params_path.exists() && vk_path.exists();
    // Checked again under the lock: another process may have made them meanwhile. A cache
    // that has both needs no lock (nor write access).
    if !present() {
        let _lock = lock_exclusive(&params_path.with_extension("lock"))?;
        if !present() {
            let start = std::time::Instant::now();
            let parameters = crate::setup::random_parameters(blank(), rng).with_context(|| format!("random setup of {id}"))?;
            write_parameters(&parameters, &params_path)?;
            write_renamed(&vk_path, |file| parameters.vk.write(file))?;
            eprintln!("cuzk-fixtures: random setup of {id} in {:.1} s", start.elapsed().as_secs_f64());
        }
    }
    K::get_param_metadata(blank(), params)?;
    Ok(params_path)
}

/// `path` (created if missing) opened and locked exclusively (flock) until the file is dropped.
fn lock_exclusive(path: &Path) -> Result<fs::File> {
    use std::os::fd::AsRawFd;
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    // SAFETY: flock on the descriptor of a file this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("locking {}", path.display()));
    }
    Ok(file)
}

/// Generates (random setup) the Groth16 parameters, verifying key and metadata of `proof` into
/// `dir` unless they are there already: 2KiB in ≈ 50 s on 2 cores.
pub fn ensure_params(proof: RegisteredSealProof, dir: &Path, rng: &mut (impl RngCore + Send)) -> Result<PathBuf> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    ensure_settings_dir(dir)?;
    cuzk::with_tree_shape!(proof, generate_params(proof, rng)).map_err(|e| anyhow::anyhow!("{e}"))
}

/// filecoin-proofs' public parameters of a PoSt proof (Window or Winning): what its circuit,
/// its parameter file name and its vanilla proofs' partitioning are derived from.
pub(crate) fn post_public_params<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig) -> Result<fallback::PublicParams> {
    Ok(match config.typ {
        PoStType::Window => window_post_public_params::<Tree>(config)?,
        PoStType::Winning => winning_post_public_params::<Tree>(config)?,
    })
}

fn generate_post_params<Tree: 'static + MerkleTreeTrait>(proof: RegisteredPoStProof, rng: &mut (impl RngCore + Send)) -> Result<PathBuf> {
    let params = post_public_params::<Tree>(&proof.as_v1_config())?;
    let blank = || <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&params);
    ensure_random_setup::<FallbackPoStCompound<Tree>, _, _>(&params, blank, rng)
}

/// Generates (random setup) the Groth16 parameters, verifying key and metadata of a Window or
/// Winning PoSt `proof` into `dir` under filecoin-proofs' names
/// (`v28-proof-of-spacetime-fallback-…`) unless they are there already, and returns the
/// `.params` path. At 2KiB on 2 cores ≈ 1 s for Window (2 sectors × 10 challenges, 11 MB)
/// and ≈ 3 s for Winning (66 one-challenge "sectors", 47 MB).
pub fn ensure_post_params(proof: RegisteredPoStProof, dir: &Path, rng: &mut (impl RngCore + Send)) -> Result<PathBuf> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    ensure_settings_dir(dir)?;
    cuzk::with_tree_shape!(proof, generate_post_params(proof, rng)).with_context(|| format!("{proof:?} parameters"))
}

/// The WindowPoSt proof current on the network for a sector size (in Rust
/// `StackedDrgWindow*V1_2`, which filecoin-ffi and go-state-types call `…V1_1`).
pub fn window_post_proof_for(size: &str) -> Result<RegisteredPoStProof> {
    use RegisteredPoStProof::*;
    Ok(match size {
        "2KiB" => StackedDrgWindow2KiBV1_2,
        "8MiB" => StackedDrgWindow8MiBV1_2,
        "512MiB" => StackedDrgWindow512MiBV1_2,
        "32GiB" => StackedDrgWindow32GiBV1_2,
        "64GiB" => StackedDrgWindow64GiBV1_2,
        other => bail!("unknown sector size {other:?} (2KiB, 8MiB, 512MiB, 32GiB, 64GiB)"),
    })
}

/// The WinningPoSt proof for a sector size (there is only `…V1`).
pub fn winning_post_proof_for(size: &str) -> Result<RegisteredPoStProof> {
    use RegisteredPoStProof::*;
    Ok(match size {
        "2KiB" => StackedDrgWinning2KiBV1,
        "8MiB" => StackedDrgWinning8MiBV1,
        "512MiB" => StackedDrgWinning512MiBV1,
        "32GiB" => StackedDrgWinning32GiBV1,
        "64GiB" => StackedDrgWinning64GiBV1,
        other => bail!("unknown sector size {other:?} (2KiB, 8MiB, 512MiB, 32GiB, 64GiB)"),
    })
}

/// go-state-types' `abi.RegisteredPoStProof` number of a PoSt proof, the number Lotus and
/// Curio pass: Winning 2KiB…64GiB V1 = 0…4, Window V1 = 5…9, and Window V1_1 = 10…14 (Rust's
/// `StackedDrgWindow*V1_2`).
pub fn post_proof_abi(proof: RegisteredPoStProof) -> u32 {
    use RegisteredPoStProof::*;
    match proof {
        StackedDrgWinning2KiBV1 => 0,
        StackedDrgWinning8MiBV1 => 1,
        StackedDrgWinning512MiBV1 => 2,
        StackedDrgWinning32GiBV1 => 3,
        StackedDrgWinning64GiBV1 => 4,
        StackedDrgWindow2KiBV1 => 5,
        StackedDrgWindow8MiBV1 => 6,
        StackedDrgWindow512MiBV1 => 7,
        StackedDrgWindow32GiBV1 => 8,
        StackedDrgWindow64GiBV1 => 9,
        StackedDrgWindow2KiBV1_2 => 10,
        StackedDrgWindow8MiBV1_2 => 11,
        StackedDrgWindow512MiBV1_2 => 12,
        StackedDrgWindow32GiBV1_2 => 13,
        StackedDrgWindow64GiBV1_2 => 14,
    }
}

/// A sector after PC1 and PC2: where its files are and what C1 needs next.
struct Precommitted {
    cache_dir: PathBuf,
    sealed_path: PathBuf,
    ticket: [u8; 32],
    pieces: Vec<PieceInfo>,
    pc2: SealPreCommitPhase2Output,
}

/// What a sector is sealed with: one piece of random data filling it, or nothing (a CC sector,
/// zeros, which a SnapDeals update later fills).
#[derive(Clone, Copy, PartialEq, Eq)]
enum SectorData {
    Random,
    CommittedCapacity,
}

/// The unpadded bytes of a piece filling a sector of `proof`'s size, random (`data`).
fn piece_filling(proof: RegisteredSealProof, data: SectorData, rng: &mut impl Rng) -> Result<(UnpaddedBytesAmount, Vec<u8>)> {
    let piece_size = UnpaddedBytesAmount::from(PaddedBytesAmount(u64::from(proof.sector_size())));
    let mut piece = vec![0u8; usize::try_from(u64::from(piece_size))?];
    if data == SectorData::Random {
        rng.fill_bytes(&mut piece);
    }
    Ok((piece_size, piece))
}

/// Seals one piece filling the sector (add_piece, PC1, PC2) into `work_dir` (`staged`,
/// `sealed`, `cache/`) with a random ticket. Needs no Groth16 parameters.
fn precommit_sector(
    proof: RegisteredSealProof,
    prover_id: [u8; 32],
    sector_id: u64,
    data: SectorData,
    work_dir: &Path,
    rng: &mut impl Rng,
) -> Result<Precommitted> {
    let cache_dir = work_dir.join("cache");
    fs::create_dir_all(&cache_dir).with_context(|| format!("creating {}", cache_dir.display()))?;
    let staged_path = work_dir.join("staged");
    let sealed_path = work_dir.join("sealed");
    let (piece_size, piece) = piece_filling(proof, data, rng)?;

    let mut staged = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged_path)?;
    let (piece_info, _) = seal::add_piece(proof, Cursor::new(&piece), &mut staged, piece_size, &[])?;
    drop(staged);
    fs::File::create(&sealed_path)?;

    let mut ticket = [0u8; 32];
    rng.fill_bytes(&mut ticket);
    ticket[31] &= 0x3f;
    let sector = SectorId::from(sector_id);
    let pieces = vec![piece_info];

    let pc1 = seal::seal_pre_commit_phase1(proof, &cache_dir, &staged_path, &sealed_path, prover_id, sector, ticket, &pieces)?;
    let pc2 = seal::seal_pre_commit_phase2(pc1, &cache_dir, &sealed_path)?;
    Ok(Precommitted {
        cache_dir,
        sealed_path,
        ticket,
        pieces,
        pc2,
    })
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
    let prover_id = prover_id_from_miner(miner_id);
    let Precommitted {
        cache_dir,
        sealed_path,
        ticket,
        pieces,
        pc2,
    } = precommit_sector(proof, prover_id, sector_id, SectorData::Random, work_dir, rng)?;
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    seed[31] &= 0x3f;
    let (comm_r, comm_d) = (pc2.comm_r, pc2.comm_d);
    let sector = SectorId::from(sector_id);
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

/// A sector sealed (PC1, PC2) and kept on disk for PoSt: its replica and the cache directory
/// holding its tree_r_last and p_aux, which is all PoSt vanilla proofs read.
#[derive(Clone, Debug)]
pub struct PostReplica {
    pub sector_id: u64,
    pub comm_r: [u8; 32],
    pub replica_path: PathBuf,
    pub cache_dir: PathBuf,
}

impl PostReplica {
    /// What filecoin-proofs-api's vanilla proof generation reads, for PoSt proof `proof`.
    pub fn private_info(&self, proof: RegisteredPoStProof) -> PrivateReplicaInfo {
        PrivateReplicaInfo::new(proof, self.comm_r, self.cache_dir.clone(), self.replica_path.clone())
    }

    /// What filecoin-proofs-api's PoSt verifiers check a proof against.
    pub fn public_info(&self, proof: RegisteredPoStProof) -> PublicReplicaInfo {
        PublicReplicaInfo::new(proof, self.comm_r)
    }
}

/// Seals one sector of random data per id of `sector_ids` (add_piece, PC1, PC2; no C1) into
/// `work_dir/sector-ID/` and clears each cache the way a finished sector's is (layers gone,
/// tree_r_last and p_aux kept). Needs no Groth16 parameters; well under a second per 2KiB
/// sector.
pub fn seal_sectors_for_post(
    proof: RegisteredSealProof,
    miner_id: u64,
    sector_ids: &[u64],
    work_dir: &Path,
    rng: &mut impl Rng,
) -> Result<Vec<PostReplica>> {
    let prover_id = prover_id_from_miner(miner_id);
    sector_ids
        .iter()
        .map(|&sector_id| {
            let dir = work_dir.join(format!("sector-{sector_id}"));
            let sealed = precommit_sector(proof, prover_id, sector_id, SectorData::Random, &dir, rng)
                .with_context(|| format!("sealing sector {sector_id}"))?;
            seal::clear_cache(&sealed.cache_dir)?;
            fs::remove_file(dir.join("staged"))?;
            Ok(PostReplica {
                sector_id,
                comm_r: sealed.pc2.comm_r,
                replica_path: sealed.sealed_path,
                cache_dir: sealed.cache_dir,
            })
        })
        .collect()
}

/// Bytes written as a hex string in JSON (vanilla proofs: bincode of filecoin-proofs'
/// `FallbackPoStSectorProof`, as filecoin-proofs-api returns and takes them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HexBytes(#[serde(with = "hex::serde")] pub Vec<u8>);

/// A sector a PoSt proves: its id and replica commitment (the verifier's public input).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostSector {
    pub sector_id: u64,
    #[serde(with = "hex::serde")]
    pub comm_r: [u8; 32],
}

/// The inputs of a WindowPoSt's SNARK, per partition, made the way Curio and Lotus make them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WindowFixture {
    pub registered_proof: RegisteredPoStProof,
    /// go-state-types' number of `registered_proof` (see [`post_proof_abi`]).
    pub abi_proof: u32,
    pub partitions: Vec<WindowPartition>,
}

/// One WindowPoSt partition: the vanilla proofs of its sectors, in sector order. A last
/// partition may be short; filecoin-proofs pads its circuit by repeating the last sector.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WindowPartition {
    pub index: usize,
    pub vanilla_proofs: Vec<HexBytes>,
    pub sectors: Vec<PostSector>,
}

/// The inputs of a WinningPoSt's SNARK: the one vanilla proof of the challenged sector.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WinningFixture {
    pub registered_proof: RegisteredPoStProof,
    /// go-state-types' number of `registered_proof` (see [`post_proof_abi`]).
    pub abi_proof: u32,
    pub vanilla_proofs: Vec<HexBytes>,
    pub sectors: Vec<PostSector>,
}

/// Everything a PoSt SNARK needs and its verifiers check, for WindowPoSt and WinningPoSt on
/// the same sectors and randomness.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PostFixture {
    pub miner_id: u64,
    #[serde(with = "hex::serde")]
    pub prover_id: [u8; 32],
    #[serde(with = "hex::serde")]
    pub randomness: [u8; 32],
    pub window: WindowFixture,
    pub winning: WinningFixture,
}

impl WindowFixture {
    /// All sectors of all partitions, for `verify_window_post`.
    pub fn sectors(&self) -> impl Iterator<Item = &PostSector> {
        self.partitions.iter().flat_map(|p| p.sectors.iter())
    }
}

/// The vanilla proofs of `sectors` for `proof`, made with filecoin-proofs-api's own functions
/// as Curio and Lotus do: the challenges of the whole set, then one proof per sector.
fn vanilla_proofs(proof: RegisteredPoStProof, randomness: &[u8; 32], prover_id: [u8; 32], sectors: &[&PostReplica]) -> Result<Vec<HexBytes>> {
    let ids: Vec<SectorId> = sectors.iter().map(|s| SectorId::from(s.sector_id)).collect();
    let challenges = post::generate_fallback_sector_challenges(proof, randomness, &ids, prover_id)?;
    sectors
        .iter()
        .map(|s| {
            let id = SectorId::from(s.sector_id);
            let challenges = challenges.get(&id).with_context(|| format!("no challenges for sector {}", s.sector_id))?;
            Ok(HexBytes(post::generate_single_vanilla_proof(
                proof,
                id,
                &s.private_info(proof),
                challenges,
            )?))
        })
        .collect()
}

/// Seals `sectors` random sectors of `sector_size` in `work_dir` for miner `miner_id` and
/// makes the vanilla proofs of a WindowPoSt over all of them (partitions of
/// `as_v1_config().sector_count` sectors: 2 at 2KiB, so 3 sectors make a full partition and a
/// short one) and of a WinningPoSt (the sector `generate_winning_post_sector_challenge`
/// picks), under one random canonical randomness. Needs no Groth16 parameters; the replicas
/// stay in `work_dir`.
pub fn make_post_fixture(sector_size: &str, miner_id: u64, sectors: usize, work_dir: &Path, rng: &mut impl Rng) -> Result<PostFixture> {
    ensure!(sectors > 0, "a PoSt needs at least one sector");
    let seal_proof = registered_proof_for(sector_size)?;
    let window_proof = window_post_proof_for(sector_size)?;
    let winning_proof = winning_post_proof_for(sector_size)?;
    let prover_id = prover_id_from_miner(miner_id);
    let first = rng.gen_range(1..1_000_000u64);
    let sector_ids: Vec<u64> = (first..).take(sectors).collect();
    let replicas = seal_sectors_for_post(seal_proof, miner_id, &sector_ids, work_dir, rng)?;
    let mut randomness = [0u8; 32];
    rng.fill_bytes(&mut randomness);
    randomness[31] &= 0x3f;

    let all: Vec<&PostReplica> = replicas.iter().collect();
    let window_vanilla = vanilla_proofs(window_proof, &randomness, prover_id, &all)?;
    let per_partition = window_proof.as_v1_config().sector_count;
    let partitions = all
        .chunks(per_partition)
        .zip(window_vanilla.chunks(per_partition))
        .enumerate()
        .map(|(index, (sectors, vanilla))| WindowPartition {
            index,
            vanilla_proofs: vanilla.to_vec(),
            sectors: sectors.iter().map(|s| post_sector(s)).collect(),
        })
        .collect();

    let picked = post::generate_winning_post_sector_challenge(winning_proof, &randomness, replicas.len() as u64, prover_id)?;
    ensure!(picked.len() == 1, "WinningPoSt challenged {} sectors, expected 1", picked.len());
    let winner = replicas
        .get(usize::try_from(picked[0])?)
        .with_context(|| format!("WinningPoSt challenged sector index {}", picked[0]))?;
    let winning_vanilla = vanilla_proofs(winning_proof, &randomness, prover_id, &[winner])?;

    Ok(PostFixture {
        miner_id,
        prover_id,
        randomness,
        window: WindowFixture {
            registered_proof: window_proof,
            abi_proof: post_proof_abi(window_proof),
            partitions,
        },
        winning: WinningFixture {
            registered_proof: winning_proof,
            abi_proof: post_proof_abi(winning_proof),
            vanilla_proofs: winning_vanilla,
            sectors: vec![post_sector(winner)],
        },
    })
}

fn post_sector(replica: &PostReplica) -> PostSector {
    PostSector {
        sector_id: replica.sector_id,
        comm_r: replica.comm_r,
    }
}

fn generate_update_params<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: RegisteredUpdateProof,
    rng: &mut (impl RngCore + Send),
) -> Result<PathBuf> {
    let params = storage_proofs_update::PublicParams::from_sector_size(u64::from(proof.sector_size()));
    let blank = || <EmptySectorUpdateCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&params);
    ensure_random_setup::<EmptySectorUpdateCompound<Tree>, _, _>(&params, blank, rng)
}

/// Generates (random setup) the Groth16 parameters, verifying key and metadata of the SnapDeals
/// update `proof` into `dir` under filecoin-proofs' names (`v28-empty-sector-update-…`) unless
/// they are there already, and returns the `.params` path.
pub fn ensure_update_params(proof: RegisteredUpdateProof, dir: &Path, rng: &mut (impl RngCore + Send)) -> Result<PathBuf> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    ensure_settings_dir(dir)?;
    cuzk::with_tree_shape!(proof, generate_update_params(proof, rng)).with_context(|| format!("{proof:?} parameters"))
}

/// The SnapDeals update proof of a sector size (there is only `…V1`).
pub fn update_proof_for(size: &str) -> Result<RegisteredUpdateProof> {
    use RegisteredUpdateProof::*;
    Ok(match size {
        "2KiB" => StackedDrg2KiBV1,
        "8MiB" => StackedDrg8MiBV1,
        "512MiB" => StackedDrg512MiBV1,
        "32GiB" => StackedDrg32GiBV1,
        "64GiB" => StackedDrg64GiBV1,
        other => bail!("unknown sector size {other:?} (2KiB, 8MiB, 512MiB, 32GiB, 64GiB)"),
    })
}

/// go-state-types' `abi.RegisteredUpdateProof` number of an update proof: 2KiB…64GiB = 0…4.
pub fn update_proof_abi(proof: RegisteredUpdateProof) -> u32 {
    use RegisteredUpdateProof::*;
    match proof {
        StackedDrg2KiBV1 => 0,
        StackedDrg8MiBV1 => 1,
        StackedDrg512MiBV1 => 2,
        StackedDrg32GiBV1 => 3,
        StackedDrg64GiBV1 => 4,
    }
}

/// The inputs of a SnapDeals update's SNARK and what its verifier checks, made the way Curio
/// makes them: a CC sector sealed, encoded with new random data (`encode_into`), and its
/// partition vanilla proofs (`generate_partition_proofs`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UpdateFixture {
    pub registered_proof: RegisteredUpdateProof,
    /// go-state-types' number of `registered_proof` (see [`update_proof_abi`]).
    pub abi_proof: u32,
    #[serde(with = "hex::serde")]
    pub comm_r_old: [u8; 32],
    #[serde(with = "hex::serde")]
    pub comm_r_new: [u8; 32],
    #[serde(with = "hex::serde")]
    pub comm_d_new: [u8; 32],
    /// One per partition, in order (bincode of filecoin-proofs' `PartitionProof`).
    pub vanilla_proofs: Vec<HexBytes>,
}

/// Seals a CC sector of `sector_size` in `work_dir` for miner `miner_id`, updates it with a
/// piece of random data filling it, and makes the update's partition vanilla proofs, checked
/// by filecoin-proofs-api's `verify_partition_proofs`. Needs no Groth16 parameters; the files
/// stay in `work_dir`.
pub fn make_update_fixture(sector_size: &str, miner_id: u64, work_dir: &Path, rng: &mut impl Rng) -> Result<UpdateFixture> {
    let seal_proof = registered_proof_for(sector_size)?;
    let proof = update_proof_for(sector_size)?;
    let sector_id = rng.gen_range(1..1_000_000u64);
    let old_dir = work_dir.join("sector-key");
    let old = precommit_sector(
        seal_proof,
        prover_id_from_miner(miner_id),
        sector_id,
        SectorData::CommittedCapacity,
        &old_dir,
        rng,
    )?;
    fs::remove_file(old_dir.join("staged"))?;

    let new_dir = work_dir.join("update");
    let (new_cache, new_replica, staged) = (new_dir.join("cache"), new_dir.join("replica"), new_dir.join("staged"));
    fs::create_dir_all(&new_cache)?;
    let (piece_size, piece) = piece_filling(seal_proof, SectorData::Random, rng)?;
    let mut staged_file = fs::File::create(&staged)?;
    let (piece_info, _) = seal::add_piece(seal_proof, Cursor::new(&piece), &mut staged_file, piece_size, &[])?;
    drop(staged_file);
    // The encoder writes the new replica in place: a file of the sector key's size.
    fs::File::create(&new_replica)?.set_len(u64::from(seal_proof.sector_size()))?;
    let encoded = update::empty_sector_update_encode_into(proof, &new_replica, &new_cache, &old.sealed_path, &old.cache_dir, &staged, &[piece_info])?;
    let comm_r_old = old.pc2.comm_r;
    let (comm_r_new, comm_d_new) = (encoded.comm_r_new, encoded.comm_d_new);
    let vanilla = update::generate_partition_proofs(
        proof,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        &old.sealed_path,
        &old.cache_dir,
        &new_replica,
        &new_cache,
    )?;
    ensure!(
        update::verify_partition_proofs(proof, &vanilla, comm_r_old, comm_r_new, comm_d_new)?,
        "filecoin-proofs-api refuses its own update vanilla proofs"
    );
    Ok(UpdateFixture {
        registered_proof: proof,
        abi_proof: update_proof_abi(proof),
        comm_r_old,
        comm_r_new,
        comm_d_new,
        vanilla_proofs: vanilla.into_iter().map(|p| HexBytes(p.0)).collect(),
    })
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
