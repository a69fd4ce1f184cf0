//! This process's memory as the soak and the memory-estimate test measure it: the resident set
//! and the allocators' live heap, and the live heap's peak over a stretch of work.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// This process's resident set, from /proc (0 where there is none).
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib << 10)
}

/// Bytes of live allocations, jemalloc's and glibc's (`cuzk::internals::live_heap_bytes`).
pub fn heap_in_use_bytes() -> u64 {
    cuzk::internals::live_heap_bytes()
}

/// The live heap's high-water mark from `start` to `stop`, sampled by a thread of its own
/// every `PEAK_SAMPLE_PERIOD` (a buffer that lives shorter than that can be missed).
pub struct HeapPeak {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    sampler: JoinHandle<()>,
}

const PEAK_SAMPLE_PERIOD: Duration = Duration::from_micros(200);

impl HeapPeak {
    pub fn start() -> Self {
        let (peak, stop) = (Arc::new(AtomicU64::new(heap_in_use_bytes())), Arc::new(AtomicBool::new(false)));
        let sampler = {
            let (peak, stop) = (Arc::clone(&peak), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(heap_in_use_bytes(), Ordering::Relaxed);
                    std::thread::sleep(PEAK_SAMPLE_PERIOD);
                }
            })
        };
        HeapPeak { peak, stop, sampler }
    }

    /// The highest live heap seen.
    pub fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.sampler.join().expect("the heap sampler does not panic");
        self.peak.load(Ordering::Relaxed).max(heap_in_use_bytes())
    }
}
