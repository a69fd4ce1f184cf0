//! What every target shares: an input check run the way the engine runs it, whose escaping
//! panic is the crash AFL records (the C ABI would return CUZK_STATUS_PANIC for it), and a
//! reader that cuts a target's bytes into the arguments of a call. Panics that cuzk itself
//! catches inside the check (around filecoin-proofs' verifiers) are not crashes: the targets
//! use `fuzz_nohook!`, so only an escaping one aborts.

use cuzk::internals::ProofRequest;
use cuzk::timings::Timings;

/// Checks `request` and drops the result; aborts when a panic escapes the check.
pub fn check(request: &dyn ProofRequest) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| request.check(&mut Timings::new()).map(drop)));
    if outcome.is_err() {
        std::process::abort();
    }
}

/// A target's bytes read front to back as fixed-size values, then as length-prefixed chunks.
/// Past the end every value reads as zero and every chunk as empty, so any input is a call.
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { rest: data }
    }

    /// The next `n` bytes, fewer at the end.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, tail) = self.rest.split_at(n.min(self.rest.len()));
        self.rest = tail;
        head
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        let head = self.bytes(N);
        out[..head.len()].copy_from_slice(head);
        out
    }

    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    pub fn array32(&mut self) -> [u8; 32] {
        self.array()
    }

    /// A chunk: a little-endian u32 length, then that many bytes (fewer at the end).
    pub fn chunk(&mut self) -> &'a [u8] {
        let len = self.u32() as usize;
        self.bytes(len)
    }

    /// Chunks until the bytes run out.
    pub fn chunks(&mut self) -> Vec<&'a [u8]> {
        let mut chunks = Vec::new();
        while !self.rest.is_empty() {
            chunks.push(self.chunk());
        }
        chunks
    }

    /// Whatever is left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.rest)
    }
}
