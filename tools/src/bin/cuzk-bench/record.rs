//! What a run reports: a table row on stderr and a JSON record on stdout, whose fields
//! scripts/bench-table.py and scripts/device-samples.py read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use blstrs::Scalar;
use cuzk::engine::Engine;
use cuzk::internals::{Density, SynthesizedCircuit};
use cuzk::timings::{BackendKind, KeyResidency, Timings};
use ff::Field;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// `x` rounded to `decimals` decimals as `format!` rounds it: the precision the records carry.
pub fn rounded(x: f64, decimals: usize) -> f64 {
    format!("{x:.decimals$}").parse().unwrap_or(x)
}

/// Nanoseconds in seconds, to `decimals` decimals.
pub fn seconds(ns: u64, decimals: usize) -> f64 {
    rounded(ns as f64 / 1e9, decimals)
}

/// Mebibytes to the nearest one.
fn whole_mib(mib: f64) -> u64 {
    rounded(mib, 0) as u64
}

/// One run's record: where and when it was measured, then what the workload measured
/// (`measured`'s fields, flattened into the record).
#[derive(Serialize)]
struct Record<'a, M: Serialize> {
    workload: &'a str,
    system: &'a str,
    run: usize,
    threads: usize,
    wall_s: f64,
    peak_rss_mib: u64,
    #[serde(flatten)]
    window: Window,
    #[serde(flatten)]
    machine: Machine,
    #[serde(flatten)]
    measured: &'a M,
}

/// Prints run `run` of `label` by `system`: a table row on stderr, the record on stdout.
/// `engine`: the engine that proved, whose devices the record describes.
pub fn report(system: &str, label: &str, run: usize, wall: f64, measured: &impl Serialize, engine: Option<&Engine>) {
    let rss = peak_rss_mib();
    let threads = rayon::current_num_threads();
    eprintln!("{system:<11} {label} run {run}: wall {wall:8.3} s  peak RSS {rss:8.0} MiB  ({threads} threads)");
    let record = Record {
        workload: label,
        system,
        run,
        threads,
        wall_s: rounded(wall, 3),
        peak_rss_mib: whole_mib(rss),
        window: Window::now(),
        machine: Machine::of(engine),
        measured,
    };
    println!("{}", serde_json::to_string(&record).expect("a record serializes"));
}

fn peak_rss_mib() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a rusage into the pointer.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    usage.ru_maxrss as f64 / 1024.0
}

/// When this process started, for the peak device memory of its records (see `Window`).
static STARTED_UNIX_MS: OnceLock<u64> = OnceLock::new();

/// Notes when the process started; called first thing.
pub fn note_start() {
    STARTED_UNIX_MS.get_or_init(unix_ms);
}

/// Seconds since the process started (`note_start`).
pub fn since_start_s() -> f64 {
    unix_ms().saturating_sub(STARTED_UNIX_MS.get().copied().unwrap_or(0)) as f64 / 1e3
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The process's lifetime so far: scripts/gpu-run.sh samples the device's memory in use
/// (nvidia-smi) and gives each record the peak over this window, as peak RSS is for the host.
#[derive(Serialize)]
struct Window {
    started_unix_ms: u64,
    reported_unix_ms: u64,
}

impl Window {
    fn now() -> Self {
        Window {
            started_unix_ms: STARTED_UNIX_MS.get().copied().unwrap_or(0),
            reported_unix_ms: unix_ms(),
        }
    }
}

/// Where a record was measured: the commit (CUZK_BENCH_COMMIT, which scripts/gpu-run.sh sets
/// from carry/COMMIT), the host, the CUDA driver (CUZK_BENCH_CUDA, from nvidia-smi), and for
/// cuzk's GPU systems the devices (`Devices`). Fields in alphabetical order, as the records
/// have always had them.
#[derive(Serialize)]
struct Machine {
    commit: String,
    cores: usize,
    cuda: Option<String>,
    #[serde(flatten)]
    devices: Option<Devices>,
    host: String,
    host_memory_gib: u64,
}

/// The device and the device memory in use after the run, in all and by cuzk (keys, NTT
/// buffers), from the engine status: of the first device, with the number of devices the
/// engine uses; and the pinned host staging memory of all of them (anonymous host memory that
/// is neither allocator's).
#[derive(Serialize)]
struct Devices {
    device_memory_cuzk_mib: u64,
    device_memory_in_use_mib: u64,
    gpu: String,
    gpu_memory_mib: u64,
    gpus: usize,
    pinned_host_mib: u64,
}

impl Machine {
    fn of(engine: Option<&Engine>) -> Self {
        let host_memory_gib = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:").map(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok()))
            })
            .flatten()
            .map_or(0, |kib| kib >> 20);
        let devices = engine.map(|e| e.status().devices).unwrap_or_default();
        Machine {
            commit: std::env::var("CUZK_BENCH_COMMIT").unwrap_or_else(|_| "unknown".into()),
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cuda: std::env::var("CUZK_BENCH_CUDA").ok(),
            devices: devices.first().map(|device| Devices {
                device_memory_cuzk_mib: device.memory_used_by_cuzk >> 20,
                device_memory_in_use_mib: (device.memory_total - device.memory_free) >> 20,
                gpu: device.name.clone(),
                gpu_memory_mib: device.memory_total >> 20,
                gpus: devices.len(),
                pinned_host_mib: devices.iter().map(|d| d.pinned_pool.allocated_bytes).sum::<u64>() >> 20,
            }),
            host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default(),
            host_memory_gib,
        }
    }
}

/// The fields of a cuzk run's timings: backend, key residency, synthesis path, domain, and
/// every phase in seconds (`<phase>_s`).
pub struct TimingFields<'a>(pub &'a Timings);

impl Serialize for TimingFields<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let phases = t.phases();
        let mut map = serializer.serialize_map(Some(8 + phases.len()))?;
        map.serialize_entry("backend", if t.backend == BackendKind::Gpu as u32 { "gpu" } else { "cpu" })?;
        let key = match t.key_residency {
            k if k == KeyResidency::Resident as u32 => "resident",
            k if k == KeyResidency::Streamed as u32 => "streamed",
            _ => "none",
        };
        map.serialize_entry("key", key)?;
        map.serialize_entry("synthesis_path", if t.r1cs_synthesis == 1 { "r1cs" } else { "classic" })?;
        map.serialize_entry("log_domain", &t.domain_log2)?;
        map.serialize_entry("witness_s", &seconds(t.witness_ns, 4))?;
        map.serialize_entry("spmv_s", &seconds(t.spmv_ns, 4))?;
        map.serialize_entry("spmv_on", if t.spmv_on_device == 1 { "device" } else { "host" })?;
        for (name, ns) in phases {
            map.serialize_entry(&format!("{name}_s"), &seconds(ns, 4))?;
        }
        map.serialize_entry("msm_at_once_s", &seconds(t.msm_at_once_ns, 4))?;
        map.end()
    }
}

/// How the aux scalars of each MSM split into zeros (skipped), ones (batch addition) and
/// full-width values (tail MSMs), each as `[zeros, ones, full]`; scripts/bench-table.py
/// computes each phase's arithmetic floor from them.
#[derive(Clone, Serialize)]
pub struct Scalars {
    l: [u64; 3],
    a: [u64; 3],
    b: [u64; 3],
}

impl Scalars {
    pub fn of(synthesized: &SynthesizedCircuit) -> Self {
        let count = |density: Option<&Density>| {
            let (mut zeros, mut ones, mut full) = (0u64, 0u64, 0u64);
            for (i, value) in synthesized.aux_assignment.iter().enumerate() {
                if density.is_some_and(|d| !d.get(i)) {
                    continue;
                }
                match value {
                    v if bool::from(v.is_zero()) => zeros += 1,
                    v if *v == Scalar::ONE => ones += 1,
                    _ => full += 1,
                }
            }
            [zeros, ones, full]
        };
        Scalars {
            l: count(None),
            a: count(Some(&synthesized.a_aux_density)),
            b: count(Some(&synthesized.b_aux_density)),
        }
    }
}

/// Host memory of one run apart from what the process held before it (keys, shapes): Linux
/// resets the peak (VmHWM) on `clear_refs` 5, so the peak read at the end is the run's own.
/// The kernel keeps no peak of anonymous memory (the heap: what a host budget bounds) apart
/// from file-backed pages (a parameter file's page cache the process maps): a thread samples
/// both every `SAMPLE_PERIOD`, with the allocators' statistics beside them, so that the
/// anonymous peak splits into live allocations, freed pages the allocators keep, and the rest.
pub struct RunMemory {
    baseline_mib: Option<f64>,
    baseline_anon_mib: Option<f64>,
    sampler: Option<(Arc<AtomicBool>, std::thread::JoinHandle<Sampled>)>,
}

const SAMPLE_PERIOD: std::time::Duration = std::time::Duration::from_millis(20);

/// Every this many samples one goes into the run's memory timeline (2 a second).
const TIMELINE_EVERY: usize = 25;

/// One sample, in MiB.
#[derive(Clone, Copy, Default)]
struct MemorySample {
    anon: f64,
    file: f64,
    live_heap: f64,
    kept_free: f64,
}

impl MemorySample {
    fn now() -> Self {
        let heap = cuzk::internals::heap_stats();
        MemorySample {
            anon: proc_status_mib("RssAnon").unwrap_or(0.0),
            file: proc_status_mib("RssFile").unwrap_or(0.0),
            live_heap: heap.live_bytes as f64 / MIB,
            kept_free: heap.kept_free_bytes as f64 / MIB,
        }
    }
}

const MIB: f64 = (1 << 20) as f64;

/// What the sampling thread saw: each field's peak, the sample at the anonymous peak, and the
/// timeline.
#[derive(Default)]
struct Sampled {
    peaks: MemorySample,
    at_anon_peak: MemorySample,
    timeline: Vec<[f64; 5]>,
}

/// A run's host memory: resident at its start and the peak since; the sampled peaks of
/// anonymous and file-backed resident memory, of the live heap (the allocators' allocated
/// bytes) and of the freed memory they keep (`cuzk::internals::HeapStats`); both when
/// anonymous memory peaked (anonymous memory above their sum is fragmentation, or neither
/// allocator's: pinned buffers, the CUDA driver's); and the timeline, every 0.5 s: [s since
/// the run's start, anonymous, live heap, kept free, file-backed] MiB. Null where the kernel
/// does not say.
#[derive(Serialize)]
pub struct RunMemoryFields {
    run_baseline_rss_mib: Option<u64>,
    run_peak_rss_mib: Option<u64>,
    run_baseline_anon_mib: Option<u64>,
    run_peak_anon_mib: Option<u64>,
    run_peak_file_mib: Option<u64>,
    run_peak_live_heap_mib: Option<u64>,
    run_peak_kept_free_mib: Option<u64>,
    run_anon_peak_live_heap_mib: Option<u64>,
    run_anon_peak_kept_free_mib: Option<u64>,
    run_memory_timeline: Option<Vec<[f64; 5]>>,
}

impl RunMemory {
    pub fn start() -> Self {
        let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        let sampler = proc_status_mib("RssAnon").is_some().then(|| {
            let stop = Arc::new(AtomicBool::new(false));
            let stopped = Arc::clone(&stop);
            let start = std::time::Instant::now();
            let thread = std::thread::spawn(move || {
                let mut sampled = Sampled::default();
                for n in 0.. {
                    let sample = MemorySample::now();
                    let peaks = &mut sampled.peaks;
                    if sample.anon > peaks.anon {
                        sampled.at_anon_peak = sample;
                    }
                    peaks.anon = peaks.anon.max(sample.anon);
                    peaks.file = peaks.file.max(sample.file);
                    peaks.live_heap = peaks.live_heap.max(sample.live_heap);
                    peaks.kept_free = peaks.kept_free.max(sample.kept_free);
                    if n % TIMELINE_EVERY == 0 {
                        let t = rounded(start.elapsed().as_secs_f64(), 2);
                        let mib = [sample.anon, sample.live_heap, sample.kept_free, sample.file].map(|x| rounded(x, 0));
                        sampled.timeline.push([t, mib[0], mib[1], mib[2], mib[3]]);
                    }
                    if stopped.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(SAMPLE_PERIOD);
                }
                sampled
            });
            (stop, thread)
        });
        RunMemory {
            baseline_mib: if reset { proc_status_mib("VmRSS") } else { None },
            baseline_anon_mib: proc_status_mib("RssAnon"),
            sampler,
        }
    }

    /// The run's fields; ends the sampling.
    pub fn fields(&mut self) -> RunMemoryFields {
        let peak = self.baseline_mib.and(proc_status_mib("VmHWM"));
        let sampled = self.sampler.take().and_then(|(stop, thread)| {
            stop.store(true, Ordering::Relaxed);
            thread.join().ok()
        });
        let mib = |f: fn(&Sampled) -> f64| sampled.as_ref().map(|s| whole_mib(f(s)));
        RunMemoryFields {
            run_baseline_rss_mib: self.baseline_mib.map(whole_mib),
            run_peak_rss_mib: peak.map(whole_mib),
            run_baseline_anon_mib: self.baseline_anon_mib.map(whole_mib),
            run_peak_anon_mib: mib(|s| s.peaks.anon),
            run_peak_file_mib: mib(|s| s.peaks.file),
            run_peak_live_heap_mib: mib(|s| s.peaks.live_heap),
            run_peak_kept_free_mib: mib(|s| s.peaks.kept_free),
            run_anon_peak_live_heap_mib: mib(|s| s.at_anon_peak.live_heap),
            run_anon_peak_kept_free_mib: mib(|s| s.at_anon_peak.kept_free),
            run_memory_timeline: sampled.map(|s| s.timeline),
        }
    }
}

/// A `kB` line of /proc/self/status in MiB.
fn proc_status_mib(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?;
    let kib: f64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib / 1024.0)
}
