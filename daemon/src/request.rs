//! A SubmitProofRequest checked and turned into the engine's input: its kind, registered proof,
//! sizes and fields decoded, each failure a message naming the field that is wrong. Also the
//! request's fingerprint, which tells a retry from another request under the same request_id.

use base64::Engine as _;
use cuzk::engine::{prover_id_from_miner, PostKind, Priority, ProofOutput, ProveOptions, UpdateRequest};
use cuzk::engine::{Engine, PostRequest};
use cuzk::ffi::{post_proof_from_abi, seal_proof_from_abi, update_proof_from_abi};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredUpdateProof};

use crate::circuits::{circuit_id, Family};
use crate::proto::{Priority as WirePriority, ProofKind, SubmitProofRequest};

/// What the engine proves for one request, owning its bytes.
pub enum ProofInput {
    Seal {
        c1_json: Vec<u8>,
        sector_id: u64,
        prover_id: [u8; 32],
    },
    Post {
        kind: PostKind,
        proof: RegisteredPoStProof,
        prover_id: [u8; 32],
        randomness: [u8; 32],
        vanilla_proofs: Vec<Vec<u8>>,
        partition_index: usize,
    },
    Update {
        proof: RegisteredUpdateProof,
        comm_r_old: [u8; 32],
        comm_r_new: [u8; 32],
        comm_d_new: [u8; 32],
        vanilla_proofs: Vec<Vec<u8>>,
    },
}

impl ProofInput {
    /// Proves the input on the engine (blocking: the caller's thread runs the call).
    pub fn prove(&self, engine: &Engine, options: &ProveOptions) -> cuzk::error::Result<ProofOutput> {
        match self {
            ProofInput::Seal {
                c1_json,
                sector_id,
                prover_id,
            } => engine.seal_commit_phase2(c1_json, *sector_id, *prover_id, options),
            ProofInput::Post {
                kind,
                proof,
                prover_id,
                randomness,
                vanilla_proofs,
                partition_index,
            } => {
                let vanilla: Vec<&[u8]> = vanilla_proofs.iter().map(Vec::as_slice).collect();
                let request = PostRequest {
                    kind: *kind,
                    registered_proof: *proof,
                    prover_id: *prover_id,
                    randomness: *randomness,
                    vanilla_proofs: &vanilla,
                    partition_index: *partition_index,
                };
                engine.generate_post(&request, options)
            }
            ProofInput::Update {
                proof,
                comm_r_old,
                comm_r_new,
                comm_d_new,
                vanilla_proofs,
            } => {
                let vanilla: Vec<&[u8]> = vanilla_proofs.iter().map(Vec::as_slice).collect();
                let request = UpdateRequest {
                    registered_proof: *proof,
                    comm_r_old: *comm_r_old,
                    comm_r_new: *comm_r_new,
                    comm_d_new: *comm_d_new,
                    vanilla_proofs: &vanilla,
                };
                engine.generate_update(&request, options)
            }
        }
    }
}

/// A request the daemon can hand to the engine.
pub struct CheckedRequest {
    pub input: ProofInput,
    /// The engine class the request asked for; None: its kind's.
    pub priority: Option<Priority>,
    /// The class the job runs in (what decides whether it waits at the sealing gate).
    pub class: Priority,
    /// Curio's id of the circuit the job proves, e.g. "porep-32g".
    pub circuit_id: Option<String>,
}

/// Curio's envelope of a C1 output (lib/ffi/cuzk_funcs.go `c1OutputWrapper`): Phase1Out is
/// the C1 JSON, base64-encoded as Go's encoding/json writes a []byte.
#[derive(serde::Deserialize)]
struct C1Envelope {
    #[serde(rename = "SectorNum")]
    sector_num: Option<i64>,
    #[serde(rename = "Phase1Out")]
    phase1_out: Option<String>,
    #[serde(rename = "SectorSize")]
    sector_size: Option<u64>,
}

/// The request as the engine's input, or what is wrong with it.
pub fn check(request: SubmitProofRequest) -> Result<CheckedRequest, String> {
    let kind = ProofKind::try_from(request.proof_kind).map_err(|_| format!("unknown proof_kind {}", request.proof_kind))?;
    let priority = engine_priority(request.priority)?;
    let registered = u32::try_from(request.registered_proof).map_err(|_| format!("registered_proof {} is out of range", request.registered_proof))?;
    let prover_id = prover_id_from_miner(request.miner_id);
    let (input, kind_class, family, sector_size) = match kind {
        ProofKind::Unspecified => return Err("proof_kind is PROOF_KIND_UNSPECIFIED".into()),
        ProofKind::PorepSealCommit => {
            let proof = seal_proof_from_abi(registered).map_err(|e| format!("registered_proof: {}", e.message))?;
            let sector_size = u64::from(proof.sector_size());
            check_sector_size(request.sector_size, sector_size)?;
            let c1_json = c1_json(&request.vanilla_proof, request.sector_number, sector_size)?;
            let input = ProofInput::Seal {
                c1_json,
                sector_id: request.sector_number,
                prover_id,
            };
            (input, Priority::Sealing, Family::Porep, sector_size)
        }
        ProofKind::WindowPostPartition | ProofKind::WinningPost => {
            let proof = post_proof_from_abi(registered).map_err(|e| format!("registered_proof: {}", e.message))?;
            let sector_size = u64::from(proof.sector_size());
            check_sector_size(request.sector_size, sector_size)?;
            let (post_kind, class, family) = match kind {
                ProofKind::WinningPost => (PostKind::Winning, Priority::WinningPost, Family::WinningPost),
                _ => (PostKind::Window, Priority::WindowPost, Family::WindowPost),
            };
            if request.vanilla_proofs.is_empty() {
                return Err("vanilla_proofs is empty: a PoSt needs one vanilla proof per sector".into());
            }
            let input = ProofInput::Post {
                kind: post_kind,
                proof,
                prover_id,
                randomness: bytes32("randomness", &request.randomness)?,
                vanilla_proofs: request.vanilla_proofs,
                partition_index: request.partition_index as usize,
            };
            (input, class, family, sector_size)
        }
        ProofKind::SnapDealsUpdate => {
            let proof = update_proof_from_abi(registered).map_err(|e| format!("registered_proof: {}", e.message))?;
            let sector_size = u64::from(proof.sector_size());
            check_sector_size(request.sector_size, sector_size)?;
            if request.vanilla_proofs.is_empty() {
                return Err("vanilla_proofs is empty: an update needs one vanilla proof per partition".into());
            }
            let input = ProofInput::Update {
                proof,
                comm_r_old: bytes32("comm_r_old", &request.comm_r_old)?,
                comm_r_new: bytes32("comm_r_new", &request.comm_r_new)?,
                comm_d_new: bytes32("comm_d_new", &request.comm_d_new)?,
                vanilla_proofs: request.vanilla_proofs,
            };
            (input, Priority::Sealing, Family::Snap, sector_size)
        }
    };
    Ok(CheckedRequest {
        input,
        priority,
        class: priority.unwrap_or(kind_class),
        circuit_id: circuit_id(family, sector_size),
    })
}

/// The engine class of a wire priority: CRITICAL is WinningPoSt's, HIGH WindowPoSt's, LOW and
/// NORMAL sealing's; UNSPECIFIED leaves the kind's (None).
fn engine_priority(wire: i32) -> Result<Option<Priority>, String> {
    match WirePriority::try_from(wire).map_err(|_| format!("unknown priority {wire}"))? {
        WirePriority::Unspecified => Ok(None),
        WirePriority::Low | WirePriority::Normal => Ok(Some(Priority::Sealing)),
        WirePriority::High => Ok(Some(Priority::WindowPost)),
        WirePriority::Critical => Ok(Some(Priority::WinningPost)),
    }
}

/// A sector_size field of 0 says nothing; any other value must be the proof's.
fn check_sector_size(given: u64, proof: u64) -> Result<(), String> {
    if given != 0 && given != proof {
        return Err(format!("sector_size {given} is not the registered proof's sector size {proof}"));
    }
    Ok(())
}

fn bytes32(field: &str, bytes: &[u8]) -> Result<[u8; 32], String> {
    bytes.try_into().map_err(|_| format!("{field} has {} bytes, expected 32", bytes.len()))
}

/// The C1 JSON of a C2 request: unwrapped from Curio's envelope, whose sector number and size
/// must agree with the request's, or the vanilla proof itself when it is the C1 JSON.
fn c1_json(vanilla_proof: &[u8], sector_number: u64, sector_size: u64) -> Result<Vec<u8>, String> {
    if vanilla_proof.is_empty() {
        return Err("vanilla_proof is empty: a C2 needs the C1 output".into());
    }
    let envelope: C1Envelope = serde_json::from_slice(vanilla_proof).map_err(|e| format!("vanilla_proof is not JSON: {e}"))?;
    let Some(phase1_out) = envelope.phase1_out else {
        return Ok(vanilla_proof.to_vec());
    };
    if let Some(num) = envelope.sector_num {
        if u64::try_from(num).ok() != Some(sector_number) {
            return Err(format!("vanilla_proof's SectorNum {num} is not sector_number {sector_number}"));
        }
    }
    if let Some(size) = envelope.sector_size.filter(|&s| s != sector_size) {
        return Err(format!(
            "vanilla_proof's SectorSize {size} is not the registered proof's sector size {sector_size}"
        ));
    }
    base64::engine::general_purpose::STANDARD
        .decode(phase1_out)
        .map_err(|e| format!("vanilla_proof's Phase1Out is not base64: {e}"))
}

/// A digest of every field of the request: equal for a retry of the same request.
pub fn fingerprint(request: &SubmitProofRequest) -> [u8; 32] {
    let mut state = blake2b_simd::Params::new().hash_length(32).to_state();
    let mut field = |bytes: &[u8]| {
        state.update(&(bytes.len() as u64).to_le_bytes());
        state.update(bytes);
    };
    field(request.request_id.as_bytes());
    for number in [
        request.proof_kind as u64,
        request.sector_size,
        request.registered_proof,
        request.priority as u64,
        request.sector_number,
        request.miner_id,
        u64::from(request.partition_index),
    ] {
        field(&number.to_le_bytes());
    }
    field(&request.vanilla_proof);
    field(&(request.vanilla_proofs.len() as u64).to_le_bytes());
    for proof in &request.vanilla_proofs {
        field(proof);
    }
    for bytes in [&request.randomness, &request.comm_r_old, &request.comm_r_new, &request.comm_d_new] {
        field(bytes);
    }
    let mut digest = [0u8; 32];
    digest.copy_from_slice(state.finalize().as_bytes());
    digest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c2_request(vanilla_proof: Vec<u8>) -> SubmitProofRequest {
        SubmitProofRequest {
            request_id: "porep-1000-7".into(),
            proof_kind: ProofKind::PorepSealCommit as i32,
            sector_size: 2048,
            registered_proof: 5,
            priority: WirePriority::Normal as i32,
            vanilla_proof,
            sector_number: 7,
            miner_id: 1000,
            ..Default::default()
        }
    }

    fn error_of(request: SubmitProofRequest) -> String {
        check(request).err().expect("the request is refused")
    }

    #[test]
    fn curio_envelope_is_unwrapped() {
        let c1 = br#"{"registered_proof":"StackedDrg2KiBV1_1"}"#;
        let envelope = format!(
            r#"{{"SectorNum":7,"Phase1Out":"{}","SectorSize":2048}}"#,
            base64::engine::general_purpose::STANDARD.encode(c1)
        );
        let checked = check(c2_request(envelope.into_bytes())).unwrap();
        assert!(matches!(&checked.input, ProofInput::Seal { c1_json, sector_id: 7, .. } if c1_json == c1));
        assert_eq!(checked.class, Priority::Sealing);
        assert_eq!(checked.circuit_id.as_deref(), Some("porep-2k"));
        // Without an envelope the vanilla proof is the C1 JSON.
        assert!(matches!(check(c2_request(c1.to_vec())).unwrap().input, ProofInput::Seal { .. }));
    }

    #[test]
    fn bad_fields_are_named() {
        assert!(error_of(c2_request(b"\x00garbage".to_vec())).contains("vanilla_proof is not JSON"));
        assert!(error_of(c2_request(Vec::new())).contains("vanilla_proof is empty"));
        let other_sector = br#"{"SectorNum":8,"Phase1Out":"e30=","SectorSize":2048}"#.to_vec();
        assert!(error_of(c2_request(other_sector)).contains("SectorNum 8"));
        let not_base64 = br#"{"SectorNum":7,"Phase1Out":"%%%","SectorSize":2048}"#.to_vec();
        assert!(error_of(c2_request(not_base64)).contains("not base64"));
        let wrong_size = SubmitProofRequest {
            sector_size: 1 << 30,
            ..c2_request(b"{}".to_vec())
        };
        assert!(error_of(wrong_size).contains("sector_size 1073741824"));
        let unknown_proof = SubmitProofRequest {
            registered_proof: 99,
            ..c2_request(b"{}".to_vec())
        };
        assert!(error_of(unknown_proof).contains("registered_proof"));
        let unspecified = SubmitProofRequest {
            proof_kind: 0,
            ..c2_request(b"{}".to_vec())
        };
        assert!(error_of(unspecified).contains("PROOF_KIND_UNSPECIFIED"));
        let unknown_kind = SubmitProofRequest {
            proof_kind: 9,
            ..c2_request(b"{}".to_vec())
        };
        assert!(error_of(unknown_kind).contains("unknown proof_kind 9"));
        let short_randomness = SubmitProofRequest {
            proof_kind: ProofKind::WinningPost as i32,
            registered_proof: 0,
            sector_size: 0,
            vanilla_proofs: vec![vec![1]],
            randomness: vec![0; 31],
            ..Default::default()
        };
        assert!(error_of(short_randomness).contains("randomness has 31 bytes"));
    }

    #[test]
    fn priorities_map_to_classes() {
        let class_of = |kind: ProofKind, registered: u64, priority: WirePriority| {
            let request = SubmitProofRequest {
                proof_kind: kind as i32,
                registered_proof: registered,
                priority: priority as i32,
                vanilla_proof: b"{}".to_vec(),
                vanilla_proofs: vec![vec![1]],
                randomness: vec![0; 32],
                comm_r_old: vec![0; 32],
                comm_r_new: vec![0; 32],
                comm_d_new: vec![0; 32],
                ..Default::default()
            };
            check(request).unwrap().class
        };
        assert_eq!(class_of(ProofKind::WinningPost, 3, WirePriority::Unspecified), Priority::WinningPost);
        assert_eq!(
            class_of(ProofKind::WindowPostPartition, 13, WirePriority::Unspecified),
            Priority::WindowPost
        );
        assert_eq!(class_of(ProofKind::SnapDealsUpdate, 3, WirePriority::Unspecified), Priority::Sealing);
        assert_eq!(class_of(ProofKind::PorepSealCommit, 8, WirePriority::Critical), Priority::WinningPost);
        assert_eq!(class_of(ProofKind::PorepSealCommit, 8, WirePriority::High), Priority::WindowPost);
        assert_eq!(class_of(ProofKind::WindowPostPartition, 13, WirePriority::Low), Priority::Sealing);
    }

    #[test]
    fn fingerprint_tells_content_apart() {
        let a = c2_request(b"{}".to_vec());
        assert_eq!(fingerprint(&a), fingerprint(&a.clone()));
        let b = SubmitProofRequest {
            sector_number: 8,
            ..a.clone()
        };
        assert_ne!(fingerprint(&a), fingerprint(&b));
        // Moving bytes between fields changes it (every field is length-prefixed).
        let c = SubmitProofRequest {
            vanilla_proofs: vec![b"{".to_vec(), b"}".to_vec()],
            vanilla_proof: Vec::new(),
            ..a.clone()
        };
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }
}
