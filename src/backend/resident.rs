//! Copies of proving keys kept in a budgeted memory (a device's): at most `budget` bytes, the
//! least recently used copy evicted first when a new one does not fit, each key copied once
//! however many calls ask for it at the same time, and copies of keys that no longer exist
//! dropped. A key larger than the whole budget is not copied: the caller streams it.

use std::sync::{Arc, Mutex, Weak};

use once_cell::sync::OnceCell;

use crate::error::Result;

/// What the cache needs to know about a key.
#[derive(Clone, Debug)]
pub struct KeyRef {
    pub id: u64,
    pub label: String,
    /// Bytes its copy takes in the budgeted memory.
    pub bytes: u64,
    /// Dead once the key itself is dropped: its copy is stale then.
    pub alive: Weak<()>,
}

pub enum Residency<V> {
    /// The copy, and whether this call made it.
    Resident { copy: Arc<V>, loaded: bool },
    /// The key is larger than the whole budget.
    TooLarge,
}

/// One copy, as the engine status shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ResidentKey {
    pub label: String,
    pub bytes: u64,
    /// Calls that used this copy (the one that loaded it included).
    pub uses: u64,
    /// False while it is being loaded.
    pub loaded: bool,
}

struct Entry<V> {
    key: KeyRef,
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

    /// The copy of `key`, made with `load` if there is none. Copies evicted to make room are
    /// freed when their last user drops them.
    pub fn get(&self, key: &KeyRef, load: impl FnOnce() -> Result<V>) -> Result<Residency<V>> {
        let slot = {
            let mut state = self.lock();
            state.entries.retain(|e| e.key.alive.strong_count() > 0);
            state.clock += 1;
            let now = state.clock;
            if let Some(entry) = state.entries.iter_mut().find(|e| e.key.id == key.id) {
                entry.last_used = now;
                entry.uses += 1;
                entry.slot.clone()
            } else {
                if key.bytes > self.budget {
                    return Ok(Residency::TooLarge);
                }
                while state.entries.iter().map(|e| e.key.bytes).sum::<u64>() + key.bytes > self.budget {
                    let oldest = (0..state.entries.len())
                        .min_by_key(|&i| state.entries[i].last_used)
                        .expect("over budget with no entries");
                    let evicted = state.entries.remove(oldest);
                    log::info!(
                        "evicting {} ({} MiB) to make room for {}",
                        evicted.key.label,
                        evicted.key.bytes >> 20,
                        key.label
                    );
                }
                let slot = Arc::new(OnceCell::new());
                state.entries.push(Entry {
                    key: key.clone(),
                    last_used: now,
                    uses: 1,
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

    /// Drops the copies whose label is `label` (a key file's path); how many there were.
    pub fn evict_label(&self, label: &str) -> usize {
        let mut state = self.lock();
        let before = state.entries.len();
        state.entries.retain(|e| e.key.label != label);
        before - state.entries.len()
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
                uses: e.uses,
                loaded: e.slot.get().is_some(),
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
        KeyRef {
            id,
            label: format!("k{id}"),
            bytes,
            alive: Arc::downgrade(alive),
        }
    }

    fn labels(cache: &ResidentCache<u64>) -> Vec<String> {
        cache.entries().into_iter().map(|e| e.label).collect()
    }

    fn loaded(r: Residency<u64>) -> bool {
        match r {
            Residency::Resident { loaded, .. } => loaded,
            Residency::TooLarge => panic!("expected a resident copy"),
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
    fn failed_load_leaves_nothing() {
        let alive = Arc::new(());
        let cache = ResidentCache::<u64>::new(100);
        assert!(cache.get(&key(1, 10, &alive), || Err(Error::internal("device full"))).is_err());
        assert!(cache.entries().is_empty());
        assert_eq!(cache.used_bytes(), 0);
        assert!(loaded(cache.get(&key(1, 10, &alive), || Ok(1)).unwrap()));
    }
}
