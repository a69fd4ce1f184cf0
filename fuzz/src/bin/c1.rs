//! The PoRep C1 input check of a 2KiB sector. The bytes: the sector id (8 bytes, little
//! endian), the prover id (32 bytes), then the C1 JSON (seed: a real one, `make-seeds.py`).

use cuzk::engine::{SectorInput, SectorRequest};
use cuzk_fuzz::Reader;

fn main() {
    afl::fuzz_nohook!(|data: &[u8]| {
        let mut input = Reader::new(data);
        let sector_id = input.u64();
        let prover_id = input.array32();
        let request = SectorRequest {
            c1_json: input.rest(),
            sector_id,
            prover_id,
        };
        cuzk_fuzz::check(&SectorInput::Sealed(request));
    });
}
