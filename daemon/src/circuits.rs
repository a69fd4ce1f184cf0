//! Curio's circuit ids ("porep-32g", "wpost-32g", "winning-32g", "snap-32g", …): what
//! PreloadSRS and EvictSRS name and GetStatus reports, mapped to the engine's registered proofs.

use cuzk::engine::RegisteredProof;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

/// The sector sizes Filecoin has, with the suffix a circuit id gives each.
const SECTOR_SIZES: [(&str, u64); 5] = [
    ("2k", 2 << 10),
    ("8m", 8 << 20),
    ("512m", 512 << 20),
    ("32g", 32 << 30),
    ("64g", 64 << 30),
];

/// The circuit families of a circuit id, its part before the size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Porep,
    WindowPost,
    WinningPost,
    Snap,
}

impl Family {
    const ALL: [Family; 4] = [Family::Porep, Family::WindowPost, Family::WinningPost, Family::Snap];

    fn prefix(self) -> &'static str {
        match self {
            Family::Porep => "porep",
            Family::WindowPost => "wpost",
            Family::WinningPost => "winning",
            Family::Snap => "snap",
        }
    }
}

/// The circuit id of `family` at `sector_size` bytes; None for a size Filecoin does not have.
pub fn circuit_id(family: Family, sector_size: u64) -> Option<String> {
    let (suffix, _) = SECTOR_SIZES.iter().find(|(_, bytes)| *bytes == sector_size)?;
    Some(format!("{}-{suffix}", family.prefix()))
}

/// The registered proof whose proving key circuit `id` names: PoRep is the V1_1 seal proof
/// (the one Curio seals with), WindowPoSt V1_2, WinningPoSt V1, SnapDeals V1.
pub fn registered_proof(id: &str) -> Result<RegisteredProof, String> {
    let unknown = || {
        format!(
            "unknown circuit id {id:?}: expected porep-, wpost-, winning- or snap- followed by one of {}",
            SECTOR_SIZES.map(|(suffix, _)| suffix).join(", ")
        )
    };
    let (prefix, suffix) = id.split_once('-').ok_or_else(unknown)?;
    let family = Family::ALL.into_iter().find(|f| f.prefix() == prefix).ok_or_else(unknown)?;
    let size = SECTOR_SIZES.iter().position(|(s, _)| *s == suffix).ok_or_else(unknown)?;
    Ok(proof_of(family, size))
}

/// Every circuit id with its registered proof.
pub fn all() -> Vec<(String, RegisteredProof)> {
    Family::ALL
        .into_iter()
        .flat_map(|family| (0..SECTOR_SIZES.len()).map(move |size| (format!("{}-{}", family.prefix(), SECTOR_SIZES[size].0), proof_of(family, size))))
        .collect()
}

/// The registered proof of `family` at the sector size of index `size` in `SECTOR_SIZES`.
fn proof_of(family: Family, size: usize) -> RegisteredProof {
    use RegisteredPoStProof as Post;
    use RegisteredSealProof as Seal;
    use RegisteredUpdateProof as Update;
    match family {
        Family::Porep => [
            Seal::StackedDrg2KiBV1_1,
            Seal::StackedDrg8MiBV1_1,
            Seal::StackedDrg512MiBV1_1,
            Seal::StackedDrg32GiBV1_1,
            Seal::StackedDrg64GiBV1_1,
        ][size]
            .into(),
        Family::WindowPost => [
            Post::StackedDrgWindow2KiBV1_2,
            Post::StackedDrgWindow8MiBV1_2,
            Post::StackedDrgWindow512MiBV1_2,
            Post::StackedDrgWindow32GiBV1_2,
            Post::StackedDrgWindow64GiBV1_2,
        ][size]
            .into(),
        Family::WinningPost => [
            Post::StackedDrgWinning2KiBV1,
            Post::StackedDrgWinning8MiBV1,
            Post::StackedDrgWinning512MiBV1,
            Post::StackedDrgWinning32GiBV1,
            Post::StackedDrgWinning64GiBV1,
        ][size]
            .into(),
        Family::Snap => [
            Update::StackedDrg2KiBV1,
            Update::StackedDrg8MiBV1,
            Update::StackedDrg512MiBV1,
            Update::StackedDrg32GiBV1,
            Update::StackedDrg64GiBV1,
        ][size]
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curio_ids_name_their_proofs() {
        assert_eq!(registered_proof("porep-32g").unwrap(), RegisteredSealProof::StackedDrg32GiBV1_1.into());
        assert_eq!(
            registered_proof("wpost-32g").unwrap(),
            RegisteredPoStProof::StackedDrgWindow32GiBV1_2.into()
        );
        assert_eq!(
            registered_proof("winning-32g").unwrap(),
            RegisteredPoStProof::StackedDrgWinning32GiBV1.into()
        );
        assert_eq!(registered_proof("snap-64g").unwrap(), RegisteredUpdateProof::StackedDrg64GiBV1.into());
        assert_eq!(registered_proof("porep-2k").unwrap(), RegisteredSealProof::StackedDrg2KiBV1_1.into());
        for bad in ["porep", "porep-16g", "seal-32g", ""] {
            assert!(registered_proof(bad).unwrap_err().contains("unknown circuit id"), "{bad}");
        }
    }

    #[test]
    fn every_id_round_trips() {
        let all = all();
        assert_eq!(all.len(), 20);
        for (id, proof) in all {
            assert_eq!(registered_proof(&id).unwrap(), proof);
        }
        assert_eq!(circuit_id(Family::WindowPost, 32 << 30).as_deref(), Some("wpost-32g"));
        assert_eq!(circuit_id(Family::Snap, 3), None);
    }
}
