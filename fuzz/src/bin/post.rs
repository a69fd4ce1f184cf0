//! The WindowPoSt and WinningPoSt input check of 2KiB sectors. The bytes: the kind (even:
//! WindowPoSt, odd: WinningPoSt), the partition index, the prover id and randomness (32 bytes
//! each), then the vanilla proofs as chunks (seeds: real vanilla proofs, `make-seeds.py`).

use cuzk::engine::{PostKind, PostRequest};
use cuzk_fuzz::Reader;
use filecoin_proofs_api::RegisteredPoStProof;

fn main() {
    afl::fuzz_nohook!(|data: &[u8]| {
        let mut input = Reader::new(data);
        let (kind, registered_proof) = match input.u8() % 2 {
            0 => (PostKind::Window, RegisteredPoStProof::StackedDrgWindow2KiBV1_2),
            _ => (PostKind::Winning, RegisteredPoStProof::StackedDrgWinning2KiBV1),
        };
        let partition_index = usize::from(input.u8());
        let prover_id = input.array32();
        let randomness = input.array32();
        let vanilla_proofs = input.chunks();
        let request = PostRequest {
            kind,
            registered_proof,
            prover_id,
            randomness,
            vanilla_proofs: &vanilla_proofs,
            partition_index,
        };
        cuzk_fuzz::check(&request);
    });
}
