//! `keys`: the keys of every proof kind of `--sector-size` in use on one engine. A WinningPoSt,
//! a WindowPoSt partition, a PoRep sector and a SnapDeals update (made up; `--partitions P` of
//! the PoRep sector's and the update's partitions), proven in that order `--repeat` rounds,
//! each with a key of its circuit's exact sizes that repeats a pool of random points
//! (`KeySizes::repeating_key`): the four 32GiB keys (≈ 140 GB) are more than the device's key
//! budget and the host's memory, so the device's residency policy decides which stay.
//!
//! One record per call: its key's residency and upload time, and the device's resident keys
//! after it. Fails when a call fails, or (on a GPU) when a PoSt call finds its key not resident
//! or a PoSt key has left the device by the end: sealing keys may not displace them.
//! Performance only: proofs made with these keys cannot verify.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use cuzk::engine::{PostKind, ProveOptions};
use cuzk::internals::post::MadeUpPost;
use cuzk::internals::{porep, MadeUpSector, MadeUpUpdate, ProofRequest, ResidentKey, SectorInput};
use cuzk::timings::KeyResidency;
use cuzk::ProvingKey;
use serde::Serialize;

use crate::porep_sector::porep_key_sizes;
use crate::post::post_proofs;
use crate::record::{rounded, seconds, RunMemory, RunMemoryFields};
use crate::update::update_proof;
use crate::{made_up_key_sizes, Bench};

/// The proof kinds in the order a round proves them.
const KINDS: [&str; 4] = ["winning-post", "window-post", "porep", "update"];

#[derive(Serialize)]
struct KeyCall<'a> {
    kind: &'static str,
    round: usize,
    partitions: usize,
    /// resident, streamed or cpu.
    key_residency: &'static str,
    key_upload_s: f64,
    key_gib: f64,
    #[serde(flatten)]
    memory: RunMemoryFields,
    /// The device's resident keys after the call, most recently used first.
    resident_keys: &'a [ResidentKey],
    key_budget_gib: f64,
}

pub fn run(bench: &Bench) -> Result<()> {
    let args = &bench.args;
    let seal = args.sector_size.0;
    let short = args.sector_size.short();
    let (window, winning) = post_proofs(seal)?;
    let update = update_proof(seal)?;
    let engine = bench.engine()?;
    let sealing_partitions = args.partitions.unwrap_or(usize::MAX);
    let porep_partitions = sealing_partitions.min(usize::from(porep::porep_config(seal)?.partitions));

    let post = |kind, proof, seed, key| MadeUpPost {
        kind,
        proof,
        sectors: usize::MAX,
        seed,
        key,
    };
    let update_request = |seed, key| MadeUpUpdate {
        proof: update,
        partitions: sealing_partitions,
        seed,
        key,
    };
    let start = Instant::now();
    let repeating = |sizes: cuzk_tools::circuits::KeySizes, kind: &str| -> Result<Arc<ProvingKey>> {
        Ok(Arc::new(sizes.repeating_key(7, &format!("{kind}-{short}"))?))
    };
    let keys = [
        repeating(made_up_key_sizes(&engine, &post(PostKind::Winning, winning, 1, None))?.0, KINDS[0])?,
        repeating(made_up_key_sizes(&engine, &post(PostKind::Window, window, 1, None))?.0, KINDS[1])?,
        repeating(porep_key_sizes(&engine, seal)?, KINDS[2])?,
        repeating(made_up_key_sizes(&engine, &update_request(1, None))?.0, KINDS[3])?,
    ];
    eprintln!(
        "keys-{short}: four repeating keys of {:.1} GiB in all, shapes ready in {:.1} s (not timed)",
        keys.iter().map(|k| k.points_bytes()).sum::<u64>() as f64 / GIB,
        start.elapsed().as_secs_f64()
    );

    let on_gpu = !engine.status().devices.is_empty();
    let mut failures = Vec::new();
    for round in 0..args.repeat {
        for (k, kind) in KINDS.into_iter().enumerate() {
            let seed = round as u64 + 2;
            let key = Some(keys[k].clone());
            let request: Box<dyn ProofRequest> = match k {
                0 => Box::new(post(PostKind::Winning, winning, seed, key)),
                1 => Box::new(post(PostKind::Window, window, seed, key)),
                2 => Box::new(SectorInput::MadeUp(MadeUpSector {
                    proof: seal,
                    partitions: porep_partitions,
                    seed,
                    key: keys[k].clone(),
                })),
                _ => Box::new(update_request(seed, key)),
            };
            let mut memory = RunMemory::start();
            let start = Instant::now();
            let proven = engine.prove_requests(&[request.as_ref()], &ProveOptions::default())?.remove(0)?;
            let wall = start.elapsed().as_secs_f64();
            let t = &proven.timings;
            let residency = match t.key_residency {
                r if r == KeyResidency::Resident as u32 => "resident",
                r if r == KeyResidency::Streamed as u32 => "streamed",
                _ => "cpu",
            };
            let device = engine.status().devices.into_iter().next();
            let resident_keys = device.as_ref().map(|d| d.resident_keys.clone()).unwrap_or_default();
            let measured = KeyCall {
                kind,
                round,
                partitions: proven.partitions.len(),
                key_residency: residency,
                key_upload_s: seconds(t.srs_upload_ns, 3),
                key_gib: rounded(keys[k].points_bytes() as f64 / GIB, 2),
                memory: memory.fields(),
                resident_keys: &resident_keys,
                key_budget_gib: device.map_or(0.0, |d| rounded(d.key_budget as f64 / GIB, 2)),
            };
            bench.report(&format!("keys-{short} {kind}"), round, wall, &measured, Some(&engine));
            // The PoSt keys come first into an empty budget, and sealing calls may not evict them.
            if on_gpu && k < 2 && residency != "resident" {
                failures.push(format!("round {round}: the {kind} key was {residency}"));
            }
        }
    }
    if on_gpu {
        let resident = engine.status().devices.remove(0).resident_keys;
        for (key, kind) in keys.iter().zip(KINDS).take(2) {
            if !resident.iter().any(|r| r.label == key.label()) {
                failures.push(format!("the {kind} key left the device"));
            }
        }
    }
    if !failures.is_empty() {
        bail!("the PoSt keys did not stay resident: {}", failures.join("; "));
    }
    Ok(())
}

const GIB: f64 = (1u64 << 30) as f64;
