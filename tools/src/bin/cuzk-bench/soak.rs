//! `soak`: many PoRep C2 calls of a fixture through one engine, mixed with bad inputs,
//! cancellations and key evictions / preloads from another thread, while host RSS and device
//! memory are sampled (CUZK_SOAK_SECONDS bounds the run's length). Every proof is checked with filecoin-proofs-api's `verify_seal`. Prints
//! one JSON record; fails on any unexpected outcome (a wrong proof, a PANIC or other status a
//! call should not get) or when memory after the warm-up drifts by more than the allowance.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cuzk::cancel::CancelToken;
use cuzk::engine::{Engine, ProveOptions};
use cuzk::error::Status;
use cuzk_tools::fixtures::SealedSector;
use cuzk_tools::memory::{heap_in_use_bytes, rss_bytes};
use rand::Rng;
use serde::Serialize;

use crate::Bench;

/// At least this many calls, and a tenth of the run, pass before the memory baseline: the
/// allocator's arenas grow for a while under two callers and the key churn (run 53: RSS rose
/// for the first ~250 calls, then stayed level).
const WARM_UP_CALLS: usize = 8;
/// Memory may move this much from its post-warm-up value (issue 21's allowance).
const DRIFT_ALLOWANCE_BYTES: u64 = 64 << 20;
/// Calls proving at once.
const CALLERS: usize = 2;
/// Time between a key eviction and the next preload, and back.
/// Longer than the janitor's trim after a 2KiB C2 (at most 71 ms on the H200, run 57).
const JANITOR_SETTLE: Duration = Duration::from_millis(300);
const CHURN_PERIOD: Duration = Duration::from_secs(2);

/// What one call is.
#[derive(Clone, Copy, Debug)]
enum Call {
    Prove,
    /// A malformed C1 (see `bad_c1`): a PARSE_ERROR or INVALID_ARGUMENT, never a proof.
    Bad(usize),
    /// Cancelled after a random delay: CANCELLED, or a verifying proof when it finished first.
    Cancelled,
}

impl Call {
    fn of(index: usize) -> Call {
        match index % 10 {
            3 => Call::Bad(index / 10),
            7 => Call::Cancelled,
            _ => Call::Prove,
        }
    }
}

#[derive(Default)]
struct Counts {
    proofs: AtomicU64,
    rejected: AtomicU64,
    cancelled: AtomicU64,
    evictions: AtomicU64,
    preloads: AtomicU64,
    /// Anything a call should not have got; their descriptions in `Soak::unexpected`.
    unexpected: AtomicU64,
    completed: AtomicUsize,
}

#[derive(Clone, Copy, Default, Serialize)]
struct MemorySample {
    call: usize,
    rss_bytes: u64,
    /// Bytes of live heap allocations (jemalloc's and glibc's count): what a leak grows, where RSS also
    /// holds memory the allocator keeps for reuse.
    heap_in_use_bytes: u64,
    device_used_bytes: u64,
}

#[derive(Serialize)]
struct Record<'a> {
    workload: &'static str,
    calls: usize,
    wall_s: f64,
    proofs_verified: u64,
    bad_inputs_rejected: u64,
    cancelled: u64,
    key_evictions: u64,
    key_preloads: u64,
    unexpected: u64,
    unexpected_examples: &'a [String],
    after_warm_up: MemorySample,
    rss_drift_max_bytes: i64,
    device_drift_max_bytes: i64,
    rss_drift_end_bytes: i64,
    heap_in_use_drift_end_bytes: i64,
    device_drift_end_bytes: i64,
    samples: &'a [MemorySample],
}

struct Soak<'a> {
    engine: &'a Engine,
    sector: SealedSector,
    c1_json: Vec<u8>,
    bad: Vec<Vec<u8>>,
    counts: Counts,
    unexpected: Mutex<Vec<String>>,
    samples: Mutex<Vec<MemorySample>>,
    /// Held shared by every call, exclusively while memory is sampled: a sample sees no call
    /// in flight (each holds hundreds of MiB of vectors while it runs).
    quiet: RwLock<()>,
}

pub fn run(bench: &Bench) -> Result<()> {
    let args = &bench.args;
    let (c1_json, sector) = crate::c2::sealed_fixture(args)?;
    let engine = bench.engine()?;
    let calls = args.repeat.max(WARM_UP_CALLS + 1);
    let warm_up_calls = (calls / 10).max(WARM_UP_CALLS);
    // CUZK_SOAK_SECONDS: no call starts after this long (the record counts the calls made).
    let seconds = std::env::var("CUZK_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(u64::MAX);
    let soak = Soak {
        engine: &engine,
        bad: bad_c1s(&c1_json)?,
        c1_json,
        sector,
        counts: Counts::default(),
        unexpected: Mutex::new(Vec::new()),
        samples: Mutex::new(Vec::new()),
        quiet: RwLock::new(()),
    };
    let start = Instant::now();
    let deadline = start.checked_add(Duration::from_secs(seconds));
    let next = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let callers: Vec<_> = (0..CALLERS)
            .map(|_| {
                s.spawn(|| loop {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= calls {
                        break;
                    }
                    let _in_flight = soak.quiet.read().unwrap_or_else(|p| p.into_inner());
                    soak.call(index, Call::of(index));
                })
            })
            .collect();
        s.spawn(|| soak.churn_keys(&done));
        for caller in callers {
            caller.join().expect("a soak caller panicked");
        }
        done.store(true, Ordering::Release);
    });
    let calls = next.load(Ordering::Relaxed).min(calls);
    // The end in the state of every sample: key preloaded (by the churn's last step), then a
    // call, then no call in flight.
    soak.call(calls, Call::Prove);
    let end = soak.sample();
    let samples = soak.samples.into_inner().unwrap_or_else(|p| p.into_inner());
    let after_warm_up = *samples
        .iter()
        .find(|s| s.call >= warm_up_calls)
        .context("the run ended before its warm-up: give it more calls or seconds")?;
    let samples: Vec<_> = samples.into_iter().filter(|s| s.call >= warm_up_calls).collect();
    let drift = |f: fn(&MemorySample) -> u64, s: &MemorySample| f(s) as i64 - f(&after_warm_up) as i64;
    let max_drift = |f: fn(&MemorySample) -> u64| samples.iter().map(|s| drift(f, s)).max_by_key(|d| d.abs()).unwrap_or(0);
    let (rss, device) = (|s: &MemorySample| s.rss_bytes, |s: &MemorySample| s.device_used_bytes);
    let heap = |s: &MemorySample| s.heap_in_use_bytes;
    let unexpected = soak.unexpected.into_inner().unwrap_or_else(|p| p.into_inner());
    let counts = &soak.counts;
    let record = Record {
        workload: "soak",
        calls,
        wall_s: start.elapsed().as_secs_f64(),
        proofs_verified: counts.proofs.load(Ordering::Relaxed),
        bad_inputs_rejected: counts.rejected.load(Ordering::Relaxed),
        cancelled: counts.cancelled.load(Ordering::Relaxed),
        key_evictions: counts.evictions.load(Ordering::Relaxed),
        key_preloads: counts.preloads.load(Ordering::Relaxed),
        unexpected: counts.unexpected.load(Ordering::Relaxed),
        unexpected_examples: &unexpected[..unexpected.len().min(10)],
        after_warm_up,
        rss_drift_max_bytes: max_drift(rss),
        device_drift_max_bytes: max_drift(device),
        rss_drift_end_bytes: drift(rss, &end),
        heap_in_use_drift_end_bytes: drift(heap, &end),
        device_drift_end_bytes: drift(device, &end),
        samples: &samples,
    };
    println!("{}", serde_json::to_string(&record)?);
    if record.unexpected > 0 {
        bail!(
            "{} calls had an unexpected outcome, e.g. {:?}",
            record.unexpected,
            record.unexpected_examples
        );
    }
    for (what, d) in [("host RSS", record.rss_drift_end_bytes), ("device memory", record.device_drift_end_bytes)] {
        if d.unsigned_abs() > DRIFT_ALLOWANCE_BYTES {
            bail!("{what} moved by {} MiB from its post-warm-up value", d >> 20);
        }
    }
    Ok(())
}

impl Soak<'_> {
    fn call(&self, index: usize, call: Call) {
        let options = ProveOptions::default();
        let outcome = match call {
            Call::Prove => self.prove(&self.c1_json, &options),
            Call::Bad(k) => self.prove(&self.bad[k % self.bad.len()], &options),
            Call::Cancelled => {
                let cancel = CancelToken::new();
                let options = ProveOptions {
                    cancel: Some(cancel.clone()),
                    ..ProveOptions::default()
                };
                let delay = Duration::from_millis(rand::thread_rng().gen_range(0..250));
                std::thread::scope(|s| {
                    s.spawn(|| {
                        std::thread::sleep(delay);
                        cancel.cancel();
                    });
                    self.prove(&self.c1_json, &options)
                })
            }
        };
        let expected = match (call, &outcome) {
            (Call::Prove | Call::Cancelled, Ok(proof)) => self.verifies(proof),
            (Call::Cancelled, Err(e)) => e.status == Status::Cancelled,
            (Call::Bad(_), Err(e)) => matches!(e.status, Status::ParseError | Status::InvalidArgument),
            _ => false,
        };
        let counter = match (call, &outcome) {
            _ if !expected => &self.counts.unexpected,
            (_, Ok(_)) => &self.counts.proofs,
            (Call::Bad(_), _) => &self.counts.rejected,
            _ => &self.counts.cancelled,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.counts.completed.fetch_add(1, Ordering::Relaxed);
        if !expected {
            let what = match &outcome {
                Ok(_) => "a proof that does not verify".to_string(),
                Err(e) => format!("{:?}: {}", e.status, e.message.chars().take(300).collect::<String>()),
            };
            self.unexpected
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(format!("call {index} ({call:?}): {what}"));
        }
    }

    fn prove(&self, c1_json: &[u8], options: &ProveOptions) -> cuzk::error::Result<Vec<u8>> {
        let output = self
            .engine
            .seal_commit_phase2(c1_json, self.sector.sector_id, self.sector.prover_id, options)?;
        Ok(output.proof)
    }

    /// filecoin-proofs-api's own `verify_seal`.
    fn verifies(&self, proof: &[u8]) -> bool {
        self.sector.verify_with_filecoin_proofs(proof).unwrap_or(false)
    }

    /// Evicts the sector's key (host and devices) and preloads it again, in turn, until `done`,
    /// ending with a preload; both race with the calls. Memory is sampled after each preload,
    /// once the calls in flight have finished: always the same state (key and shape loaded, no
    /// call running).
    fn churn_keys(&self, done: &AtomicBool) {
        let proof = self.sector.registered_proof;
        let mut evict = true;
        while !done.load(Ordering::Acquire) || !evict {
            if !done.load(Ordering::Acquire) {
                std::thread::sleep(CHURN_PERIOD);
            }
            let ok = match evict {
                true => self.engine.evict_key(proof).map(drop),
                false => self.engine.preload_key(proof).map(drop),
            };
            match ok {
                Ok(()) if evict => self.counts.evictions.fetch_add(1, Ordering::Relaxed),
                Ok(()) => {
                    let _quiet = self.quiet.write().unwrap_or_else(|p| p.into_inner());
                    self.sample();
                    self.counts.preloads.fetch_add(1, Ordering::Relaxed)
                }
                Err(e) => {
                    self.unexpected
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(format!("evict/preload: {e}"));
                    self.counts.unexpected.fetch_add(1, Ordering::Relaxed)
                }
            };
            evict = !evict;
        }
    }

    /// Memory now, at the number of calls completed so far: after the engine's idle janitor
    /// has returned the free host memory of the calls that just ended (tens of ms, on its own
    /// thread), so that every sample is of the same state.
    fn sample(&self) -> MemorySample {
        std::thread::sleep(JANITOR_SETTLE);
        let call = self.counts.completed.load(Ordering::Relaxed);
        let device_used_bytes = self.engine.status().devices.iter().map(|d| d.memory_total - d.memory_free).sum();
        let sample = MemorySample {
            call,
            rss_bytes: rss_bytes(),
            heap_in_use_bytes: heap_in_use_bytes(),
            device_used_bytes,
        };
        self.samples.lock().unwrap_or_else(|p| p.into_inner()).push(sample);
        sample
    }
}

/// Malformed variants of a C1: truncated JSON, comm_r past the field modulus, a vanilla
/// proof's challenge removed, replica_id non-canonical.
fn bad_c1s(c1_json: &[u8]) -> Result<Vec<Vec<u8>>> {
    let c1: serde_json::Value = serde_json::from_slice(c1_json)?;
    let with = |edit: &dyn Fn(&mut serde_json::Value)| -> Result<Vec<u8>> {
        let mut bad = c1.clone();
        edit(&mut bad);
        Ok(serde_json::to_vec(&bad)?)
    };
    let ff = serde_json::Value::from(vec![255u8; 32]);
    Ok(vec![
        c1_json[..c1_json.len() / 2].to_vec(),
        with(&|c| c["comm_r"] = ff.clone())?,
        with(&|c| {
            if let Some(partitions) = c["vanilla_proofs"].as_object_mut().and_then(|m| m.values_mut().next()) {
                if let Some(first) = partitions.as_array_mut().and_then(|p| p.first_mut()).and_then(|p| p.as_array_mut()) {
                    first.pop();
                }
            }
        })?,
        with(&|c| c["replica_id"][31] = 255.into())?,
    ])
}
