//! The PoSt fixture and the bellperson oracle against filecoin-proofs-api itself: the fixture's
//! vanilla proofs, proved by filecoin-proofs-api, verify; and the oracle's proofs (fixed r, s)
//! of the same vanilla proofs verify too, which shows it builds the circuit filecoin-proofs
//! builds. Makes the 2KiB PoSt test parameters when missing (about a minute on 2 cores).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use blstrs::Scalar;
use cuzk_tools::fixtures::{default_test_params_dir, ensure_post_params, make_post_fixture, post_proof_abi, PostFixture, PostSector, WindowFixture};
use cuzk_tools::post_oracle::{bellperson_window_post, bellperson_winning_post};
use filecoin_proofs_api::{post, PartitionSnarkProof, PublicReplicaInfo, RegisteredPoStProof, SectorId};
use rand::SeedableRng;

struct Setup {
    params_dir: PathBuf,
    fixture: PostFixture,
}

/// The PoSt parameters (made when missing) and a fixture of 3 fresh 2KiB sectors: a full
/// WindowPoSt partition of 2 sectors and a short one of 1.
fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let params_dir = default_test_params_dir();
        // filecoin-proofs reads its parameter cache location once, from the environment.
        if std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").as_deref() != Some(params_dir.as_os_str()) {
            std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params_dir);
        }
        let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
        for proof in [
            RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
            RegisteredPoStProof::StackedDrgWinning2KiBV1,
        ] {
            ensure_post_params(proof, &params_dir, &mut rng).expect("PoSt test parameters");
        }
        let work = std::env::temp_dir().join(format!("cuzk-test-post-{}", std::process::id()));
        let fixture = make_post_fixture("2KiB", 1000, 3, &work, &mut rng).expect("PoSt fixture");
        let _ = std::fs::remove_dir_all(&work);
        Setup { params_dir, fixture }
    })
}

fn replicas<'a>(proof: RegisteredPoStProof, sectors: impl Iterator<Item = &'a PostSector>) -> BTreeMap<SectorId, PublicReplicaInfo> {
    sectors
        .map(|s| (SectorId::from(s.sector_id), PublicReplicaInfo::new(proof, s.comm_r)))
        .collect()
}

fn verify_window(f: &PostFixture, randomness: &[u8; 32], proof: &[u8]) -> bool {
    let w = &f.window;
    post::verify_window_post(
        randomness,
        &[(w.registered_proof, proof)],
        &replicas(w.registered_proof, w.sectors()),
        f.prover_id,
    )
    .expect("verify_window_post")
}

fn verify_winning(f: &PostFixture, randomness: &[u8; 32], proof: &[u8]) -> bool {
    let w = &f.winning;
    post::verify_winning_post(randomness, proof, &replicas(w.registered_proof, w.sectors.iter()), f.prover_id).expect("verify_winning_post")
}

fn vanilla(proofs: &[cuzk_tools::fixtures::HexBytes]) -> Vec<Vec<u8>> {
    proofs.iter().map(|p| p.0.clone()).collect()
}

fn fixed_r_s(partition: u64) -> (Scalar, Scalar) {
    (Scalar::from(0x5eed_0000 + partition), Scalar::from(0xc0ff_ee00 + partition))
}

#[test]
fn fixture_has_the_expected_shape_and_round_trips_as_json() {
    let f = &setup().fixture;
    let w: &WindowFixture = &f.window;
    assert_eq!(w.registered_proof, RegisteredPoStProof::StackedDrgWindow2KiBV1_2);
    assert_eq!((w.abi_proof, post_proof_abi(w.registered_proof)), (10, 10));
    assert_eq!(f.winning.abi_proof, 0);
    assert_eq!(w.registered_proof.as_v1_config().sector_count, 2);
    let sizes: Vec<(usize, usize, usize)> = w.partitions.iter().map(|p| (p.index, p.sectors.len(), p.vanilla_proofs.len())).collect();
    assert_eq!(sizes, [(0, 2, 2), (1, 1, 1)]);
    let ids: Vec<u64> = w.sectors().map(|s| s.sector_id).collect();
    assert!(ids.windows(2).all(|p| p[0] < p[1]), "sectors in order: {ids:?}");
    assert_eq!(f.winning.sectors.len(), 1);
    assert_eq!(f.winning.vanilla_proofs.len(), 1);
    assert!(ids.contains(&f.winning.sectors[0].sector_id));
    assert_eq!(f.randomness[31] & 0xc0, 0, "randomness is a canonical field element");

    let json = serde_json::to_string(f).unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["window"]["registered_proof"], "StackedDrgWindow2KiBV1_2");
    assert!(
        value["window"]["partitions"][0]["vanilla_proofs"][0].is_string(),
        "vanilla proofs are hex strings"
    );
    assert!(value["randomness"].is_string());
    let back: PostFixture = serde_json::from_str(&json).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), json);
}

#[test]
fn filecoin_proofs_window_post_of_the_fixture_verifies() {
    let f = &setup().fixture;
    let w = &f.window;
    let partitions: Vec<PartitionSnarkProof> = w
        .partitions
        .iter()
        .map(|p| {
            post::generate_single_window_post_with_vanilla(w.registered_proof, &f.randomness, f.prover_id, &vanilla(&p.vanilla_proofs), p.index)
                .expect("generate_single_window_post_with_vanilla")
        })
        .collect();
    let proof = post::merge_window_post_partition_proofs(w.registered_proof, partitions).unwrap();
    assert_eq!(proof.len(), 2 * 192);
    assert!(verify_window(f, &f.randomness, &proof), "filecoin-proofs rejects its own WindowPoSt");
    let mut other = f.randomness;
    other[0] ^= 1;
    assert!(!verify_window(f, &other, &proof), "a WindowPoSt verifies under other randomness");
}

#[test]
fn filecoin_proofs_winning_post_of_the_fixture_verifies() {
    let f = &setup().fixture;
    let w = &f.winning;
    let mut proofs = post::generate_winning_post_with_vanilla(w.registered_proof, &f.randomness, f.prover_id, &vanilla(&w.vanilla_proofs))
        .expect("generate_winning_post_with_vanilla");
    assert_eq!(proofs.len(), 1);
    let (registered, proof) = proofs.remove(0);
    assert_eq!(registered, w.registered_proof);
    assert_eq!(proof.len(), 192);
    assert!(verify_winning(f, &f.randomness, &proof), "filecoin-proofs rejects its own WinningPoSt");
    let mut other = f.randomness;
    other[0] ^= 1;
    assert!(!verify_winning(f, &other, &proof), "a WinningPoSt verifies under other randomness");
}

#[test]
fn bellperson_oracle_window_post_verifies_and_is_deterministic() {
    let Setup { params_dir, fixture: f } = setup();
    let w = &f.window;
    let oracle = |index: usize| {
        let (r, s) = fixed_r_s(index as u64);
        bellperson_window_post(
            w.registered_proof,
            &f.randomness,
            f.prover_id,
            &vanilla(&w.partitions[index].vanilla_proofs),
            index,
            params_dir,
            r,
            s,
        )
        .expect("oracle WindowPoSt")
    };
    let partitions: Vec<Vec<u8>> = (0..w.partitions.len()).map(oracle).collect();
    assert!(partitions.iter().all(|p| p.len() == 192));
    assert_eq!(oracle(1), partitions[1], "the oracle's proof is a function of r, s (short partition)");
    let proof = partitions.concat();
    assert!(verify_window(f, &f.randomness, &proof), "filecoin-proofs rejects the oracle's WindowPoSt");
    let swapped = [partitions[1].clone(), partitions[0].clone()].concat();
    assert!(!verify_window(f, &f.randomness, &swapped), "partitions out of order verify");
}

#[test]
fn bellperson_oracle_winning_post_verifies() {
    let Setup { params_dir, fixture: f } = setup();
    let w = &f.winning;
    let (r, s) = fixed_r_s(0);
    let proof = bellperson_winning_post(
        w.registered_proof,
        &f.randomness,
        f.prover_id,
        &vanilla(&w.vanilla_proofs),
        params_dir,
        r,
        s,
    )
    .expect("oracle WinningPoSt");
    assert_eq!(proof.len(), 192);
    assert!(
        verify_winning(f, &f.randomness, &proof),
        "filecoin-proofs rejects the oracle's WinningPoSt"
    );
    // The winning sector's WindowPoSt vanilla proof (10 challenges, not 66) must not make a
    // valid WinningPoSt. filecoin-proofs 19.1 does not refuse it: its vanilla check pairs the
    // one public sector with the first of the 66 unrolled challenge proofs only, and the first
    // challenge of both PoSts is the same leaf; bellperson then proves an unsatisfied circuit.
    let winner = w.sectors[0].sector_id;
    let (partition, at) = f
        .window
        .partitions
        .iter()
        .find_map(|p| p.sectors.iter().position(|s| s.sector_id == winner).map(|i| (p, i)))
        .unwrap();
    let window_vanilla = vanilla(&partition.vanilla_proofs[at..at + 1]);
    match bellperson_winning_post(w.registered_proof, &f.randomness, f.prover_id, &window_vanilla, params_dir, r, s) {
        Err(_) => {}
        Ok(bad) => assert!(
            !verify_winning(f, &f.randomness, &bad),
            "a WinningPoSt from a WindowPoSt vanilla proof verifies"
        ),
    }
}
