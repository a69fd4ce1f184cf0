//! Memory given back while the engine is idle, by a janitor thread of the engine's, never on
//! a caller's thread.
//!
//! - Host memory the allocators keep: a call allocates hundreds of MiB to GiBs of vectors on
//!   many threads. jemalloc keeps every freed page for the next partition (src/allocator.rs),
//!   and glibc keeps what the C side frees in per-thread arenas, so the process's RSS stays at
//!   its high-water mark while calls run (docs/RELIABILITY.md, soak). Once the engine has been
//!   idle for `TRIM_AFTER` (no call in flight: a preload and an eviction count as calls), the
//!   janitor returns the free pages to the OS (`allocator::return_free_memory`), once per
//!   idle period; calls closer together than that reuse them. While calls run, a proving lane
//!   that finds more kept than the pipeline's next partitions can reuse asks the janitor to
//!   return them at once ([`Idle::request_trim`]; `pipeline::bound_kept_free_memory`).
//! - With an idle policy (`IdlePolicy::release_after`), once the engine has been idle that
//!   long it releases its keys, shapes and buffers (`Engine::release_memory`), once per idle
//!   period.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long an idle period lasts before the allocators' free pages go back to the OS. Calls
/// that follow each other more closely (back-to-back C2s, a deadline's PoSt partitions) reuse
/// the pages instead of faulting them in again: a 2KiB C2's witness took 0.024–0.098 s warm
/// when every call ended with the return (docs/PERFORMANCE.md, run 93).
const TRIM_AFTER: Duration = Duration::from_secs(1);

/// Calls in flight and the idle periods between them, shared with the janitor.
#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    trims: AtomicU64,
    releases: AtomicU64,
}

#[derive(Default)]
struct State {
    /// Calls in flight; `proofs` of them prove (the others preload, evict or release).
    calls: u64,
    proofs: u64,
    /// Idle periods begun (each time the calls in flight drop to zero).
    periods: u64,
    idle_since: Option<Instant>,
    /// The last period whose free host memory was returned, and whose memory was released.
    trimmed: u64,
    released: u64,
    /// A trim asked for while calls run ([`Idle::request_trim`]).
    trim_requested: bool,
    stopped: bool,
}

/// The engine's calls in flight and its janitor.
#[derive(Default)]
pub struct Idle {
    shared: Arc<Shared>,
}

/// One call in flight, for as long as it lives; `proves` when it is a proof call.
pub struct Call<'a> {
    idle: &'a Idle,
    proves: bool,
}

impl Idle {
    /// Starts the janitor: it returns free host memory once an idle period has lasted
    /// `TRIM_AFTER` and, with `release_after`, calls `release` once it has lasted that long.
    /// It stops when `self` is dropped.
    pub fn start(&self, release_after: Option<Duration>, release: Box<dyn Fn() + Send>) -> std::io::Result<()> {
        let janitor = Arc::clone(&self.shared);
        std::thread::Builder::new()
            .name("cuzk-idle".into())
            .spawn(move || janitor.run(release_after, release))?;
        Ok(())
    }

    /// A call that keeps the engine busy without proving (a preload, an eviction, a release).
    pub fn enter(&self) -> Call<'_> {
        self.shared.lock().calls += 1;
        Call { idle: self, proves: false }
    }

    /// A proof call.
    pub fn enter_proof(&self) -> Call<'_> {
        let mut state = self.shared.lock();
        state.calls += 1;
        state.proofs += 1;
        Call { idle: self, proves: true }
    }

    /// Asks the janitor to return the allocators' free pages now, calls in flight or not; asks
    /// made while one is pending or under way count once.
    pub fn request_trim(&self) {
        self.shared.lock().trim_requested = true;
        self.shared.changed.notify_all();
    }

    /// Proof calls in flight.
    pub fn proofs(&self) -> u64 {
        self.shared.lock().proofs
    }

    /// Times free host memory was returned to the OS.
    pub fn trims(&self) -> u64 {
        self.shared.trims.load(Ordering::Relaxed)
    }

    /// Times the idle policy released the engine's memory.
    pub fn releases(&self) -> u64 {
        self.shared.releases.load(Ordering::Relaxed)
    }
}

impl Drop for Idle {
    fn drop(&mut self) {
        self.shared.lock().stopped = true;
        self.shared.changed.notify_all();
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        let mut state = self.idle.shared.lock();
        state.calls -= 1;
        state.proofs -= u64::from(self.proves);
        if state.calls == 0 {
            state.periods += 1;
            state.idle_since = Some(Instant::now());
            self.idle.shared.changed.notify_all();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn run(&self, release_after: Option<Duration>, release: Box<dyn Fn() + Send>) {
        let mut state = self.lock();
        loop {
            if state.stopped {
                return;
            }
            let since = state.idle_since.filter(|_| state.calls == 0);
            let trim_due = since.filter(|_| state.trimmed != state.periods).map(|s| s + TRIM_AFTER);
            let release_due = match (release_after, since) {
                (Some(after), Some(s)) if state.released != state.periods => Some(s + after),
                _ => None,
            };
            let now = Instant::now();
            let idle_trim = trim_due.is_some_and(|due| now >= due);
            if idle_trim || state.trim_requested {
                state.trim_requested = false;
                if idle_trim {
                    state.trimmed = state.periods;
                }
                drop(state);
                self.trim();
                state = self.lock();
                continue;
            }
            if release_due.is_some_and(|due| now >= due) {
                state.released = state.periods;
                drop(state);
                release();
                self.releases.fetch_add(1, Ordering::Relaxed);
                state = self.lock();
                continue;
            }
            state = match trim_due.into_iter().chain(release_due).min() {
                Some(due) => self.changed.wait_timeout(state, due - now).unwrap_or_else(|p| p.into_inner()).0,
                None => self.changed.wait(state).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }

    /// Hands the allocators' free pages back to the OS.
    fn trim(&self) {
        let start = Instant::now();
        crate::allocator::return_free_memory();
        self.trims.fetch_add(1, Ordering::Relaxed);
        log::debug!("free host memory returned to the OS in {:.2?}", start.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait_until(what: &str, done: impl Fn() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn each_idle_period_is_trimmed_once_after_its_last_call() {
        let idle = Idle::default();
        idle.start(None, Box::new(|| {})).unwrap();
        let first = idle.enter_proof();
        let second = idle.enter();
        assert_eq!(idle.proofs(), 1, "a preload is a call, not a proof");
        drop(first);
        std::thread::sleep(TRIM_AFTER + Duration::from_millis(20));
        assert_eq!(idle.trims(), 0, "a call is still in flight");
        drop(second);
        assert_eq!(idle.proofs(), 0);
        // Calls closer together than TRIM_AFTER reuse the free pages: no trim between them.
        for _ in 0..3 {
            std::thread::sleep(TRIM_AFTER / 4);
            drop(idle.enter());
        }
        assert_eq!(idle.trims(), 0, "the idle periods were short");
        wait_until("the first trim", || idle.trims() == 1);
        drop(idle.enter());
        wait_until("the second trim", || idle.trims() == 2);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!((idle.trims(), idle.releases()), (2, 0), "no policy: nothing released");
    }

    #[test]
    fn a_requested_trim_runs_during_a_call_and_leaves_the_idle_one() {
        let idle = Idle::default();
        idle.start(None, Box::new(|| {})).unwrap();
        let call = idle.enter_proof();
        idle.request_trim();
        wait_until("the requested trim", || idle.trims() == 1);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(idle.trims(), 1, "one request, one trim");
        drop(call);
        // The idle period after the call is trimmed as before.
        wait_until("the idle trim", || idle.trims() == 2);
        std::thread::sleep(TRIM_AFTER / 4);
        assert_eq!(idle.trims(), 2);
    }

    #[test]
    fn the_policy_releases_once_per_idle_period_that_lasts() {
        let released = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&released);
        let after = Duration::from_millis(50);
        let idle = Idle::default();
        let release = move || {
            counter.fetch_add(1, Ordering::SeqCst);
        };
        idle.start(Some(after), Box::new(release)).unwrap();
        // Nothing before the first call: an engine that never proved holds nothing.
        std::thread::sleep(after * 2);
        assert_eq!(released.load(Ordering::SeqCst), 0);
        // Calls closer together than `after` keep it from releasing.
        for _ in 0..5 {
            drop(idle.enter());
            std::thread::sleep(after / 5);
        }
        assert_eq!(released.load(Ordering::SeqCst), 0, "the idle periods were short");
        wait_until("the release", || released.load(Ordering::SeqCst) == 1);
        std::thread::sleep(after * 2);
        assert_eq!(released.load(Ordering::SeqCst), 1, "once per idle period");
        let call = idle.enter();
        std::thread::sleep(after * 2);
        assert_eq!(released.load(Ordering::SeqCst), 1, "never while a call is in flight");
        drop(call);
        wait_until("the next period's release", || released.load(Ordering::SeqCst) == 2);
        assert_eq!(idle.releases(), 2);
    }
}
