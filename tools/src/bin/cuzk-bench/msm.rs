//! `msm`: cuzk's MSM (cuda/msm.cuh) against sppark's, per size and digit width, in G1 and G2,
//! their inputs already on the device: the per-size table of docs/PERFORMANCE.md. Under
//! CUZK_MSM=cuzk-affine, in G1 also cuzk's with batched-affine rounds (cuda/affine_rounds.cuh)
//! at each size and width. In G1 up to 2^22 points also cuzk's over an H table of the points
//! (cuda/h_table.cuh: a resident key's H query with a copy for each window), as H's MSM runs
//! with a resident key (`cuzk[h-table]`). Every sum of ours is held to sppark's; a mismatch
//! fails the run.

use anyhow::{bail, Context, Result};
use blstrs::{G1Projective, G2Projective, Scalar};
use cuzk::engine::MsmChoice;
use cuzk::internals::{GpuBackend, GpuConfig};
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use serde::Serialize;

use crate::args::{Args, MsmCurve};
use crate::{record, Bench};

/// Distinct points made per curve; larger sizes repeat them (an MSM's work does not depend on
/// whether its points repeat, and making 2^27 random points would take minutes).
const DISTINCT_POINTS: usize = 1 << 20;
/// Points (and scalars) made per task: each task's own generator, seeded from the run's seed.
const CHUNK: usize = 1 << 14;

/// What one MSM measured.
#[derive(Serialize)]
struct MsmRecord {
    points: usize,
    /// cuzk's digit width (0: sppark's MSM, which picks its own windows).
    digit_bits: u32,
    msm_s: f64,
}

pub fn run(bench: &Bench) -> Result<()> {
    let args = &bench.args;
    if args.log_points.is_empty() {
        bail!("--log-points is required (e.g. 16,20,22,24,27)");
    }
    let gpu = GpuBackend::new(&GpuConfig::default()).context("the msm workload needs a CUDA device")?;
    let seed: u64 = rand::random();
    eprintln!("msm: seed {seed}");
    let largest = 1usize << args.log_points.iter().max().expect("sizes");
    let scalars = random_scalars(largest, seed);
    for curve in &args.curves {
        match curve {
            MsmCurve::G1 => {
                let points = tiled_points::<G1Projective>(largest, seed);
                let choices: &[MsmChoice] = match bench.config.gpu_msm {
                    MsmChoice::CuzkAffine => &[MsmChoice::Cuzk, MsmChoice::CuzkAffine],
                    _ => &[MsmChoice::Cuzk],
                };
                let over_table = |p: &[_], s: &[Scalar]| gpu.msm_g1_over_h_table(p, s, true);
                compare(args, "g1", &points, &scalars, choices, Some(&over_table), |p, s, choice, bits| {
                    gpu.msm_g1(p, s, choice, bits, true)
                })?;
            }
            MsmCurve::G2 => {
                let points = tiled_points::<G2Projective>(largest, seed);
                compare(args, "g2", &points, &scalars, &[MsmChoice::Cuzk], None, |p, s, choice, bits| {
                    gpu.msm_g2(p, s, choice, bits, true)
                })?;
            }
        }
    }
    Ok(())
}

/// A sum and its MSM's own time (ns).
type Measured<S> = cuzk::error::Result<(S, u64)>;
/// An MSM over an H table of the points given (`GpuBackend::msm_g1_over_h_table`).
type OverTable<'a, P, S> = &'a dyn Fn(&[P], &[Scalar]) -> Measured<S>;

/// For each size and run: sppark's MSM, then each of `choices` of ours at the width it picks
/// and at each `--digit-bits`, then ours over an H table (`over_table`) up to its 2^22 points,
/// each held to sppark's sum.
fn compare<P, S: PartialEq + std::fmt::Debug>(
    args: &Args,
    curve: &str,
    points: &[P],
    scalars: &[Scalar],
    choices: &[MsmChoice],
    over_table: Option<OverTable<'_, P, S>>,
    msm: impl Fn(&[P], &[Scalar], MsmChoice, u32) -> Measured<S>,
) -> Result<()> {
    for &lg in &args.log_points {
        let n = 1usize << lg;
        let (points, scalars) = (&points[..n], &scalars[..n]);
        let label = format!("msm-{curve} 2^{lg}");
        for run in 0..args.repeat {
            let (expected, ns) = msm(points, scalars, MsmChoice::Sppark, 0)?;
            report("sppark", &label, run, n, 0, ns);
            for &choice in choices {
                let name = if choice == MsmChoice::CuzkAffine { "cuzk-affine" } else { "cuzk" };
                for bits in std::iter::once(0).chain(args.digit_bits.iter().copied()) {
                    let (sum, ns) = msm(points, scalars, choice, bits)?;
                    if sum != expected {
                        bail!("{label}: {name}'s MSM ({bits}-bit digits; 0: its choice) differs from sppark's");
                    }
                    let system = if bits == 0 { name.to_string() } else { format!("{name}[c={bits}]") };
                    report(&system, &label, run, n, bits, ns);
                }
            }
            if let Some(over_table) = over_table.filter(|_| lg <= 22) {
                let (sum, ns) = over_table(points, scalars)?;
                if sum != expected {
                    bail!("{label}: cuzk's MSM over an H table differs from sppark's");
                }
                report("cuzk[h-table]", &label, run, n, 0, ns);
            }
        }
    }
    Ok(())
}

fn report(system: &str, label: &str, run: usize, points: usize, digit_bits: u32, ns: u64) {
    let measured = MsmRecord {
        points,
        digit_bits,
        msm_s: record::seconds(ns, 6),
    };
    record::report(system, label, run, ns as f64 / 1e9, &measured, None);
}

/// n scalars, uniformly random.
fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut scalars = vec![Scalar::ZERO; n];
    scalars.par_chunks_mut(CHUNK).enumerate().for_each(|(i, chunk)| {
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        chunk.iter_mut().for_each(|s| *s = Scalar::random(&mut rng));
    });
    scalars
}

/// n affine points: DISTINCT_POINTS of them (per chunk a random point plus 1, 2, … times the
/// generator), repeated.
fn tiled_points<G: Curve + Group>(n: usize, seed: u64) -> Vec<G::AffineRepr>
where
    G::AffineRepr: Default + Copy + Send + Sync,
{
    let distinct = n.min(DISTINCT_POINTS);
    let mut affine = vec![G::AffineRepr::default(); distinct];
    affine.par_chunks_mut(CHUNK).enumerate().for_each(|(i, chunk)| {
        let mut rng = ChaCha20Rng::seed_from_u64(!seed ^ i as u64);
        let mut point = G::random(&mut rng);
        let projective: Vec<G> = (0..chunk.len())
            .map(|_| {
                point += G::generator();
                point
            })
            .collect();
        G::batch_normalize(&projective, chunk);
    });
    affine.iter().copied().cycle().take(n).collect()
}
