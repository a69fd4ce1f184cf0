//! Copies of proving keys kept in a budgeted memory (a device's): at most `budget` bytes, each
//! key copied once however many calls ask for it at the same time, copies of keys that no
//! longer exist dropped. When a new copy does not fit, copies are evicted by class, then by
//! age: a key is tagged with the highest class (by deadline, `Priority`) of the calls that used
//! it, and a call evicts only copies of its class or lower, the lowest class first and within a
//! class the least recently used. So a sealing batch never displaces a PoSt key: when the room
//! it needs is held by keys of higher classes its key is streamed instead (as is a key larger
//! than the whole budget), and deadline-critical keys stay resident.

use std::sync::{Arc, Mutex, Weak};

use once_cell::sync::OnceCell;

use crate::backend::Priority;
use crate::error::Result;

/// The indices of the `items` that `eligible` takes in the order they go to make room: the
/// lowest class first and within a class the least recently used (`rank`: class and last use).
/// Device copies (`ResidentCache`) and host copies (`host_copies`) go in this order.
pub fn eviction_order<T>(items: &[T], rank: impl Fn(&T) -> (Priority, u64), eligible: impl Fn(&T) -> bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).filter(|&i| eligible(&items[i])).collect();
    order.sort_by_key(|&i| rank(&items[i]));
    order
}

/// What the cache needs to know about a key.
#[derive(Clone, Debug)]
pub struct KeyRef {
    pub id: u64,
    pub label: String,
    /// Bytes its copy takes in the budgeted memory.
    pub bytes: u64,
    /// Of `bytes`, those of tables made from its points on the device (a GPU key's H table,
    /// cuda/h_table.cuh).
    pub table_bytes: u64,
    /// Dead once the key itself is dropped: its copy is stale then.
    pub alive: Weak<()>,
    /// The class of the call asking for it.
    pub class: Priority,
}

pub enum Residency<V> {
    /// The copy, and whether this call made it.
    Resident { copy: Arc<V>, loaded: bool },
    /// The key is larger than the whole budget.
    TooLarge,
    /// The room it needs is held by copies of keys of higher classes, which it may not evict.
    Displaces,
}

/// One copy, as the engine status shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ResidentKey {
    pub label: String,
    /// Its device memory, its tables included.
    pub bytes: u64,
    /// Of `bytes`, the tables made from its points on the device (an H table of up to 2^22
    /// points, cuda/h_table.cuh: ⌊255/c⌋ more copies of the H query).
    pub table_bytes: u64,
    /// Calls that used this copy (the one that loaded it included).
    pub uses: u64,
    /// False while it is being loaded.
    pub loaded: bool,
    /// The highest class of the calls that used it (what may evict it).
    pub class: Priority,
}

struct Entry<V> {
    key: KeyRef,
    /// The highest class of the calls that used it.
    class: Priority,
    last_used: u64,
    uses: u64,
    slot: Arc<OnceCell<Arc<V>>>,
}

struct State<V> {
    entries: Vec<Entry<V>>,
    clock: u64,
}

pub struct ResidentCache<V> {
    budget: u64,
    state: Mutex<State<V>>,
}

impl<V> ResidentCache<V> {
    pub fn new(budget: u64) -> Self {
        ResidentCache {
            budget,
            state: Mutex::new(State {
                entries: Vec::new(),
                clock: 0,
            }),
        }
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<V>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The copy of `key` for a call that uses it, made with `load` if there is none. Copies
    /// evicted to make room are freed when their last user drops them.
    pub fn get(&self, key: &KeyRef, load: impl FnOnce() -> Result<V>) -> Result<Residency<V>> {
        self.get_counted(key, 1, load)
    }

    /// As `get`, for a call that makes the copy ahead of its use (its use counts then, not
    /// now).
    pub fn load_ahead(&self, key: &KeyRef, load: impl FnOnce() -> Result<V>) -> Result<Residency<V>> {
        self.get_counted(key, 0, load)
    }

    fn get_counted(&self, key: &KeyRef, uses: u64, load: impl FnOnce() -> Result<V>) -> Result<Residency<V>> {
        let slot = {
            let mut state = self.lock();
            state.entries.retain(|e| e.key.alive.strong_count() > 0);
            state.clock += 1;
            let now = state.clock;
            if let Some(entry) = state.entries.iter_mut().find(|e| e.key.id == key.id) {
                entry.last_used = now;
                entry.uses += uses;
                entry.class = entry.class.max(key.class);
                entry.slot.clone()
            } else {
                if key.bytes > self.budget {
                    return Ok(Residency::TooLarge);
                }
                // Of its class or lower, as few as make room in the budget.
                let used: u64 = state.entries.iter().map(|e| e.key.bytes).sum();
                let needed = (used + key.bytes).saturating_sub(self.budget);
                let (victims, freed) = Self::lowest_first(&state.entries, |e| e.class <= key.class, needed);
                if freed < needed {
                    return Ok(Residency::Displaces);
                }
                Self::evict(&mut state.entries, victims, &format!("{} ({:?} class)", key.label, key.class));
                let slot = Arc::new(OnceCell::new());
                state.entries.push(Entry {
                    key: key.clone(),
                    class: key.class,
                    last_used: now,
                    uses,
                    slot: slot.clone(),
                });
                slot
            }
        };
        let mut loaded = false;
        match slot.get_or_try_init(|| {
            loaded = true;
            load().map(Arc::new)
        }) {
            Ok(copy) => Ok(Residency::Resident { copy: copy.clone(), loaded }),
            Err(e) => {
                // A failed load leaves no entry behind: the next call tries again.
                self.lock().entries.retain(|entry| !Arc::ptr_eq(&entry.slot, &slot));
                Err(e)
            }
        }
    }

    /// The entries `eligible` takes, the lowest class first and within a class the least
    /// recently used, as few as hold `bytes` (all of them when they hold less), in ascending
    /// order; and the bytes they hold.
    fn lowest_first(entries: &[Entry<V>], eligible: impl Fn(&Entry<V>) -> bool, bytes: u64) -> (Vec<usize>, u64) {
        let candidates = eviction_order(entries, |e| (e.class, e.last_used), eligible);
        let mut freed = 0;
        let mut victims = Vec::new();
        for i in candidates {
            if freed >= bytes {
                break;
            }
            freed += entries[i].key.bytes;
            victims.push(i);
        }
        victims.sort_unstable();
        (victims, freed)
    }

    /// Removes the entries at `victims` (ascending indices), each logged as evicted for `what`.
    fn evict(entries: &mut Vec<Entry<V>>, victims: Vec<usize>, what: &str) {
        for victim in victims.into_iter().rev() {
            let evicted = entries.remove(victim);
            log::info!(
                "evicting {} ({} MiB, {:?} class) to make room for {what}",
                evicted.key.label,
                evicted.key.bytes >> 20,
                evicted.class
            );
        }
    }

    /// Evicts copies of keys of classes below `class` that no call is using, the lowest class
    /// first and within a class the least recently used, until `bytes` are freed or none is
    /// left; the bytes freed. For a call of `class` whose working memory does not fit beside
    /// the copies: a deadline-critical call never fails for the room sealing keys hold. A copy
    /// in use is kept: evicting it would free nothing until its user is done.
    pub fn evict_below(&self, class: Priority, bytes: u64) -> u64 {
        let mut state = self.lock();
        let idle = |e: &Entry<V>| e.slot.get().is_some_and(|copy| Arc::strong_count(copy) == 1);
        let (victims, freed) = Self::lowest_first(&state.entries, |e| e.class < class && idle(e), bytes);
        Self::evict(&mut state.entries, victims, &format!("the working memory of a {class:?} call"));
        freed
    }

    /// Whether a copy of key `id` is resident or being loaded.
    pub fn holds(&self, id: u64) -> bool {
        self.lock().entries.iter().any(|e| e.key.id == id)
    }

    /// Drops the copies whose label is `label` (a key file's path); how many there were.
    pub fn evict_label(&self, label: &str) -> usize {
        let mut state = self.lock();
        let before = state.entries.len();
        state.entries.retain(|e| e.key.label != label);
        before - state.entries.len()
    }

    /// Drops the copies whose label `keep` refuses; their bytes.
    pub fn evict_unless(&self, keep: impl Fn(&str) -> bool) -> u64 {
        let mut state = self.lock();
        let mut dropped = 0;
        state.entries.retain(|e| {
            let kept = keep(&e.key.label);
            if !kept && e.slot.get().is_some() {
                dropped += e.key.bytes;
            }
            kept
        });
        dropped
    }

    /// Drops every copy; how many there were.
    pub fn evict_all(&self) -> usize {
        let mut state = self.lock();
        let before = state.entries.len();
        state.entries.clear();
        before
    }

    /// The copies, most recently used first.
    pub fn entries(&self) -> Vec<ResidentKey> {
        let mut state = self.lock();
        state.entries.retain(|e| e.key.alive.strong_count() > 0);
        let mut entries: Vec<_> = state.entries.iter().collect();
        entries.sort_by_key(|e| std::cmp::Reverse(e.last_used));
        entries
            .into_iter()
            .map(|e| ResidentKey {
                label: e.key.label.clone(),
                bytes: e.key.bytes,
                table_bytes: e.key.table_bytes,
                uses: e.uses,
                loaded: e.slot.get().is_some(),
                class: e.class,
            })
            .collect()
    }

    /// Bytes of the budget taken.
    pub fn used_bytes(&self) -> u64 {
        self.lock().entries.iter().map(|e| e.key.bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn key(id: u64, bytes: u64, alive: &Arc<()>) -> KeyRef {
        class_key(id, bytes, alive, Priority::Sealing)
    }

    fn class_key(id: u64, bytes: u64, alive: &Arc<()>, class: Priority) -> KeyRef {
        KeyRef {
            id,
            label: format!("k{id}"),
            bytes,
            table_bytes: 0,
            alive: Arc::downgrade(alive),
            class,
        }
    }

    fn labels(cache: &ResidentCache<u64>) -> Vec<String> {
        cache.entries().into_iter().map(|e| e.label).collect()
    }

    fn loaded(r: Residency<u64>) -> bool {
        match r {
            Residency::Resident { loaded, .. } => loaded,
            Residency::TooLarge | Residency::Displaces => panic!("expected a resident copy"),
        }
    }

    #[test]
    fn keyed_by_identity_and_evicts_least_recently_used() {
        let alive = Arc::new(());
        let cache = ResidentCache::<u64>::new(100);
        assert!(loaded(cache.get(&key(1, 40, &alive), || Ok(1)).unwrap()));
        assert!(loaded(cache.get(&key(2, 40, &alive), || Ok(2)).unwrap()));
        assert!(
            !loaded(cache.get(&key(1, 40, &alive), || panic!("resident")).unwrap()),
            "same id: no second load"
        );
        // 3 needs 40 more: 2 is the least recently used.
        assert!(loaded(cache.get(&key(3, 40, &alive), || Ok(3)).unwrap()));
        assert_eq!(labels(&cache), ["k3", "k1"]);
        assert_eq!(cache.used_bytes(), 80);
        // A 90-byte key evicts both.
        assert!(loaded(cache.get(&key(4, 90, &alive), || Ok(4)).unwrap()));
        assert_eq!(labels(&cache), ["k4"]);
        assert!(matches!(
            cache.get(&key(5, 101, &alive), || panic!("never loaded")).unwrap(),
            Residency::TooLarge
        ));
        assert_eq!(labels(&cache), ["k4"], "a key too large for the budget evicts nothing");
        assert_eq!(cache.evict_label("k4"), 1);
        assert_eq!(cache.evict_label("k4"), 0);
        assert!(loaded(cache.get(&key(4, 90, &alive), || Ok(4)).unwrap()), "evicted keys load again");
    }

    #[test]
    fn evict_all_empties_the_budget_and_keys_load_again() {
        let alive = Arc::new(());
        let cache = ResidentCache::<u64>::new(100);
        assert!(loaded(cache.get(&key(1, 40, &alive), || Ok(1)).unwrap()));
        assert!(loaded(cache.get(&key(2, 40, &alive), || Ok(2)).unwrap()));
        assert_eq!(cache.evict_all(), 2);
        assert_eq!((cache.used_bytes(), cache.entries().len()), (0, 0));
        assert!(loaded(cache.get(&key(1, 40, &alive), || Ok(1)).unwrap()), "loaded again after a reset");
    }

    /// A PoSt key and a sealing key that do not fit together: the sealing call streams its key
    /// instead of evicting the PoSt key; a PoSt call evicts the sealing key; a key used once
    /// by a higher class keeps that class.
    #[test]
    fn lower_classes_never_evict_higher_ones() {
        use Priority::*;
        let alive = Arc::new(());
        let cache = ResidentCache::<u64>::new(100);
        assert!(loaded(cache.get(&class_key(1, 60, &alive, WindowPost), || Ok(1)).unwrap()));
        assert!(matches!(
            cache.get(&class_key(2, 60, &alive, Sealing), || panic!("never loaded")).unwrap(),
            Residency::Displaces
        ));
        assert_eq!(labels(&cache), ["k1"]);
        // A sealing key that fits beside it is resident.
        assert!(loaded(cache.get(&class_key(3, 40, &alive, Sealing), || Ok(3)).unwrap()));
        // A WinningPoSt key evicts the sealing one (lowest class) before the WindowPoSt one,
        // although the WindowPoSt key is the least recently used.
        assert!(loaded(cache.get(&class_key(4, 40, &alive, WinningPost), || Ok(4)).unwrap()));
        assert_eq!(labels(&cache), ["k4", "k1"]);
        // Another WindowPoSt key evicts the older WindowPoSt one, never the WinningPoSt one.
        assert!(loaded(cache.get(&class_key(5, 60, &alive, WindowPost), || Ok(5)).unwrap()));
        assert_eq!(labels(&cache), ["k5", "k4"]);
        // Used by a sealing call, a WinningPoSt key stays of the WinningPoSt class.
        cache.get(&class_key(4, 40, &alive, Sealing), || panic!("resident")).unwrap();
        assert!(matches!(
            cache.get(&class_key(6, 100, &alive, WindowPost), || panic!("never loaded")).unwrap(),
            Residency::Displaces
        ));
        assert_eq!(labels(&cache), ["k4", "k5"]);
    }

    /// A call's working memory evicts idle copies of lower classes only, lowest class and
    /// least recently used first, as few as free the bytes asked for.
    #[test]
    fn working_memory_evicts_idle_lower_classes() {
        use Priority::*;
        let alive = Arc::new(());
        let cache = ResidentCache::<u64>::new(1000);
        for (id, class) in [(1, Sealing), (2, Sealing), (3, WindowPost), (4, WinningPost)] {
            cache.get(&class_key(id, 100, &alive, class), || Ok(id)).unwrap();
        }
        // A sealing call has no lower class to take room from.
        assert_eq!(cache.evict_below(Sealing, 500), 0);
        // k2 is in use by a call: only k1 can go.
        let in_use = match cache.get(&class_key(2, 100, &alive, Sealing), || panic!("resident")).unwrap() {
            Residency::Resident { copy, .. } => copy,
            _ => panic!("resident"),
        };
        assert_eq!(cache.evict_below(WindowPost, 150), 100);
        assert_eq!(labels(&cache), ["k2", "k4", "k3"]);
        drop(in_use);
        // Asked for 50: the least recently used sealing copy goes, not the WindowPoSt one.
        cache.get(&class_key(5, 100, &alive, Sealing), || Ok(5)).unwrap();
        assert_eq!(cache.evict_below(WinningPost, 50), 100);
        assert_eq!(labels(&cache), ["k5", "k4", "k3"]);
        assert!(cache.holds(5) && !cache.holds(2));
        // The WinningPoSt call takes the sealing copy first, then the WindowPoSt one.
        assert_eq!(cache.evict_below(WinningPost, 150), 200);
        assert_eq!(labels(&cache), ["k4"]);
    }

    #[test]
    fn copies_of_dropped_keys_are_stale() {
        let alive = Arc::new(());
        let cache = ResidentCache::<u64>::new(100);
        cache.get(&key(1, 60, &alive), || Ok(1)).unwrap();
        drop(alive);
        let other = Arc::new(());
        assert!(cache.entries().is_empty());
        assert!(loaded(cache.get(&key(2, 60, &other), || Ok(2)).unwrap()));
    }

    #[test]
    fn concurrent_first_calls_load_once() {
        let alive = Arc::new(());
        let cache = ResidentCache::<u64>::new(100);
        let loads = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    cache
                        .get(&key(1, 10, &alive), || {
                            loads.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            Ok(7)
                        })
                        .unwrap()
                });
            }
        });
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert_eq!(cache.entries()[0].uses, 8);
    }

    #[test]
    fn a_copy_loaded_ahead_counts_its_call_once() {
        let alive = Arc::new(());
        let cache = ResidentCache::<u64>::new(100);
        assert!(loaded(cache.load_ahead(&key(1, 10, &alive), || Ok(7)).unwrap()));
        assert!(cache.holds(1));
        assert_eq!(cache.entries()[0].uses, 0, "loaded ahead: not used yet");
        assert!(!loaded(cache.get(&key(1, 10, &alive), || panic!("resident")).unwrap()));
        assert_eq!(cache.entries()[0].uses, 1, "the call that loaded it ahead, now using it");
        assert!(!loaded(cache.load_ahead(&key(1, 10, &alive), || panic!("resident")).unwrap()));
        assert_eq!(cache.entries()[0].uses, 1);
    }

    #[test]
    fn failed_load_leaves_nothing() {
        let alive = Arc::new(());
        let cache = ResidentCache::<u64>::new(100);
        assert!(cache.get(&key(1, 10, &alive), || Err(Error::internal("device full"))).is_err());
        assert!(cache.entries().is_empty());
        assert_eq!(cache.used_bytes(), 0);
        assert!(loaded(cache.get(&key(1, 10, &alive), || Ok(1)).unwrap()));
    }
}
