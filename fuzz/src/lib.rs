//! What every target shares: an input check run the way the engine runs it, whose escaping
//! panic is the crash AFL records (the C ABI would return CUZK_STATUS_PANIC for it). Panics
//! that cuzk itself catches inside the check (around filecoin-proofs' verifiers) are not
//! crashes: the targets use `fuzz_nohook!`, so only an escaping one aborts.

use cuzk::internals::ProofRequest;
use cuzk::timings::Timings;

/// Checks `request` and drops the result; aborts when a panic escapes the check.
pub fn check(request: &dyn ProofRequest) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| request.check(&mut Timings::new()).map(drop)));
    if outcome.is_err() {
        std::process::abort();
    }
}
