//! The PoRep C1 input check: the bytes as the C1 JSON of a 2KiB sector (seed: a real C1).

use cuzk::engine::{SectorInput, SectorRequest};

fn main() {
    afl::fuzz_nohook!(|data: &[u8]| {
        let request = SectorRequest {
            c1_json: data,
            sector_id: 7,
            prover_id: [1; 32],
        };
        cuzk_fuzz::check(&SectorInput::Sealed(request));
    });
}
