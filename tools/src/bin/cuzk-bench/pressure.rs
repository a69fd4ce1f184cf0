//! `pressure`: PoRep C2 calls of a fixture while another process holds the device's memory
//! (`--hog`, tools/cuda/gpu_hog.cu), in three phases:
//! - before: calls on a free device, the key resident (the speed to come back to);
//! - under pressure, once per level of `LEAVE_MIB` (the memory the other process leaves
//!   free): the key evicted first, so the calls must upload it again; each call gives a proof
//!   that filecoin-proofs verifies (key resident or streamed) or a clean OUT_OF_MEMORY, and the
//!   device stays healthy (an allocation failure is not a fault);
//! - after the other process has exited: every call on the GPU with the key resident again,
//!   the median call within `SLOWDOWN_ALLOWANCE` of before's.
//!
//! Prints one JSON record; fails on anything else.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use cuzk::engine::{Engine, ProveOptions};
use cuzk::error::Status;
use cuzk::internals::DeviceStatus;
use cuzk::timings::{BackendKind, KeyResidency};
use cuzk_tools::fixtures::SealedSector;
use serde::Serialize;

use crate::Bench;

/// MiB the other process leaves free: none at all, then about a call's worth.
const LEAVE_MIB: [u64; 2] = [0, 1024];
/// The median call after the pressure may be this much slower than before (noise).
const SLOWDOWN_ALLOWANCE: f64 = 1.25;

#[derive(Default, Serialize)]
struct Phase {
    name: String,
    /// What the other process held and left free (MiB), as it reported.
    hog_held_mib: Option<u64>,
    hog_left_free_mib: Option<u64>,
    calls: usize,
    proofs_verified: usize,
    out_of_memory: usize,
    /// What the first OUT_OF_MEMORY said (which allocation failed).
    first_out_of_memory: Option<String>,
    key_resident: usize,
    key_streamed: usize,
    on_cpu: usize,
    median_call_ms: f64,
    /// The device's health and fault count after the phase.
    device_health: String,
    device_faults: u64,
    unexpected: Vec<String>,
}

#[derive(Serialize)]
struct Record<'a> {
    workload: &'static str,
    phases: &'a [Phase],
    after_vs_before: f64,
}

pub fn run(bench: &Bench) -> Result<()> {
    let args = &bench.args;
    let hog = args.hog.as_deref().context("--hog is required")?;
    let (c1_json, sector) = crate::c2::sealed_fixture(args)?;
    let engine = bench.engine()?;
    if engine.status().devices.is_empty() {
        bail!("pressure needs a GPU: the engine has none");
    }
    let calls = args.repeat.max(3);
    let prove = |name: &str| phase(&engine, &c1_json, &sector, name, calls);
    let mut phases = vec![prove("before")];
    for leave_mib in LEAVE_MIB {
        engine.evict_key(sector.registered_proof)?;
        let held = Held::take(hog, leave_mib)?;
        let mut under = prove(&format!("under pressure, {leave_mib} MiB left"));
        (under.hog_held_mib, under.hog_left_free_mib) = (Some(held.held_mib), Some(held.free_mib));
        held.release()?;
        phases.push(under);
    }
    phases.push(prove("after"));
    let (before, after) = (&phases[0], &phases[phases.len() - 1]);
    let record = Record {
        workload: "pressure",
        after_vs_before: after.median_call_ms / before.median_call_ms,
        phases: &phases,
    };
    println!("{}", serde_json::to_string(&record)?);
    for phase in &phases {
        if !phase.unexpected.is_empty() || phase.device_health != "Healthy" {
            bail!("{}: device {}, unexpected: {:?}", phase.name, phase.device_health, phase.unexpected);
        }
    }
    for phase in [before, after] {
        if phase.key_resident != phase.calls {
            bail!(
                "{}: {} of {} calls had the key resident on the GPU",
                phase.name,
                phase.key_resident,
                phase.calls
            );
        }
    }
    if record.after_vs_before > SLOWDOWN_ALLOWANCE {
        bail!("after the pressure the median call is {:.2}x before's", record.after_vs_before);
    }
    Ok(())
}

/// `calls` calls, each checked: a proof filecoin-proofs verifies, or OUT_OF_MEMORY.
fn phase(engine: &Engine, c1_json: &[u8], sector: &SealedSector, name: &str, calls: usize) -> Phase {
    let mut phase = Phase {
        name: name.to_string(),
        calls,
        ..Phase::default()
    };
    let mut times = Vec::new();
    for call in 0..calls {
        match engine.seal_commit_phase2(c1_json, sector.sector_id, sector.prover_id, &ProveOptions::default()) {
            Ok(output) => {
                let t = &output.timings;
                times.push(t.total_ns as f64 / 1e6);
                phase.on_cpu += usize::from(t.backend != BackendKind::Gpu as u32);
                phase.key_resident += usize::from(t.key_residency == KeyResidency::Resident as u32);
                phase.key_streamed += usize::from(t.key_residency == KeyResidency::Streamed as u32);
                if sector.verify_with_filecoin_proofs(&output.proof).unwrap_or(false) {
                    phase.proofs_verified += 1;
                } else {
                    phase.unexpected.push(format!("call {call}: a proof that does not verify"));
                }
            }
            Err(e) if e.status == Status::OutOfMemory => {
                phase.out_of_memory += 1;
                phase.first_out_of_memory.get_or_insert(e.message);
            }
            Err(e) => phase.unexpected.push(format!("call {call}: {:?}: {}", e.status, e.message)),
        }
    }
    times.sort_by(f64::total_cmp);
    phase.median_call_ms = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
    let status = engine.status();
    let device: Option<&DeviceStatus> = status.devices.first();
    phase.device_health = device.map_or("none".into(), |d| format!("{:?}", d.health));
    phase.device_faults = device.map_or(0, |d| d.faults);
    phase
}

/// The other process, holding the memory until released.
struct Held {
    child: std::process::Child,
    held_mib: u64,
    free_mib: u64,
}

impl Held {
    /// Starts `hog` leaving `leave_mib` free and waits until it holds the rest.
    fn take(hog: &Path, leave_mib: u64) -> Result<Held> {
        let mut child = Command::new(hog)
            .arg(leave_mib.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", hog.display()))?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().context("hog's stdout")?).read_line(&mut line)?;
        let numbers: Vec<u64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        let [held_mib, free_mib] = numbers[..] else {
            let _ = child.kill();
            bail!("{} said {line:?}, not \"held <MiB> free <MiB>\"", hog.display());
        };
        eprintln!("pressure: another process holds {held_mib} MiB, {free_mib} MiB left free");
        Ok(Held { child, held_mib, free_mib })
    }

    /// Closes its stdin, so it frees the memory and exits.
    fn release(mut self) -> Result<()> {
        drop(self.child.stdin.take());
        let status = self.child.wait()?;
        if !status.success() {
            bail!("the memory-holding process ended with {status}");
        }
        Ok(())
    }
}
