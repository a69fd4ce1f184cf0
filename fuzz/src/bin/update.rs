//! The SnapDeals update input check: the first 96 bytes are comm_r_old, comm_r_new and
//! comm_d_new, the rest one partition's vanilla proof of a 2KiB update (seed: a real one).

use cuzk::engine::UpdateRequest;
use filecoin_proofs_api::RegisteredUpdateProof;

fn main() {
    afl::fuzz_nohook!(|data: &[u8]| {
        if data.len() < 96 {
            return;
        }
        let comm = |k: usize| <[u8; 32]>::try_from(&data[32 * k..32 * (k + 1)]).expect("32 bytes");
        let vanilla = [&data[96..]];
        let request = UpdateRequest {
            registered_proof: RegisteredUpdateProof::StackedDrg2KiBV1,
            comm_r_old: comm(0),
            comm_r_new: comm(1),
            comm_d_new: comm(2),
            vanilla_proofs: &vanilla,
        };
        cuzk_fuzz::check(&request);
    });
}
