//! A device's turn: its GPU phases run one call at a time (sppark's kernels keep per-stream
//! state in device memory, and the context's NTT and witness buffers are shared); on the CPU
//! backend, the MSMs of one partition at a time (they use every core). Waiting calls take it
//! in arrival order (tickets) within their class, and a class goes before every waiting call
//! of a lower class (WinningPoSt, then WindowPoSt, then sealing): since a call takes the turn
//! once per partition, a PoSt overtakes a running batch of C2s at its next partition boundary
//! instead of waiting for the whole batch, and for the calls of lower classes queued before it.
//!
//! A holder whose device state between two phases no call of some higher classes touches (a
//! GPU partition between its MSMs, or inside H for the WinningPoSt class, whose buffers are
//! its own) can make way (`TurnGuard::make_way_for`): the waiting calls of those classes have
//! the turn, then the holder takes it back before any call below them. So a WinningPoSt
//! arriving during a 32GiB batch waits for one chunk of a partition's work, not for the
//! partition's every phase.
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

    /// The class above this one, None for the top class.
    pub fn above(self) -> Option<Priority> {
        Self::ALL.get(self as usize + 1).copied()
    }

    /// The class below this one, None for the lowest.
    pub fn below(self) -> Option<Priority> {
        (self as usize).checked_sub(1).map(|i| Self::ALL[i])
    }
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
    /// Holders that made way, each with its class and the lowest class it made way for: it
    /// takes the turn back before any waiting call below that class.
    paused: Vec<(Priority, Priority)>,
}

impl TurnState {
    fn queue(&mut self, priority: Priority) -> &mut Tickets {
        &mut self.queues[priority as usize]
    }

    /// Whether a call of a class above `priority` waits.
    fn higher_waiting(&self, priority: Priority) -> bool {
        self.queues[priority as usize + 1..].iter().any(|q| q.waiting() > 0)
    }

    /// Whether a holder that made way waits to take the turn back before a call of `priority`.
    fn paused_before(&self, priority: Priority) -> bool {
        self.paused.iter().any(|&(_, from)| from > priority)
    }

    /// Whether calls of class `from` or above wait.
    fn waiting_from(&self, from: Priority) -> bool {
        self.queues[from as usize..].iter().any(|q| q.waiting() > 0)
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

/// Holding the turn; dropping it passes the turn on.
pub struct TurnGuard<'a> {
    turn: &'a Turn,
    priority: Priority,
    /// Since when it has held the turn (taken, or taken back after making way).
    since: Instant,
}

impl Turn {
    /// Waits for the turn: until it is free, every call of this class that arrived earlier has
    /// had it, no call of a higher class is waiting and no holder that made way for classes
    /// above this one waits to take it back.
    pub fn take(&self, priority: Priority) -> TurnGuard<'_> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let ticket = state.queue(priority).issued;
        state.queue(priority).issued += 1;
        while state.busy || state.queue(priority).served != ticket || state.higher_waiting(priority) || state.paused_before(priority) {
            state = self.released.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.queue(priority).served += 1;
        state.busy = true;
        TurnGuard {
            turn: self,
            priority,
            since: Instant::now(),
        }
    }

    /// Total time the turn has been held.
    pub fn held_ns(&self) -> u64 {
        self.held_ns.load(Ordering::Relaxed)
    }
}

impl TurnGuard<'_> {
    /// The class the turn is held for.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// When calls of class `from` or above wait (`from` above the holder's class), lets them
    /// have the turn and waits to take it back, before any call below `from`; returns how long
    /// it made way, None when none of them was waiting. Only between phases whose device
    /// state no call of those classes touches.
    pub fn make_way_for(&mut self, from: Priority) -> Option<std::time::Duration> {
        debug_assert!(from > self.priority, "a holder makes way for classes above its own");
        let mut state = self.turn.state.lock().unwrap_or_else(|p| p.into_inner());
        if !state.waiting_from(from) {
            return None;
        }
        let paused = Instant::now();
        self.turn.held_ns.fetch_add(nanos(paused.duration_since(self.since)), Ordering::Relaxed);
        state.busy = false;
        state.paused.push((self.priority, from));
        self.turn.released.notify_all();
        // Back when nobody it made way for waits, and every holder of a higher class that made
        // way meanwhile has taken the turn back.
        let me = self.priority;
        while state.busy || state.waiting_from(from) || state.paused.iter().any(|&(class, _)| class > me) {
            state = self.turn.released.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        let mine = state.paused.iter().position(|&entry| entry == (me, from)).expect("its own entry");
        state.paused.swap_remove(mine);
        state.busy = true;
        self.since = Instant::now();
        Some(self.since.duration_since(paused))
    }
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        self.turn.held_ns.fetch_add(nanos(self.since.elapsed()), Ordering::Relaxed);
        self.turn.state.lock().unwrap_or_else(|p| p.into_inner()).busy = false;
        self.turn.released.notify_all();
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
    fn a_holder_makes_way_for_higher_classes_only_and_takes_the_turn_back_first() {
        let turn = Turn::default();
        let (order_tx, order) = mpsc::channel();
        std::thread::scope(|scope| {
            let mut holder = turn.take(Priority::Sealing);
            assert_eq!(holder.make_way_for(Priority::WindowPost), None, "nobody above waits");
            let waiter = |class: Priority, name: &'static str| {
                let (turn, order_tx) = (&turn, order_tx.clone());
                scope.spawn(move || {
                    let _g = turn.take(class);
                    order_tx.send(name).unwrap();
                });
            };
            waiter(Priority::Sealing, "sealing waiter");
            wait_for_waiters(&turn, |s| s.queues[Priority::Sealing as usize].waiting() == 1);
            assert_eq!(
                holder.make_way_for(Priority::WindowPost),
                None,
                "a waiter of its own class does not count"
            );
            waiter(Priority::WinningPost, "WinningPoSt");
            waiter(Priority::WindowPost, "WindowPoSt");
            wait_for_waiters(&turn, |s| {
                s.queues[Priority::WinningPost as usize].waiting() + s.queues[Priority::WindowPost as usize].waiting() == 2
            });
            assert!(holder.make_way_for(Priority::WindowPost).is_some());
            order_tx.send("holder back").unwrap();
            drop(holder);
        });
        let got: Vec<&str> = order.try_iter().collect();
        assert_eq!(got, ["WinningPoSt", "WindowPoSt", "holder back", "sealing waiter"]);
        let state = turn.state.lock().unwrap();
        assert!(!state.busy && state.paused.is_empty());
    }

    #[test]
    fn making_way_for_the_top_class_keeps_the_classes_between_waiting() {
        let turn = Turn::default();
        let (order_tx, order) = mpsc::channel();
        std::thread::scope(|scope| {
            let mut holder = turn.take(Priority::Sealing);
            let waiter = |class: Priority, name: &'static str| {
                let (turn, order_tx) = (&turn, order_tx.clone());
                scope.spawn(move || {
                    let _g = turn.take(class);
                    order_tx.send(name).unwrap();
                });
            };
            waiter(Priority::WindowPost, "WindowPoSt");
            wait_for_waiters(&turn, |s| s.queues[Priority::WindowPost as usize].waiting() == 1);
            assert_eq!(holder.make_way_for(Priority::WinningPost), None, "only a WindowPoSt waits");
            waiter(Priority::WinningPost, "WinningPoSt");
            wait_for_waiters(&turn, |s| s.queues[Priority::WinningPost as usize].waiting() == 1);
            // Inside H: only the WinningPoSt may come in (its buffers are its own).
            assert!(holder.make_way_for(Priority::WinningPost).is_some());
            order_tx.send("holder back inside H").unwrap();
            // After H: every class above the holder's.
            assert!(holder.make_way_for(Priority::WindowPost).is_some());
            order_tx.send("holder back after H").unwrap();
        });
        let got: Vec<&str> = order.try_iter().collect();
        assert_eq!(got, ["WinningPoSt", "holder back inside H", "WindowPoSt", "holder back after H"]);
    }

    #[test]
    fn holders_that_made_way_take_the_turn_back_highest_class_first() {
        let turn = Turn::default();
        let (order_tx, order) = mpsc::channel();
        std::thread::scope(|scope| {
            let mut sealing = turn.take(Priority::Sealing);
            {
                let (turn, order_tx) = (&turn, order_tx.clone());
                scope.spawn(move || {
                    let mut window = turn.take(Priority::WindowPost);
                    wait_for_waiters(turn, |s| s.queues[Priority::WinningPost as usize].waiting() == 1);
                    assert!(window.make_way_for(Priority::WinningPost).is_some());
                    order_tx.send("WindowPoSt back").unwrap();
                });
            }
            wait_for_waiters(&turn, |s| s.queues[Priority::WindowPost as usize].waiting() == 1);
            {
                let (turn, order_tx) = (&turn, order_tx.clone());
                scope.spawn(move || {
                    // Asks once the WindowPoSt holds the turn the sealing holder made way for.
                    wait_for_waiters(turn, |s| s.paused.len() == 1 && s.busy);
                    let _g = turn.take(Priority::WinningPost);
                    order_tx.send("WinningPoSt").unwrap();
                });
            }
            assert!(sealing.make_way_for(Priority::WindowPost).is_some());
            order_tx.send("sealing back").unwrap();
        });
        let got: Vec<&str> = order.try_iter().collect();
        assert_eq!(got, ["WinningPoSt", "WindowPoSt back", "sealing back"]);
    }

    #[test]
    fn turn_is_exclusive_and_passed_on() {
        let turn = Turn::default();
        let inside = std::sync::atomic::AtomicUsize::new(0);
        let enter = |inside: &std::sync::atomic::AtomicUsize| {
            assert_eq!(inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst), 0, "two calls hold the turn");
            inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        };
        std::thread::scope(|scope| {
            for i in 0..8 {
                let (turn, inside) = (&turn, &inside);
                scope.spawn(move || {
                    for _ in 0..50 {
                        // Phases with a chance to make way between them, as a GPU partition's.
                        let mut g = turn.take(Priority::ALL[i % 3]);
                        enter(inside);
                        if let Some(from) = Priority::ALL[i % 3].above() {
                            g.make_way_for(from);
                        }
                        enter(inside);
                    }
                });
            }
        });
        let state = turn.state.lock().unwrap();
        assert!(!state.busy && state.paused.is_empty() && state.queues.iter().all(|q| q.waiting() == 0));
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
