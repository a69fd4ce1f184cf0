//! Host copies of keys' points under one policy. A key that is not resident on a device (a
//! streamed one, or any key on the CPU backend) has its points decoded into host memory — 58 GB
//! for a 32GiB WindowPoSt key — and held for its next calls. When a new copy does not fit the
//! host's available memory, idle copies of keys of the call's class or lower are released
//! first, lowest class and least recently used first, as device keys are evicted
//! (`resident.rs`): a sealing call never takes a PoSt key's copy, and no copy a call is using
//! goes. If the copy still does not fit, its call fails with `OutOfMemory` before any point is
//! decoded, and the process goes on.

use std::sync::{Arc, Mutex};

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use rayon::ThreadPool;

use crate::backend::resident::eviction_order;
use crate::backend::turn::Priority;
use crate::error::{Error, Result, Status};
use crate::groth16::{HostCopyHandle, ProvingKey};

/// Every key whose points a call asked for in host memory, with the highest class of those
/// calls and when it was last asked for.
struct HostCopies {
    state: Mutex<State>,
}

struct State {
    entries: Vec<Entry>,
    /// Counts the asks: an entry's `last_use` is the count at its last.
    clock: u64,
}

struct Entry {
    copy: HostCopyHandle,
    class: Priority,
    last_use: u64,
}

/// The process's: host memory is the process's, whichever engine holds a key.
static HOST_COPIES: HostCopies = HostCopies::new();

/// `key`'s points in host memory for a call of `class`: held ones, or decoded from its file
/// after room is made for them.
pub fn host_points(key: &ProvingKey, class: Priority, pool: &ThreadPool, decode_ns: &mut u64) -> Result<Arc<Parameters<Bls12>>> {
    HOST_COPIES.host_points(key, class, pool, decode_ns, crate::host_memory::available)
}

impl HostCopies {
    const fn new() -> Self {
        HostCopies {
            state: Mutex::new(State {
                entries: Vec::new(),
                clock: 0,
            }),
        }
    }

    fn host_points(
        &self,
        key: &ProvingKey,
        class: Priority,
        pool: &ThreadPool,
        decode_ns: &mut u64,
        available: impl Fn() -> Option<u64>,
    ) -> Result<Arc<Parameters<Bls12>>> {
        self.note_use(key, class);
        if let Some(points) = key.held_host_points() {
            return Ok(points);
        }
        // A key's points are the process's largest allocation, which the pages the allocators
        // keep from smaller freed buffers do not serve: they go back to the OS first (41 GB of
        // them beside a 58 GB WindowPoSt copy got a process killed on a 128 GiB host, run 106).
        crate::allocator::return_free_memory();
        if let Some(available) = available() {
            let bytes = key.points_bytes();
            let mut room = available;
            if bytes > room {
                let released = self.release_for(key, class, bytes - room);
                if released > 0 {
                    crate::allocator::return_free_memory();
                    room += released;
                }
            }
            refuse_beyond_room(key.label(), bytes, room)?;
        }
        key.host_points(pool, decode_ns)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a call of `class` asking for `key`'s points; forgets keys that are gone.
    fn note_use(&self, key: &ProvingKey, class: Priority) {
        let mut state = self.lock();
        state.entries.retain(|e| e.copy.is_alive());
        state.clock += 1;
        let now = state.clock;
        match state.entries.iter_mut().find(|e| e.copy.is_of(key)) {
            Some(entry) => {
                entry.class = entry.class.max(class);
                entry.last_use = now;
            }
            None => state.entries.push(Entry {
                copy: key.host_copy_handle(),
                class,
                last_use: now,
            }),
        }
    }

    /// Releases idle host copies of other keys of `class` or lower, lowest class and least
    /// recently used first, until `shortfall` bytes went or none is left; returns the bytes.
    fn release_for(&self, key: &ProvingKey, class: Priority, shortfall: u64) -> u64 {
        let state = self.lock();
        let order = eviction_order(&state.entries, |e| (e.class, e.last_use), |e| e.class <= class && !e.copy.is_of(key));
        let mut released = 0;
        for entry in order.into_iter().map(|i| &state.entries[i]) {
            if released >= shortfall {
                break;
            }
            let bytes = entry.copy.release_if_idle();
            if bytes > 0 {
                log::info!(
                    "released the host copy of {} ({:.1} GiB, idle) to make room for {}'s",
                    entry.copy.label(),
                    bytes as f64 / (1u64 << 30) as f64,
                    key.label()
                );
                released += bytes;
            }
        }
        released
    }
}

/// Refuses a host copy that the room left cannot hold: decoding it anyway gets the process
/// killed for memory part way through, every call in it with it (run 107's update key, decoded
/// beside a 58 GB WindowPoSt and a 45 GB PoRep copy on a 128 GiB host).
fn refuse_beyond_room(label: &str, bytes: u64, room: u64) -> Result<()> {
    if bytes <= room {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    Err(Error::new(
        Status::OutOfMemory,
        format!(
            "the points of {label} need {:.1} GiB of host memory and {:.1} GiB are available (MemAvailable + SwapFree, or the cgroup's limit), \
             idle copies of keys of this call's class or lower released: the key is not resident on a device, so its points are held in host \
             memory; free host memory (evicting a key drops its copy) or prove this kind where the device has room for its key",
            gib(bytes),
            gib(room)
        ),
    ))
}

#[cfg(all(test, feature = "internals"))]
mod tests {
    use super::*;
    use crate::groth16::repeating_test_key;

    fn pool() -> ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap()
    }

    /// Three keys' copies held; a fourth key's needs room for one. The policy takes the least
    /// recently used idle copy of the call's class or lower: never a higher class's, never one
    /// a call holds; with nothing it may take, the call fails with OutOfMemory.
    #[test]
    fn room_is_made_from_idle_copies_of_the_calls_class_or_lower() {
        let copies = HostCopies::new();
        let plenty = || Some(u64::MAX);
        let [window, porep, update, next] = ["window", "porep", "update", "next"].map(|label| repeating_test_key(label, 7));
        let one_key = next.points_bytes();
        let used_by_a_call = copies.host_points(&porep, Priority::Sealing, &pool(), &mut 0, plenty).unwrap();
        copies.host_points(&window, Priority::WindowPost, &pool(), &mut 0, plenty).unwrap();
        copies.host_points(&update, Priority::Sealing, &pool(), &mut 0, plenty).unwrap();

        // Room for one key: porep's copy is older but in use, so update's goes.
        let short_by_one = || Some(one_key - 1);
        let next_in_use = copies.host_points(&next, Priority::Sealing, &pool(), &mut 0, short_by_one).unwrap();
        assert_eq!(window.host_bytes(), one_key, "a WindowPoSt copy went for a sealing call");
        assert_eq!(porep.host_bytes(), one_key, "a copy in use went");
        assert_eq!(update.host_bytes(), 0, "the idle sealing copy stayed");

        // Nothing a sealing call may take is idle now (porep's and next's in use, window's above
        // it): the call fails cleanly, and nothing went.
        let Err(e) = copies.host_points(&update, Priority::Sealing, &pool(), &mut 0, || Some(0)) else {
            panic!("a copy was decoded into no room");
        };
        assert_eq!(e.status, Status::OutOfMemory, "{e}");
        assert_eq!((window.host_bytes(), porep.host_bytes(), next.host_bytes()), (one_key, one_key, one_key));

        // Once the call ends, porep's copy is idle and goes first (least recently used), and a
        // WindowPoSt call may take copies of its class or lower.
        drop((used_by_a_call, next_in_use));
        copies.host_points(&update, Priority::WindowPost, &pool(), &mut 0, short_by_one).unwrap();
        assert_eq!((porep.host_bytes(), next.host_bytes(), update.host_bytes()), (0, one_key, one_key));
        assert_eq!(
            window.host_bytes(),
            one_key,
            "a call's own class's copy of another key went before lower ones"
        );
    }

    /// Through the process's policy and this machine's memory: a 96 TiB copy is refused before
    /// any point is decoded.
    #[test]
    fn a_copy_larger_than_the_memory_available_is_refused() {
        let key = repeating_test_key("a 96 TiB key", 1 << 40);
        let Err(e) = host_points(&key, Priority::WinningPost, &pool(), &mut 0) else {
            panic!("a 96 TiB copy was decoded");
        };
        assert_eq!(e.status, Status::OutOfMemory, "{e}");
        assert!(e.message.contains("a 96 TiB key") && e.message.contains("GiB are available"), "{e}");
        assert_eq!(key.host_bytes(), 0);
        refuse_beyond_room("k", 10, 10).unwrap();
        assert_eq!(refuse_beyond_room("k", 11, 10).unwrap_err().status, Status::OutOfMemory);
    }

    #[test]
    fn keys_that_are_gone_are_forgotten() {
        let copies = HostCopies::new();
        let key = repeating_test_key("gone", 7);
        copies.host_points(&key, Priority::Sealing, &pool(), &mut 0, || None).unwrap();
        drop(key);
        let other = repeating_test_key("other", 7);
        copies.host_points(&other, Priority::Sealing, &pool(), &mut 0, || None).unwrap();
        assert_eq!(copies.lock().entries.len(), 1);
    }
}
