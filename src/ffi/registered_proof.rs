//! The `registered_proof` numbers of the ABI: filecoin-ffi's `RegisteredSealProof`,
//! `RegisteredPoStProof` and `RegisteredUpdateProof` numberings (the same as go-state-types'
//! abi package).

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

use crate::error::{Error, Result};

/// The proofs in the order of their ABI numbers.
const SEAL_PROOFS: [RegisteredSealProof; 20] = {
    use RegisteredSealProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ]
};

pub fn seal_proof_from_abi(n: u32) -> Result<RegisteredSealProof> {
    SEAL_PROOFS
        .get(n as usize)
        .copied()
        .ok_or_else(|| Error::invalid(format!("unknown registered seal proof {n}")))
}

pub fn seal_proof_to_abi(proof: RegisteredSealProof) -> u32 {
    SEAL_PROOFS
        .iter()
        .position(|p| *p == proof)
        .expect("every registered proof has an ABI number") as u32
}

/// The PoSt proofs in the order of their ABI numbers (go-state-types names the last five
/// `StackedDrgWindow*V1_1`; filecoin-proofs-api `..V1_2`).
const POST_PROOFS: [RegisteredPoStProof; 15] = {
    use RegisteredPoStProof::*;
    [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ]
};

pub fn post_proof_from_abi(n: u32) -> Result<RegisteredPoStProof> {
    POST_PROOFS
        .get(n as usize)
        .copied()
        .ok_or_else(|| Error::invalid(format!("unknown registered PoSt proof {n}")))
}

/// The update proofs in the order of their ABI numbers.
const UPDATE_PROOFS: [RegisteredUpdateProof; 5] = {
    use RegisteredUpdateProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ]
};

pub fn update_proof_from_abi(n: u32) -> Result<RegisteredUpdateProof> {
    UPDATE_PROOFS
        .get(n as usize)
        .copied()
        .ok_or_else(|| Error::invalid(format!("unknown registered update proof {n}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;

    #[test]
    fn abi_numbers_roundtrip() {
        for n in 0..20 {
            assert_eq!(seal_proof_to_abi(seal_proof_from_abi(n).unwrap()), n);
        }
        assert_eq!(seal_proof_from_abi(5).unwrap(), RegisteredSealProof::StackedDrg2KiBV1_1);
        assert_eq!(seal_proof_from_abi(20).unwrap_err().status, Status::InvalidArgument);
        assert_eq!(post_proof_from_abi(0).unwrap(), RegisteredPoStProof::StackedDrgWinning2KiBV1);
        assert_eq!(post_proof_from_abi(13).unwrap(), RegisteredPoStProof::StackedDrgWindow32GiBV1_2);
        assert_eq!(post_proof_from_abi(15).unwrap_err().status, Status::InvalidArgument);
        assert_eq!(update_proof_from_abi(3).unwrap(), RegisteredUpdateProof::StackedDrg32GiBV1);
        assert_eq!(update_proof_from_abi(5).unwrap_err().status, Status::InvalidArgument);
    }
}
