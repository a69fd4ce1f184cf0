//! A device's turn: its GPU phases run one call at a time (sppark's kernels keep per-stream
//! state in device memory, and the context's NTT and witness buffers are shared); on the CPU
//! backend, the MSMs of one partition at a time (they use every core). Waiting calls take it
//! in arrival order (tickets) within their class, and a class goes before every waiting call
//! of a lower class (WinningPoSt, then WindowPoSt, then sealing): since a call takes the turn
//! once per partition, a PoSt overtakes a running batch of C2s at its next partition boundary
//! instead of waiting for the whole batch, and for the calls of lower classes queued before it.
//!
//! Never wait for a turn on a worker of a pool whose jobs a holder may wait for (the engine's):
//! a worker parked in `take` inside a job it stole would stall the holder's parallel work.
//! Backends wait on the calling thread and run their parallel parts with `pool.install`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use crate::timings::nanos;

/// The class of a call's work, by deadline (`ProveOptions::priority`; each proof kind has its
/// own by default). A class takes every device turn before waiting calls of lower classes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Priority {
    /// Sealing and updates (PoRep C2, SnapDeals): hours of slack.
    #[default]
    Sealing,
    /// WindowPoSt partitions: a deadline in minutes.
    WindowPost,
    /// WinningPoSt (block production: seconds): first to every device turn, and its partitions
    /// never wait for the pipeline's host memory budget.
    WinningPost,
}

impl Priority {
    /// Every class, lowest first.
    pub const ALL: [Priority; 3] = [Priority::Sealing, Priority::WindowPost, Priority::WinningPost];
}

#[derive(Default)]
pub struct Turn {
    state: Mutex<TurnState>,
    released: Condvar,
    /// Time the turn has been held, in nanoseconds: how busy the device was (the engine
    /// status; a benchmark's busy fraction is its growth over the wall time).
    held_ns: AtomicU64,
}

#[derive(Default)]
struct TurnState {
    busy: bool,
    /// One queue per class, lowest first (`Priority as usize`).
    queues: [Tickets; 3],
}

impl TurnState {
    fn queue(&mut self, priority: Priority) -> &mut Tickets {
        &mut self.queues[priority as usize]
    }

    /// Whether a call of a class above `priority` waits.
    fn higher_waiting(&self, priority: Priority) -> bool {
        self.queues[priority as usize + 1..].iter().any(|q| q.waiting() > 0)
    }
}

/// A first-come first-served queue: waiters are served in the order their tickets were issued.
#[derive(Default)]
struct Tickets {
    issued: u64,
    served: u64,
}

impl Tickets {
    fn waiting(&self) -> u64 {
        self.issued - self.served
    }
}

/// Holding the turn (since the instant); dropping it passes the turn on.
pub struct TurnGuard<'a>(&'a Turn, Instant);

impl Turn {
    /// Waits for the turn: until it is free, every call of this class that arrived earlier has
    /// had it and no call of a higher class is waiting.
    pub fn take(&self, priority: Priority) -> TurnGuard<'_> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let ticket = state.queue(priority).issued;
        state.queue(priority).issued += 1;
        while state.busy || state.queue(priority).served != ticket || state.higher_waiting(priority) {
            state = self.released.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.queue(priority).served += 1;
        state.busy = true;
        TurnGuard(self, Instant::now())
    }

    /// Total time the turn has been held.
    pub fn held_ns(&self) -> u64 {
        self.held_ns.load(Ordering::Relaxed)
    }
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        self.0.held_ns.fetch_add(nanos(self.1.elapsed()), Ordering::Relaxed);
        self.0.state.lock().unwrap_or_else(|p| p.into_inner()).busy = false;
        self.0.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Polls until the turn's state satisfies `waiting`.
    fn wait_for_waiters(turn: &Turn, waiting: impl Fn(&TurnState) -> bool) {
        while !waiting(&turn.state.lock().unwrap()) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn classes_take_the_turn_by_deadline_whatever_their_arrival() {
        let turn = Turn::default();
        let (order_tx, order) = mpsc::channel();
        std::thread::scope(|scope| {
            let running = turn.take(Priority::Sealing);
            // A sealing call queues first, then a WindowPoSt, then a WinningPoSt; all wait for
            // `running`, each blocked in take() before the next arrives.
            for (waiting, class) in [Priority::Sealing, Priority::WindowPost, Priority::WinningPost].into_iter().enumerate() {
                let (turn, order_tx) = (&turn, order_tx.clone());
                scope.spawn(move || {
                    let _g = turn.take(class);
                    order_tx.send(class).unwrap();
                });
                wait_for_waiters(turn, |s| s.queues.iter().map(Tickets::waiting).sum::<u64>() == waiting as u64 + 1);
            }
            drop(running);
        });
        let got: Vec<Priority> = order.try_iter().collect();
        assert_eq!(got, [Priority::WinningPost, Priority::WindowPost, Priority::Sealing]);
    }

    #[test]
    fn calls_of_one_priority_take_the_turn_in_arrival_order() {
        let turn = Turn::default();
        let (order_tx, order) = mpsc::channel();
        std::thread::scope(|scope| {
            let running = turn.take(Priority::Sealing);
            for i in 0..6 {
                let (turn, order_tx) = (&turn, order_tx.clone());
                scope.spawn(move || {
                    let _g = turn.take(Priority::WindowPost);
                    order_tx.send(i).unwrap();
                });
                // Call i has its ticket before call i + 1 asks for one.
                wait_for_waiters(turn, |s| s.queues[Priority::WindowPost as usize].waiting() == i + 1);
            }
            drop(running);
        });
        let got: Vec<u64> = order.try_iter().collect();
        assert_eq!(got, (0..6).collect::<Vec<_>>());
    }

    #[test]
    fn turn_is_exclusive_and_passed_on() {
        let turn = Turn::default();
        let inside = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for i in 0..8 {
                let (turn, inside) = (&turn, &inside);
                scope.spawn(move || {
                    for _ in 0..50 {
                        let _g = turn.take(Priority::ALL[i % 3]);
                        assert_eq!(inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst), 0, "two calls hold the turn");
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                });
            }
        });
        let state = turn.state.lock().unwrap();
        assert!(!state.busy && state.queues.iter().all(|q| q.waiting() == 0));
    }

    #[test]
    fn held_time_adds_up() {
        let turn = Turn::default();
        let mut inside = Duration::ZERO;
        for _ in 0..3 {
            let guard = turn.take(Priority::Sealing);
            let start = std::time::Instant::now();
            std::thread::sleep(Duration::from_millis(20));
            inside += start.elapsed();
            drop(guard);
        }
        std::thread::sleep(Duration::from_millis(30));
        let (held, inside) = (turn.held_ns(), nanos(inside));
        assert!(
            held >= inside && held < inside + 30_000_000,
            "held {held} ns: the three turns took {inside} ns, and the 30 ms after them is not held"
        );
    }
}
