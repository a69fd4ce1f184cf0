//! Host memory given back when the engine goes idle. A call allocates hundreds of MiB to GiBs
//! of vectors on many threads; glibc keeps what they free in per-thread arenas for reuse, so
//! the process's RSS stays up to hundreds of MiB above its live heap, and where it sits
//! within that band depends on which threads ran what (docs/RELIABILITY.md, soak). When the
//! last call in flight ends, and after a key eviction, the engine returns the arenas' free
//! pages to the OS (`malloc_trim`). That takes milliseconds, once per idle period, on the
//! thread of the call that ended last, before that call returns. The next call gets the pages
//! back from the OS as it touches them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Counts the calls in flight; returns free host memory when the count drops to zero.
#[derive(Default)]
pub struct InFlight {
    calls: AtomicU64,
    trims: AtomicU64,
}

/// One call in flight, for as long as it lives.
pub struct Call<'a>(&'a InFlight);

impl InFlight {
    pub fn enter(&self) -> Call<'_> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Call(self)
    }

    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Times free host memory was returned to the OS.
    pub fn trims(&self) -> u64 {
        self.trims.load(Ordering::Relaxed)
    }

    /// Returns the allocator's free pages to the OS (glibc; nothing elsewhere).
    pub fn trim(&self) {
        let start = Instant::now();
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only walks the allocator's own free lists, under its locks.
        unsafe {
            libc::malloc_trim(0);
        }
        self.trims.fetch_add(1, Ordering::Relaxed);
        log::debug!("free host memory returned to the OS in {:.2?}", start.elapsed());
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        if self.0.calls.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.trim();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_call_to_end_trims_once() {
        let in_flight = InFlight::default();
        let first = in_flight.enter();
        let second = in_flight.enter();
        assert_eq!(in_flight.calls(), 2);
        drop(first);
        assert_eq!(in_flight.trims(), 0, "a call is still in flight");
        drop(second);
        assert_eq!((in_flight.calls(), in_flight.trims()), (0, 1));
        drop(in_flight.enter());
        assert_eq!(in_flight.trims(), 2, "each idle period once");
    }
}
