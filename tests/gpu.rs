//! GPU test target. Compiled with the `cuda` feature; ignored (and reported as ignored) unless
//! built with CUZK_GPU_TESTS=1, and then it fails when no CUDA device is usable — it never
//! passes vacuously. Run on the H200 by scripts/gpu-run.sh.
#![cfg(feature = "cuda")]

mod common;

use std::sync::Arc;
use std::time::Instant;

use bellperson::groth16::{create_proof_batch, prepare_verifying_key, verify_proof};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use common::fixture;
use cuzk::engine::{
    Engine, EngineConfig, MsmChoice, PostKind, PostRequest, ProofOutput, ProveOptions, SplitPolicy, UpdateRequest, MIN_GPU_H_MSM_CHUNK,
};
use cuzk::error::Status;
use cuzk::internals::r1cs::CircuitShape;
use cuzk::internals::synthesize;
use cuzk::internals::{device_count, GpuBackend, GpuConfig};
use cuzk::timings::BackendKind;
use cuzk::timings::{KeyResidency, Timings};
use cuzk::ProvingKey;
use cuzk::{BackendChoice, CircuitOptions, Prover, Whole};
use cuzk_tools::circuits::{synthetic_key, OnlyTheConstant, RandomCircuit};
use cuzk_tools::post_oracle::{bellperson_window_post, bellperson_winning_post};
use cuzk_tools::setup::random_parameters;
use cuzk_tools::update_oracle::bellperson_update;
use ff::Field;
use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;

fn gpu_engine() -> Arc<Engine> {
    let config = EngineConfig {
        param_cache_dir: Some(fixture().params_dir.clone()),
        ..Default::default()
    };
    let engine = Engine::acquire(config).expect("engine");
    assert_eq!(
        engine.prover().backend_kind(),
        BackendKind::Gpu,
        "CUZK_GPU_TESTS=1 but no usable CUDA device (see RUST_LOG=cuzk=info)"
    );
    engine
}

fn require_gpu() {
    assert!(device_count().unwrap_or(0) > 0, "CUZK_GPU_TESTS=1 but no usable CUDA device");
}

/// A prover on device 0 whose keys are resident (the default budget) or streamed from host
/// memory on every call (a budget of one byte), with a, b, c of the R1CS path computed on the
/// device or on the host, and a split witness's classes found on the device where it can
/// (`prep_on_gpu`, the default) or on the host.
fn gpu_prover(policy: SplitPolicy, residency: KeyResidency, products_on_gpu: bool, msm: MsmChoice) -> Prover {
    gpu_prover_prep(policy, residency, products_on_gpu, msm, true)
}

fn gpu_prover_prep(policy: SplitPolicy, residency: KeyResidency, products_on_gpu: bool, msm: MsmChoice, prep_on_gpu: bool) -> Prover {
    gpu_prover_table(policy, residency, products_on_gpu, msm, prep_on_gpu, true)
}

/// As `gpu_prover_prep`, with a resident key's H table (cuda/h_table.cuh) where it may have one
/// (`h_table`: what the circuits' comparisons take, the engine's default being off) or never.
fn gpu_prover_table(policy: SplitPolicy, residency: KeyResidency, products_on_gpu: bool, msm: MsmChoice, prep_on_gpu: bool, h_table: bool) -> Prover {
    let config = EngineConfig {
        gpu_key_memory_budget: if residency == KeyResidency::Streamed { 1 } else { 0 },
        gpu_split: policy,
        gpu_msm: msm,
        products_on_gpu,
        prep_on_gpu,
        gpu_h_table: h_table,
        ..EngineConfig::default()
    };
    Prover::new(BackendChoice::Gpu { device: 0 }, &config).expect("CUZK_GPU_TESTS=1 but no usable CUDA device")
}

fn proof_bytes(p: &bellperson::groth16::Proof<Bls12>) -> Vec<u8> {
    let mut out = Vec::new();
    p.write(&mut out).unwrap();
    out
}

/// How the key of a comparison is made: a random setup (the proofs verify) or random points of
/// the right shape (fast at any size; the proofs are compared but cannot verify).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Key {
    Setup,
    Synthetic,
}

/// The GPU against bellperson's CPU prover on a fresh random circuit with fixed r, s (see
/// [`check_circuit_equals_bellperson`]).
fn check_gpu_equals_bellperson(constraints: usize, bit_heavy: bool, key_kind: Key) {
    let seed: u64 = rand::random();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let circuit = RandomCircuit::new(&mut rng, constraints, bit_heavy);
    let inputs = circuit.inputs.clone();
    let what = format!("{constraints} constraints, bit_heavy {bit_heavy}, {key_kind:?} key, seed {seed}");
    check_circuit_equals_bellperson(circuit, &inputs, key_kind, &mut rng, &what);
}

/// `key` (made in memory) as the engine reads a parameter file: written in bellperson's format
/// and opened, its points decoded from the file where a call needs them (the file's name is
/// gone; the key keeps it open).
fn read_from_file(key: ProvingKey) -> ProvingKey {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!("cuzk-gpu-test-key-{}-{}", std::process::id(), key.id()));
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    key.held_host_points().unwrap().write(&mut file).unwrap();
    file.flush().unwrap();
    drop(file);
    let opened = ProvingKey::open(std::fs::File::open(&path).unwrap(), path.display().to_string()).unwrap();
    std::fs::remove_file(&path).unwrap();
    opened
}

/// The GPU against bellperson's CPU prover on `circuit` (public inputs `inputs`) with fixed r,
/// s: the same bytes with the 0/1 split forced on and forced off (the cost model picks one of
/// the two), with the key read from a parameter file, resident in device memory (its points
/// decoded from the file part by part as they are uploaded, or uploaded from host memory after a
/// streamed configuration decoded them there) and streamed from host memory, with a, b, c
/// from classic synthesis (host) and computed on the device from the circuit's resident
/// matrices and compact witness, with cuzk's MSM (a full-width witness's MSMs at once) and
/// sppark's, with a split witness's classes found on the device (past a domain of 2^22, the key
/// resident, a, b, c on the device and cuzk's MSM: witness_classes.rs) and on the host, and a
/// second call of the shape (its selections of z resident since the first); a resident key's
/// H's MSM by cuzk's over its H table (up to 2^22 points) and without one; with a real key
/// the proof verifies.
fn check_circuit_equals_bellperson<C: bellperson::Circuit<Scalar> + Clone + Send + Sync>(
    circuit: C,
    inputs: &[Scalar],
    key_kind: Key,
    rng: &mut rand_chacha::ChaCha20Rng,
    what: &str,
) {
    let start = Instant::now();
    let params = match key_kind {
        Key::Setup => ProvingKey::new(random_parameters(circuit.clone(), &mut *rng).unwrap(), "setup"),
        Key::Synthetic => synthetic_key(&synthesize(circuit.clone(), None).unwrap(), rand::Rng::gen(&mut *rng)),
    };
    let key_s = start.elapsed().as_secs_f64();
    let (r, s) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));
    let start = Instant::now();
    let expected = proof_bytes(
        &create_proof_batch(vec![circuit.clone()], &*params.held_host_points().unwrap(), vec![r], vec![s])
            .unwrap()
            .remove(0),
    );
    let bellperson_s = start.elapsed().as_secs_f64();
    let params = read_from_file(params);
    let shape = Arc::new(CircuitShape::extract(circuit.clone()).unwrap());
    for (policy, residency, products_on_device, msm, prep_on_gpu, h_table) in [
        (SplitPolicy::Always, KeyResidency::Resident, false, MsmChoice::Cuzk, true, true),
        (SplitPolicy::Never, KeyResidency::Resident, false, MsmChoice::Cuzk, true, true),
        (SplitPolicy::Always, KeyResidency::Streamed, false, MsmChoice::Cuzk, true, true),
        (SplitPolicy::Never, KeyResidency::Streamed, false, MsmChoice::Cuzk, true, true),
        (SplitPolicy::Always, KeyResidency::Resident, true, MsmChoice::Cuzk, true, true),
        (SplitPolicy::Always, KeyResidency::Resident, true, MsmChoice::Cuzk, false, true),
        (SplitPolicy::Never, KeyResidency::Resident, true, MsmChoice::Cuzk, true, true),
        (SplitPolicy::CostModel, KeyResidency::Resident, true, MsmChoice::Cuzk, true, true),
        (SplitPolicy::CostModel, KeyResidency::Resident, true, MsmChoice::Cuzk, true, false),
        (SplitPolicy::Never, KeyResidency::Streamed, true, MsmChoice::Cuzk, true, true),
        (SplitPolicy::Never, KeyResidency::Resident, true, MsmChoice::Sppark, true, true),
        (SplitPolicy::Never, KeyResidency::Resident, true, MsmChoice::CuzkAffine, true, true),
    ] {
        let gpu = gpu_prover_table(policy, residency, products_on_device, msm, prep_on_gpu, h_table);
        let options = CircuitOptions {
            randomness: Some((r, s)),
            cancel: None,
        };
        let mut t = Timings::new();
        let ours = match products_on_device {
            false => gpu.prove(&params, circuit.clone(), &options, &mut t),
            true => gpu.prove_with_shape(&params, &shape, &Whole(circuit.clone()), &options, &mut t),
        }
        .expect("GPU proof");
        assert_eq!(t.key_residency, residency as u32);
        // The resident copy carries its H table where it may: cuzk's MSM, the table on, an H
        // query of 1 to 2^22 points.
        let table_bytes: u64 = gpu.devices()[0].resident_keys.iter().map(|k| k.table_bytes).sum();
        let h_points = params.query_sizes().h;
        let may_have_table = residency == KeyResidency::Resident && msm == MsmChoice::Cuzk && h_table && (1..=1 << 22).contains(&h_points);
        assert_eq!(
            table_bytes > 0,
            may_have_table,
            "{what}: the resident key's H table ({table_bytes} bytes)"
        );
        assert_eq!(
            params.host_bytes() > 0,
            residency == KeyResidency::Streamed,
            "{what}: the host holds the points of a streamed key, and none of a resident one"
        );
        // A domain of size 1 has no H: no a, b, c are computed anywhere.
        let has_h = shape.num_constraints() > 1;
        assert_eq!(
            t.spmv_on_device,
            u32::from(products_on_device && has_h),
            "{what}: where a, b, c were computed"
        );
        assert_eq!(
            proof_bytes(&ours),
            expected,
            "{what}, split {policy:?}, key {residency:?}, a, b, c on the device {products_on_device}, {msm:?} MSM, classes on the device {prep_on_gpu}, H table {h_table}: the GPU proof differs from bellperson's"
        );
        if msm == MsmChoice::Sppark {
            assert_eq!(t.msm_at_once_ns, 0, "{what}: sppark's MSMs run one after another");
        }
        if products_on_device && policy == SplitPolicy::CostModel {
            // A second call of the shape: its matrices, and A's and B's selections of z that
            // the first call left with them, are resident (neither sent again).
            let mut again = Timings::new();
            let second = gpu
                .prove_with_shape(&params, &shape, &Whole(circuit.clone()), &options, &mut again)
                .expect("second GPU proof");
            assert_eq!(again.shape_upload_ns, 0, "{what}: the shape stays resident");
            assert_eq!(
                proof_bytes(&second),
                expected,
                "{what}: the second call of the shape differs from bellperson's"
            );
        }
        if key_kind == Key::Setup {
            assert!(
                verify_proof(&prepare_verifying_key(&params.vk), &ours, inputs).unwrap(),
                "{what}: GPU proof does not verify"
            );
        }
        let s = |ns: u64| ns as f64 / 1e9;
        eprintln!(
            "{what} ({key_s:.1} s) split={policy:?} {residency:?} spmv_on_device={products_on_device} msm={msm:?} prep_on_gpu={prep_on_gpu} h_table={h_table}: bellperson {bellperson_s:.3} s | GPU synthesis {:.3}, upload {:.3}, prep {:.3}, h2d {:.3}, witness upload {:.3}, spmv {:.3}, ntt {:.3}, msm_h {:.3}, batch_add {:.3}, tails {:.3}, b_g2 {:.3}, at once {:.3} s",
            s(t.synthesis_ns), s(t.srs_upload_ns + t.shape_upload_ns), s(t.prep_msm_ns), s(t.pin_h2d_ns), s(t.witness_upload_ns), s(t.spmv_ns), s(t.ntt_ns), s(t.msm_h_ns), s(t.batch_add_ns),
            s(t.msm_l_ns + t.msm_a_ns + t.msm_b_g1_ns), s(t.msm_b_g2_ns), s(t.msm_at_once_ns),
        );
    }
    // H's MSM in chunks of the fewest points a configuration may ask for: by cuzk's MSM, the
    // parts of one MSM adding into its buckets (cuda/quotient.cuh), 16 and more parts past
    // 2^20 constraints. A streamed key's H always runs in chunks; a resident one's past the
    // MSMs run at once (H past 2^22 - 1 points).
    for residency in [KeyResidency::Streamed, KeyResidency::Resident] {
        let gpu = gpu_prover_prep(SplitPolicy::CostModel, residency, true, MsmChoice::Cuzk, true);
        gpu.set_gpu_h_msm_chunk(MIN_GPU_H_MSM_CHUNK);
        let options = CircuitOptions {
            randomness: Some((r, s)),
            cancel: None,
        };
        let mut t = Timings::new();
        let ours = gpu
            .prove_with_shape(&params, &shape, &Whole(circuit.clone()), &options, &mut t)
            .expect("GPU proof, H's MSM in chunks");
        assert_eq!(
            proof_bytes(&ours),
            expected,
            "{what}, key {residency:?}, H's MSM in chunks of {MIN_GPU_H_MSM_CHUNK} points: the GPU proof differs from bellperson's"
        );
        eprintln!(
            "{what} {residency:?}, H's MSM in chunks of {MIN_GPU_H_MSM_CHUNK}: msm_h {:.3} s",
            t.msm_h_ns as f64 / 1e9
        );
    }
}

#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn gpu_matches_bellperson_2_pow_10_and_16() {
    require_gpu();
    for bit_heavy in [true, false] {
        check_gpu_equals_bellperson(1 << 10, bit_heavy, Key::Setup);
        check_gpu_equals_bellperson((1 << 16) - 7, bit_heavy, Key::Setup);
    }
}

#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn gpu_matches_bellperson_2_pow_20_and_22() {
    require_gpu();
    // A random setup (whose proofs verify) for the bit-heavy circuits, a synthetic key for the
    // others (still compared with bellperson byte for byte).
    for bit_heavy in [true, false] {
        let key = if bit_heavy { Key::Setup } else { Key::Synthetic };
        check_gpu_equals_bellperson(1 << 20, bit_heavy, key);
        check_gpu_equals_bellperson((1 << 22) - 100, bit_heavy, key);
    }
}

/// Past a domain of 2^22 a split witness with its key resident is classed on the device
/// (witness_classes.rs): bellperson's bytes with the classes found there, with the ones split
/// off, folded into the tails and as the cost model picks, and with the classes found on the
/// host; the proofs verify.
#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn gpu_matches_bellperson_past_2_pow_22_with_classes_on_the_device() {
    require_gpu();
    check_gpu_equals_bellperson((1 << 22) + 1000, true, Key::Setup);
}

/// `n` points: random ones, then each a random one of them plus a multiple of the generator
/// (fast to make, still unrelated to each other).
fn msm_points(n: usize, rng: &mut rand_chacha::ChaCha20Rng) -> Vec<G1Affine> {
    use group::{Curve, Group};
    let randoms: Vec<G1Projective> = (0..n.min(256)).map(|_| G1Projective::random(&mut *rng)).collect();
    let mut step = G1Projective::generator();
    let projective: Vec<G1Projective> = (0..n)
        .map(|i| {
            step += G1Projective::generator();
            randoms[i % randoms.len()] + step
        })
        .collect();
    let mut affine = vec![G1Affine::default(); n];
    G1Projective::batch_normalize(&projective, &mut affine);
    affine
}

/// cuzk's MSM (cuda/msm.cuh) against the CPU's (blstrs) and sppark's, at sizes where its
/// windows, run-sum chunks and segments begin and end (2^k ± 1), on random scalars and on the
/// edge cases: all equal, all p − 1, all 0 or 1, all 0, one point; scalars in Montgomery form
/// and canonical; in G1 and in G2; at the narrowest and widest digits, and at 2^25 and 2^27
/// points (H's size at 32GiB), whose windows are sorted in groups. In G1 every case also by
/// cuzk's MSM with batched-affine rounds (`MsmChoice::CuzkAffine`; at 2^25 and 2^27 the tiled
/// points put a point twice, or with its negation, in some buckets). Prints each size's time
/// by the MSMs (their inputs on the device already).
#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn own_msm_equals_cpu_and_sppark() {
    require_gpu();
    let gpu = GpuBackend::new(&GpuConfig::default()).expect("GPU backend");
    let seed: u64 = rand::random();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let largest = 1usize << 22;
    let all_points = msm_points(largest, &mut rng);
    let minus_one = -Scalar::ONE;
    let check = |n: usize, what: &str, scalars: &[Scalar], rng: &mut rand_chacha::ChaCha20Rng| {
        let points = &all_points[..n];
        let projective: Vec<G1Projective> = points.iter().map(|p| G1Projective::from(*p)).collect();
        let expected = G1Projective::multi_exp(&projective, scalars);
        let montgomery = rand::Rng::gen::<bool>(&mut *rng);
        let (ours, ours_ns) = gpu.msm_g1(points, scalars, MsmChoice::Cuzk, 0, montgomery).expect("cuzk MSM");
        assert_eq!(
            ours, expected,
            "cuzk's MSM of {n} points, {what} scalars (montgomery {montgomery}), seed {seed}"
        );
        let (affine, affine_ns) = gpu
            .msm_g1(points, scalars, MsmChoice::CuzkAffine, 0, montgomery)
            .expect("cuzk-affine MSM");
        assert_eq!(
            affine, expected,
            "cuzk's MSM with batched-affine rounds of {n} points, {what} scalars (montgomery {montgomery}), seed {seed}"
        );
        let (sppark, sppark_ns) = gpu.msm_g1(points, scalars, MsmChoice::Sppark, 0, false).expect("sppark MSM");
        assert_eq!(sppark, expected, "sppark's MSM of {n} points, {what} scalars, seed {seed}");
        let (table, table_ns) = gpu.msm_g1_over_h_table(points, scalars, montgomery).expect("cuzk MSM over an H table");
        assert_eq!(
            table, expected,
            "cuzk's MSM over the H table of {n} points, {what} scalars (montgomery {montgomery}), seed {seed}"
        );
        eprintln!(
            "MSM 2^{:.2} = {n} points, {what}: cuzk {:.3} ms, cuzk over its H table {:.3} ms, cuzk-affine {:.3} ms, sppark {:.3} ms",
            (n as f64).log2(),
            ours_ns as f64 / 1e6,
            table_ns as f64 / 1e6,
            affine_ns as f64 / 1e6,
            sppark_ns as f64 / 1e6
        );
    };
    // The H table of points among which some are at infinity (every 7th), whose copies stay
    // there, and of the same point repeated (every window's copies equal).
    for (what, points) in [
        (
            "every 7th at infinity",
            all_points[..4097]
                .iter()
                .enumerate()
                .map(|(i, p)| if i % 7 == 0 { G1Affine::default() } else { *p })
                .collect::<Vec<_>>(),
        ),
        ("one point repeated", vec![all_points[5]; 4097]),
    ] {
        let scalars: Vec<Scalar> = (0..points.len()).map(|_| Scalar::random(&mut rng)).collect();
        let projective: Vec<G1Projective> = points.iter().map(|p| G1Projective::from(*p)).collect();
        let expected = G1Projective::multi_exp(&projective, &scalars);
        let (table, _) = gpu.msm_g1_over_h_table(&points, &scalars, true).expect("cuzk MSM over an H table");
        assert_eq!(table, expected, "cuzk's MSM over the H table of {what}, seed {seed}");
    }
    // No H table past 2^22 points: refused, not made.
    let past: Vec<G1Affine> = all_points.iter().chain(&all_points[..1]).copied().collect();
    let refused = gpu
        .msm_g1_over_h_table(&past, &vec![Scalar::ONE; past.len()], true)
        .expect_err("an H table of more than 2^22 points");
    assert!(refused.message.contains("2^22"), "{}", refused.message);
    for n in [1, 2, 31, 32, 33, 255, 1023, 1024, 1025, (1 << 16) + 1, 370_000, 1 << 20, largest] {
        let random: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        check(n, "random", &random, &mut rng);
        if n > 1_000_000 {
            continue;
        }
        let same = Scalar::random(&mut rng);
        check(n, "all equal", &vec![same; n], &mut rng);
        check(n, "all p-1", &vec![minus_one; n], &mut rng);
        let bits: Vec<Scalar> = (0..n)
            .map(|_| if rand::Rng::gen::<bool>(&mut rng) { Scalar::ONE } else { Scalar::ZERO })
            .collect();
        check(n, "0 or 1", &bits, &mut rng);
        check(n, "all 0", &vec![Scalar::ZERO; n], &mut rng);
    }
    // G2 (B_G2): random and the edge cases at sizes where windows and chunks turn.
    let g2_points: Vec<G2Affine> = {
        use group::{Curve, Group};
        let randoms: Vec<G2Projective> = (0..64).map(|_| G2Projective::random(&mut rng)).collect();
        let mut step = G2Projective::generator();
        let projective: Vec<G2Projective> = (0..(1 << 16) + 1)
            .map(|i| {
                step += G2Projective::generator();
                randoms[i % randoms.len()] + step
            })
            .collect();
        let mut affine = vec![G2Affine::default(); projective.len()];
        G2Projective::batch_normalize(&projective, &mut affine);
        affine
    };
    for n in [1, 33, 1025, (1 << 16) + 1] {
        let points = &g2_points[..n];
        let projective: Vec<G2Projective> = points.iter().map(|p| G2Projective::from(*p)).collect();
        let same = Scalar::random(&mut rng);
        let cases: [(&str, Vec<Scalar>); 4] = [
            ("random", (0..n).map(|_| Scalar::random(&mut rng)).collect()),
            ("all equal", vec![same; n]),
            ("all p-1", vec![minus_one; n]),
            ("0 or 1", (0..n).map(|i| if i % 3 == 0 { Scalar::ONE } else { Scalar::ZERO }).collect()),
        ];
        for (what, scalars) in cases {
            let expected = G2Projective::multi_exp(&projective, &scalars);
            let (ours, ours_ns) = gpu.msm_g2(points, &scalars, MsmChoice::Cuzk, 0, true).expect("cuzk G2 MSM");
            assert_eq!(ours, expected, "cuzk's G2 MSM of {n} points, {what} scalars, seed {seed}");
            let (sppark, sppark_ns) = gpu.msm_g2(points, &scalars, MsmChoice::Sppark, 0, false).expect("sppark G2 MSM");
            assert_eq!(sppark, expected, "sppark's G2 MSM of {n} points, {what} scalars, seed {seed}");
            eprintln!(
                "G2 MSM {n} points, {what}: cuzk {:.3} ms, sppark {:.3} ms",
                ours_ns as f64 / 1e6,
                sppark_ns as f64 / 1e6
            );
        }
    }
    // Digit widths other than the size's: the narrowest and the widest (2^21 buckets a window).
    for (n, bits) in [(1025, 8), (1025, 22), ((1 << 16) + 1, 22)] {
        let points = &all_points[..n];
        let projective: Vec<G1Projective> = points.iter().map(|p| G1Projective::from(*p)).collect();
        let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let expected = G1Projective::multi_exp(&projective, &scalars);
        for choice in [MsmChoice::Cuzk, MsmChoice::CuzkAffine] {
            let (ours, _) = gpu.msm_g1(points, &scalars, choice, bits, true).expect("cuzk MSM");
            assert_eq!(ours, expected, "{choice:?} MSM of {n} points, {bits}-bit digits, seed {seed}");
        }
        let g2 = &g2_points[..n];
        let g2_projective: Vec<G2Projective> = g2.iter().map(|p| G2Projective::from(*p)).collect();
        let (ours, _) = gpu.msm_g2(g2, &scalars, MsmChoice::Cuzk, bits, true).expect("cuzk G2 MSM");
        assert_eq!(
            ours,
            G2Projective::multi_exp(&g2_projective, &scalars),
            "cuzk's G2 MSM of {n} points, {bits}-bit digits, seed {seed}"
        );
    }
    // 2^25 and 2^27 points (the 2^22 above, 8 and 32 times over), whose windows are sorted in
    // groups (2^25: 16 of 16 bits in two groups of 8, 13 of 20 bits in groups of 8 and 5).
    // Σ sᵢ·P_(i mod 2^22) is the 2^22-point MSM of the scalars summed per point: the CPU's
    // reference stays a 2^22-point MSM. Scalars drawn on all cores, a stream per chunk.
    let projective: Vec<G1Projective> = all_points.iter().map(|p| G1Projective::from(*p)).collect();
    for (log_n, digit_bits) in [(25, &[0, 20][..]), (27, &[0][..])] {
        use rayon::prelude::*;
        let n = 1usize << log_n;
        let tiled: Vec<G1Affine> = all_points.iter().copied().cycle().take(n).collect();
        let mut scalars = vec![Scalar::ZERO; n];
        scalars.par_chunks_mut(largest).enumerate().for_each(|(k, chunk)| {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed ^ ((k as u64 + 1) << 32));
            chunk.iter_mut().for_each(|s| *s = Scalar::random(&mut rng));
        });
        let folded: Vec<Scalar> = (0..largest)
            .into_par_iter()
            .map(|i| scalars.iter().skip(i).step_by(largest).sum())
            .collect();
        let expected = G1Projective::multi_exp(&projective, &folded);
        for &bits in digit_bits {
            for choice in [MsmChoice::Cuzk, MsmChoice::CuzkAffine] {
                let (ours, ours_ns) = gpu.msm_g1(&tiled, &scalars, choice, bits, true).expect("cuzk MSM");
                assert_eq!(
                    ours, expected,
                    "{choice:?} MSM of 2^{log_n} points ({bits}-bit digits; 0: by size), seed {seed}"
                );
                eprintln!(
                    "MSM 2^{log_n} points ({bits}-bit digits; 0: by size): {choice:?} {:.3} ms",
                    ours_ns as f64 / 1e6
                );
            }
        }
    }
    // 2^16 … 2^22 random, the per-size table of docs/PERFORMANCE.md.
    for lg in 16..=22 {
        let n = 1usize << lg;
        let random: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        check(n, "random (table)", &random, &mut rng);
    }
}

#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn porep_2k_gpu_proof_equals_bellperson_and_verifies() {
    let f = fixture();
    let engine = gpu_engine();
    let mut rng = rand::thread_rng();
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let options = ProveOptions {
        randomness: Some(vec![(r, s)]),
        ..Default::default()
    };
    let ProofOutput { proof: ours, timings: t, .. } = engine
        .seal_commit_phase2(&f.c1_json, f.sector.sector_id, f.sector.prover_id, &options)
        .expect("GPU C2");
    assert_eq!(t.backend, BackendKind::Gpu as u32);
    assert_eq!(t.device_index, 0);
    assert!(common::filecoin_verify(&f.sector, &ours), "filecoin-proofs rejects the GPU proof");

    let c1 = cuzk::internals::porep::parse_c1(&f.c1_json).unwrap();
    let inputs = cuzk::internals::porep::check_c1::<filecoin_proofs::constants::SectorShape2KiB>(c1, f.sector.prover_id, f.sector.sector_id).unwrap();
    let id = cuzk::internals::porep::parameter_cache_id::<filecoin_proofs::constants::SectorShape2KiB>(&inputs.config).unwrap();
    let path = f.params_dir.join(storage_proofs_core::parameter_cache::parameter_id(&id));
    let key = bellperson::groth16::Parameters::<Bls12>::read(std::io::BufReader::new(std::fs::File::open(path).unwrap()), false).unwrap();
    let circuit = cuzk::internals::porep::partition_circuit(&inputs, 0).unwrap();
    let theirs = create_proof_batch(vec![circuit], &key, vec![r], vec![s]).unwrap().remove(0);
    assert_eq!(ours, proof_bytes(&theirs), "GPU and bellperson proofs differ for the same r, s");

    // A second, random-r,s proof: its phases account for the total within 2 % or 15 ms (6–10 ms
    // at 2KiB on the H200 were in no phase: thread hand-offs between the pipeline's stages and
    // freeing large vectors between timed phases).
    let ProofOutput { timings: t, .. } = engine
        .seal_commit_phase2(&f.c1_json, f.sector.sector_id, f.sector.prover_id, &ProveOptions::default())
        .unwrap();
    let parts = t.serial_ns();
    for (name, ns) in t.phases() {
        eprintln!("porep-2k GPU {name:<12} {:>9.3} ms", ns as f64 / 1e6);
    }
    assert!(
        t.srs_load_ns == 0 && t.srs_upload_ns == 0 && t.pin_ns == 0,
        "the key stays resident: no load, upload or pinning on the second call"
    );
    assert_eq!(t.key_residency, KeyResidency::Resident as u32);
    let unaccounted = t.total_ns.saturating_sub(parts);
    assert!(
        parts <= t.total_ns && (unaccounted * 50 <= t.total_ns || unaccounted <= 15_000_000),
        "phases {parts} ns vs total {} ns",
        t.total_ns
    );
    // a, b, c computed on the device from its resident copy of the circuit's matrices.
    assert_eq!(t.spmv_on_device, 1, "{t:?}");
    assert_eq!(
        (t.shape_upload_ns, t.pin_h2d_ns),
        (0, 0),
        "matrices resident since the first call; a, b, c never sent"
    );
    for (name, ns) in [
        ("witness_upload", t.witness_upload_ns),
        ("spmv", t.spmv_ns),
        ("ntt", t.ntt_ns),
        ("msm_h", t.msm_h_ns),
        ("batch_add", t.batch_add_ns),
        ("msm_l", t.msm_l_ns),
        ("msm_b_g2", t.msm_b_g2_ns),
    ] {
        assert!(ns > 0, "{name} not measured on the GPU path");
    }
}

#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn post_2k_gpu_proofs_equal_bellperson_and_verify() {
    let f = common::post_fixture();
    let engine = gpu_engine();
    let params = fixture().params_dir.clone();
    let mut rng = rand::thread_rng();
    let bytes = |hex: &[cuzk_tools::fixtures::HexBytes]| hex.iter().map(|h| h.0.clone()).collect::<Vec<_>>();
    let prove = |kind, proof, vanilla: &[Vec<u8>], partition_index, r, s| {
        let slices: Vec<&[u8]> = vanilla.iter().map(Vec::as_slice).collect();
        let request = PostRequest {
            kind,
            registered_proof: proof,
            prover_id: f.prover_id,
            randomness: f.randomness,
            vanilla_proofs: &slices,
            partition_index,
        };
        let options = ProveOptions {
            randomness: Some(vec![(r, s)]),
            ..Default::default()
        };
        let proven = engine.generate_post(&request, &options).expect("GPU PoSt");
        assert_eq!(proven.timings.backend, BackendKind::Gpu as u32);
        for (name, ns) in proven.timings.phases() {
            eprintln!("post-2k {kind:?} GPU {name:<12} {:>9.3} ms", ns as f64 / 1e6);
        }
        proven.proof
    };
    let mut merged = Vec::new();
    for p in &f.window.partitions {
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let vanilla = bytes(&p.vanilla_proofs);
        let ours = prove(PostKind::Window, f.window.registered_proof, &vanilla, p.index, r, s);
        let theirs = bellperson_window_post(f.window.registered_proof, &f.randomness, f.prover_id, &vanilla, p.index, &params, r, s).unwrap();
        assert_eq!(
            ours, theirs,
            "WindowPoSt partition {}: GPU and bellperson proofs differ for the same r, s",
            p.index
        );
        merged.extend_from_slice(&ours);
    }
    assert!(
        common::filecoin_verify_window(&f.randomness, &merged),
        "filecoin-proofs rejects the GPU WindowPoSt"
    );
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let vanilla = bytes(&f.winning.vanilla_proofs);
    let ours = prove(PostKind::Winning, f.winning.registered_proof, &vanilla, 0, r, s);
    let theirs = bellperson_winning_post(f.winning.registered_proof, &f.randomness, f.prover_id, &vanilla, &params, r, s).unwrap();
    assert_eq!(ours, theirs, "WinningPoSt: GPU and bellperson proofs differ for the same r, s");
    assert!(
        common::filecoin_verify_winning(&f.randomness, &ours),
        "filecoin-proofs rejects the GPU WinningPoSt"
    );
}

#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn update_gpu_proof_equals_bellperson_and_verifies() {
    let f = common::update_fixture();
    let size = common::update_sector_size();
    let engine = gpu_engine();
    let mut rng = rand::thread_rng();
    let vanilla: Vec<Vec<u8>> = f.vanilla_proofs.iter().map(|h| h.0.clone()).collect();
    let slices: Vec<&[u8]> = vanilla.iter().map(Vec::as_slice).collect();
    let rs: Vec<(Scalar, Scalar)> = (0..vanilla.len()).map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng))).collect();
    let request = UpdateRequest {
        registered_proof: f.registered_proof,
        comm_r_old: f.comm_r_old,
        comm_r_new: f.comm_r_new,
        comm_d_new: f.comm_d_new,
        vanilla_proofs: &slices,
    };
    let options = ProveOptions {
        randomness: Some(rs.clone()),
        ..Default::default()
    };
    let proven = engine.generate_update(&request, &options).expect("GPU update proof");
    assert_eq!(proven.timings.backend, BackendKind::Gpu as u32);
    for (name, ns) in proven.timings.phases() {
        eprintln!("update-{size} GPU {name:<12} {:>9.3} ms", ns as f64 / 1e6);
    }
    let comms = (f.comm_r_old, f.comm_r_new, f.comm_d_new);
    let start = std::time::Instant::now();
    let theirs = bellperson_update(f.registered_proof, comms, &vanilla, &fixture().params_dir, &rs).unwrap();
    // bellperson's time for the same proof (its parameter file read included): the 8MiB
    // update's CPU peer where a device command has no room for another bellperson run.
    eprintln!("update-{size} bellperson create_proof_batch {:.3} s", start.elapsed().as_secs_f64());
    assert_eq!(proven.proof, theirs, "update: GPU and bellperson proofs differ for the same r, s");
    assert!(
        common::filecoin_verify_update([f.comm_r_old, f.comm_r_new, f.comm_d_new], &proven.proof),
        "filecoin-proofs rejects the GPU update proof"
    );
}

#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn porep_2k_key_cold_warm_evicted_preloaded() {
    let f = fixture();
    let engine = gpu_engine();
    let proof = RegisteredSealProof::StackedDrg2KiBV1_1;
    let prove = || {
        let ProofOutput {
            proof: bytes,
            timings: t,
            partitions,
            ..
        } = engine
            .seal_commit_phase2(&f.c1_json, f.sector.sector_id, f.sector.prover_id, &ProveOptions::default())
            .expect("GPU C2");
        assert!(common::filecoin_verify(&f.sector, &bytes), "filecoin-proofs rejects the proof");
        assert_eq!(t.key_residency, KeyResidency::Resident as u32);
        eprintln!(
            "porep-2k: srs_load {:.3} s, srs_upload {:.3} s, pin {:.4} s, h2d {:.4} s, batch_add {:.4} s, tails {:.4} s, total {:.3} s",
            t.srs_load_ns as f64 / 1e9,
            t.srs_upload_ns as f64 / 1e9,
            t.pin_ns as f64 / 1e9,
            t.pin_h2d_ns as f64 / 1e9,
            t.batch_add_ns as f64 / 1e9,
            (t.msm_l_ns + t.msm_a_ns + t.msm_b_g1_ns + t.msm_b_g2_ns) as f64 / 1e9,
            t.total_ns as f64 / 1e9
        );
        (t, partitions[0].srs_upload_ns)
    };
    engine.evict_key(proof).unwrap();
    let status = engine.status();
    assert!(
        status.host_keys.is_empty() && status.devices.iter().all(|d| d.resident_keys.is_empty()),
        "{status:?}"
    );

    let (cold, partition_upload_ns) = prove();
    assert!(cold.srs_load_ns > 0 && cold.srs_upload_ns > 0, "the cold call loads and uploads the key");
    assert_eq!(
        partition_upload_ns, 0,
        "the key's upload started with the call, beside the partition's synthesis, not in its device turn"
    );
    let (warm, _) = prove();
    assert_eq!(
        (warm.srs_load_ns, warm.srs_upload_ns, warm.pin_ns),
        (0, 0, 0),
        "the warm call loads, uploads and pins nothing"
    );

    let status = engine.status();
    eprintln!("status: {}", serde_json::to_string(&status).unwrap());
    assert_eq!(status.host_keys.len(), 1);
    assert_eq!(status.host_keys[0].bytes, 0, "a key resident on the device is not held in host memory");
    let key_bytes = status.host_keys[0].points_bytes;
    for device in &status.devices {
        assert_eq!(device.resident_keys.len(), 1, "{device:?}");
        assert_eq!(device.resident_keys[0].bytes, key_bytes);
        assert!(device.resident_keys[0].loaded);
        assert_eq!(device.resident_shapes.len(), 1, "the 2KiB circuit's matrices are resident: {device:?}");
        assert!(device.witness_buffer_bytes > 0 && device.memory_used_by_cuzk >= key_bytes + device.resident_shapes[0].bytes);
        assert!(
            device.pinned_pool.allocated_bytes > 0 && device.pinned_pool.in_use_bytes == 0,
            "{:?}",
            device.pinned_pool
        );
        assert_eq!(device.proofs_in_flight, 0);
    }
    let uses: u64 = status.devices.iter().map(|d| d.resident_keys[0].uses).sum();
    assert_eq!(uses, 2, "two calls used the device copy");

    assert!(engine.evict_key(proof).unwrap());
    let evicted = engine.status();
    assert!(evicted.host_keys.is_empty() && evicted.devices.iter().all(|d| d.resident_keys.is_empty()));
    for (before, after) in status.devices.iter().zip(&evicted.devices) {
        assert!(
            after.memory_free >= before.memory_free + key_bytes * 9 / 10,
            "eviction frees the device memory: {} -> {}",
            before.memory_free,
            after.memory_free
        );
    }
    let (reloaded, _) = prove();
    assert!(
        reloaded.srs_load_ns > 0 && reloaded.srs_upload_ns > 0,
        "after eviction the key is loaded again"
    );
    let reloaded_status = engine.status();
    assert!(
        reloaded_status.devices.iter().all(|d| d.resident_shapes.len() == 1),
        "only the reloaded circuit's matrices stay on the device: {reloaded_status:?}"
    );
    // The shape was read from its file this time (written after the cold call's extraction):
    // the host's copy of the matrices went once they were on the device.
    let [shape] = reloaded_status.circuit_shapes.as_slice() else {
        panic!("one circuit shape: {reloaded_status:?}")
    };
    assert!(shape.bytes * 20 < shape.shape_bytes, "host matrices released: {shape:?}");

    engine.evict_key(proof).unwrap();
    let report = engine.preload_key(proof).unwrap();
    assert!(report.srs_load_ns > 0 && report.srs_upload_ns > 0);
    let (after_preload, _) = prove();
    assert_eq!(
        (after_preload.srs_load_ns, after_preload.srs_upload_ns),
        (0, 0),
        "a preloaded key is ready for the first call"
    );
}

/// A C2 of the fixture's sector on `engine`, checked by filecoin-proofs; its timings.
fn prove_fixture_c2(engine: &Engine) -> Timings {
    let f = fixture();
    let out = engine
        .seal_commit_phase2(&f.c1_json, f.sector.sector_id, f.sector.prover_id, &ProveOptions::default())
        .expect("GPU C2");
    assert!(common::filecoin_verify(&f.sector, &out.proof), "filecoin-proofs rejects the proof");
    out.timings
}

/// `release_memory` frees the device (keys but the kept PoSt one, matrices, NTT and witness
/// buffers, pinned staging) and the next call uploads again and proves.
#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn release_memory_frees_the_device_and_the_next_call_proves() {
    let engine = gpu_engine();
    let prove = || prove_fixture_c2(&engine);
    prove();
    engine
        .preload_key(filecoin_proofs_api::RegisteredPoStProof::StackedDrgWinning2KiBV1)
        .unwrap();
    let held = engine.status();
    for device in &held.devices {
        assert!(device.resident_keys.len() == 2 && device.witness_buffer_bytes > 0, "{device:?}");
    }
    assert!(
        held.host_keys.len() == 2 && held.host_keys.iter().all(|k| k.bytes == 0 && k.points_bytes > 0),
        "keys resident on the device are not held in host memory: {:?}",
        held.host_keys
    );

    let released = engine.release_memory(true);
    let status = engine.status();
    eprintln!("released {released:?}; status: {}", serde_json::to_string(&status).unwrap());
    for (before, after) in held.devices.iter().zip(&status.devices) {
        assert_eq!((after.ntt_buffer_bytes, after.witness_buffer_bytes), (0, 0), "{after:?}");
        assert!(after.resident_shapes.is_empty() && after.pinned_pool.allocated_bytes == 0, "{after:?}");
        assert_eq!(after.resident_keys.len(), 1, "the WinningPoSt key stays: {after:?}");
        assert!(after.resident_keys[0].label.contains("proof-of-spacetime"), "{after:?}");
        let porep_key = before
            .resident_keys
            .iter()
            .find(|k| !k.label.contains("proof-of-spacetime"))
            .unwrap()
            .bytes;
        let freed = before.ntt_buffer_bytes + before.witness_buffer_bytes + porep_key;
        assert!(
            after.memory_free >= before.memory_free + freed * 9 / 10,
            "the device gets its memory back: {} -> {} (freed {freed})",
            before.memory_free,
            after.memory_free
        );
    }
    assert!(
        released.device_bytes > 0 && released.host_key_bytes == 0 && released.pinned_bytes > 0,
        "{released:?}"
    );

    let again = prove();
    assert!(again.srs_load_ns > 0 && again.srs_upload_ns > 0, "the key is read and uploaded again");
    let warm = prove();
    assert_eq!((warm.srs_load_ns, warm.srs_upload_ns), (0, 0), "then it is resident again");
    engine.release_memory(false);
    assert!(engine.status().devices.iter().all(|d| d.resident_keys.is_empty()));
    prove();
}

/// Device memory after warm-up stays flat over many proofs (the reference leaked device memory
/// until the GPU ran out), a, b, c computed on the device from the resident matrices. Every
/// proof is compared with bellperson's.
#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn device_memory_flat_over_60_proofs() {
    require_gpu();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(rand::random());
    let circuit = RandomCircuit::new(&mut rng, 1 << 18, true);
    let key = synthetic_key(&synthesize(circuit.clone(), None).unwrap(), 5);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let expected = proof_bytes(
        &create_proof_batch(vec![circuit.clone()], &*key.held_host_points().unwrap(), vec![r], vec![s])
            .unwrap()
            .remove(0),
    );
    let gpu = gpu_prover(SplitPolicy::CostModel, KeyResidency::Resident, true, MsmChoice::Cuzk);
    let shape = Arc::new(CircuitShape::extract(circuit.clone()).unwrap());
    let options = CircuitOptions {
        randomness: Some((r, s)),
        cancel: None,
    };
    let mut free = Vec::new();
    for i in 0..60 {
        let mut t = Timings::new();
        let proof = gpu
            .prove_with_shape(&key, &shape, &Whole(circuit.clone()), &options, &mut t)
            .expect("GPU proof");
        assert_eq!(t.spmv_on_device, 1);
        assert_eq!(proof_bytes(&proof), expected, "proof {i}");
        free.push(gpu.devices()[0].memory_free);
    }
    let warm = &free[3..];
    let (lo, hi) = (*warm.iter().min().unwrap(), *warm.iter().max().unwrap());
    eprintln!(
        "device memory free over 60 proofs: first {} MiB, after warm-up {}..{} MiB",
        free[0] >> 20,
        lo >> 20,
        hi >> 20
    );
    assert!(hi - lo <= 64 << 20, "device memory moves by {} MiB after warm-up", (hi - lo) >> 20);
    assert!(
        free[59] + (16 << 20) >= free[3],
        "device memory shrinks: {} -> {} MiB",
        free[3] >> 20,
        free[59] >> 20
    );
}

#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn cuda_errors_become_statuses_and_the_next_call_works() {
    let engine = gpu_engine();
    let err = Prover::new(BackendChoice::Gpu { device: 1 << 20 }, &EngineConfig::default())
        .err()
        .expect("no such device");
    assert_eq!(err.status, Status::GpuError, "{err}");
    check_gpu_equals_bellperson(1 << 12, true, Key::Setup);
    let _ = engine;
}

/// A key file whose point the device's decode refuses (cuda/key_decode.cuh: every encoding
/// the host's reader refuses, in H, L and B_G2) fails the call that uploads it, with the
/// host reader's status and words and nothing decoded on the host, and the next call proves:
/// the same circuit with the key's good file gives bellperson's bytes.
#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn a_refused_key_point_fails_its_upload_and_the_next_call_proves() {
    use cuzk_tools::params_file::{open_key_bytes, point_offset, refused_g1_encodings, refused_g2_encodings};
    require_gpu();
    let seed: u64 = rand::random();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let circuit = RandomCircuit::new(&mut rng, 1 << 10, true);
    let params = random_parameters(circuit.clone(), &mut rng).unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    let gpu = gpu_prover(SplitPolicy::CostModel, KeyResidency::Resident, false, MsmChoice::Cuzk);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let options = CircuitOptions {
        randomness: Some((r, s)),
        cancel: None,
    };
    let h_last = params.h.len() - 1;
    let cases = [
        (0, h_last, "h", refused_g1_encodings(&params.h[h_last])),
        (1, 1, "l", refused_g1_encodings(&params.l[1])),
        (4, 0, "b_g2", refused_g2_encodings(&params.b_g2[0])),
    ];
    for (query, index, name, refused) in cases {
        let at = point_offset(&params, query, index);
        for (what, encoding) in refused {
            let mut corrupt = bytes.clone();
            corrupt[at..at + encoding.len()].copy_from_slice(&encoding);
            let key = open_key_bytes(&corrupt, "refused").unwrap();
            let mut t = Timings::new();
            let e = gpu
                .prove(&key, circuit.clone(), &options, &mut t)
                .err()
                .unwrap_or_else(|| panic!("{name}: {what}: proved"));
            assert_eq!(e.status, Status::ParametersInvalid, "{name}: {what}: {e}");
            assert_eq!(
                e.message,
                format!("corrupt parameter file refused: point {index} of query {name} is not an uncompressed point on its curve (a flag bit set, a coordinate not below p, or off the curve)"),
                "{what}"
            );
            assert_eq!(key.host_bytes(), 0, "{name}: {what}: nothing decoded on the host");
        }
    }
    let expected = proof_bytes(&create_proof_batch(vec![circuit.clone()], &params, vec![r], vec![s]).unwrap().remove(0));
    let key = open_key_bytes(&bytes, "good").unwrap();
    let mut t = Timings::new();
    let ours = gpu.prove(&key, circuit, &options, &mut t).expect("the good file proves");
    assert_eq!(t.key_residency, KeyResidency::Resident as u32);
    assert_eq!(proof_bytes(&ours), expected, "seed {seed}: the GPU proof differs from bellperson's");
}

#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn smallest_circuits_equal_bellperson_and_the_next_call_works() {
    require_gpu();
    let seed: u64 = rand::random();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    // Domain 1: no NTT and no H MSM (H is the identity), as bellperson.
    check_circuit_equals_bellperson(
        OnlyTheConstant,
        &[],
        Key::Setup,
        &mut rng,
        &format!("only the constant input, seed {seed}"),
    );
    // Domains 4 (three inputs, no constraint of their own) and 8.
    for constraints in [0, 1, 4] {
        let circuit = RandomCircuit::new(&mut rng, constraints, false);
        let inputs = circuit.inputs.clone();
        check_circuit_equals_bellperson(circuit, &inputs, Key::Setup, &mut rng, &format!("{constraints} constraints, seed {seed}"));
    }
    check_gpu_equals_bellperson(1 << 12, true, Key::Setup);
}

#[test]
#[cfg_attr(
    not(all(cuzk_gpu_tests, feature = "fault-injection")),
    ignore = "GPU test with the fault injector: build with CUZK_GPU_TESTS=1 and --features fault-injection (scripts/gpu-build.sh) and run where a CUDA device is present"
)]
fn a_device_fault_fails_only_its_call_and_the_next_calls_prove() {
    #[cfg(feature = "fault-injection")]
    device_fault_fails_only_its_call(SplitPolicy::Never);
    #[cfg(not(feature = "fault-injection"))]
    panic!("this test needs the fault injector: build it with --features fault-injection");
}

/// The same with the 0/1 split forced (batch additions and sparse tails in flight; split never:
/// each query one dense tail). Either way the fault meets the quotient stage while the witness
/// MSMs started before it run (cuda/split.cuh), and the failed call drops them on the faulted
/// context.
#[test]
#[cfg_attr(
    not(all(cuzk_gpu_tests, feature = "fault-injection")),
    ignore = "GPU test with the fault injector: build with CUZK_GPU_TESTS=1 and --features fault-injection (scripts/gpu-build.sh) and run where a CUDA device is present"
)]
fn a_device_fault_beside_the_split_msms_fails_only_its_call() {
    #[cfg(feature = "fault-injection")]
    device_fault_fails_only_its_call(SplitPolicy::Always);
    #[cfg(not(feature = "fault-injection"))]
    panic!("this test needs the fault injector: build it with --features fault-injection");
}

/// See [`a_device_fault_fails_only_its_call_and_the_next_calls_prove`]; `split` decides what is
/// in flight when the fault meets the quotient stage. Each in a process of its own
/// (scripts/gpu-run.sh): a fault may leave the process's device unusable.
#[cfg(feature = "fault-injection")]
fn device_fault_fails_only_its_call(split: SplitPolicy) {
    use cuzk::engine::DeviceHealth;
    use cuzk::internals::gpu_fault_injection as injection;

    require_gpu();
    let seed: u64 = rand::random();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let circuit = RandomCircuit::new(&mut rng, 1 << 16, true);
    let inputs = circuit.inputs.clone();
    let key = ProvingKey::new(random_parameters(circuit.clone(), &mut rng).unwrap(), "fault test");
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let expected = proof_bytes(
        &create_proof_batch(vec![circuit.clone()], &*key.held_host_points().unwrap(), vec![r], vec![s])
            .unwrap()
            .remove(0),
    );
    let shape = Arc::new(CircuitShape::extract(circuit.clone()).unwrap());
    let options = CircuitOptions {
        randomness: Some((r, s)),
        cancel: None,
    };
    let check_proof = |proof: &bellperson::groth16::Proof<Bls12>, what: &str| {
        assert_eq!(proof_bytes(proof), expected, "{what}, seed {seed}: the proof differs from bellperson's");
        assert!(
            verify_proof(&prepare_verifying_key(&key.vk), proof, &inputs).unwrap(),
            "{what}: does not verify"
        );
    };
    let gpu = gpu_prover(split, KeyResidency::Resident, true, MsmChoice::Cuzk);
    let prove = |t: &mut Timings| gpu.prove_with_shape(&key, &shape, &Whole(circuit.clone()), &options, t);
    let mut before = Timings::new();
    check_proof(&prove(&mut before).expect("GPU proof before the fault"), "before the fault");
    // This circuit's MSMs run at once, the witness's started before the quotient stage (with
    // the split forced, batch additions among them): in flight when the injected fault fires.
    assert!(before.msm_at_once_ns > 0, "the MSMs ran one after another: {before:?}");
    if split == SplitPolicy::Always {
        assert!(before.batch_add_ns > 0, "no batch addition with the split forced: {before:?}");
    }

    injection::fault_next_call();
    let start = Instant::now();
    let err = prove(&mut Timings::new()).expect_err("the call that meets the fault fails");
    let failed_s = start.elapsed().as_secs_f64();
    assert_eq!(err.status, Status::GpuError, "{err}");
    assert!(
        err.message.contains("an illegal memory access was encountered"),
        "the CUDA message: {err}"
    );
    let device = gpu.devices().remove(0);
    assert_eq!(device.faults, 1);
    assert!(device.last_fault.as_deref().is_some_and(|m| m.contains("illegal memory access")));
    eprintln!("the failed call ({failed_s:.3} s): {err}");
    if device.health == DeviceHealth::Healthy {
        // This process's context was reset: the next call proves on the device, the key
        // uploaded again. Then a fault whose reset fails, to reach the quarantine below.
        assert!(err.message.contains("was reset"), "{err}");
        assert!(
            device.resident_keys.is_empty() && device.resident_shapes.is_empty(),
            "the reset freed them"
        );
        let mut t = Timings::new();
        check_proof(&prove(&mut t).expect("the call after the fault proves"), "after the reset");
        assert_eq!(t.backend, BackendKind::Gpu as u32);
        assert!(t.srs_upload_ns > 0, "the key is uploaded again");
        eprintln!("recovered in {:.1} ms", device.last_recovery_ns as f64 / 1e6);
        injection::fault_next_call();
        injection::fail_next_reset();
        let err = prove(&mut Timings::new()).expect_err("the call that meets the second fault fails");
        assert_eq!(err.status, Status::GpuError, "{err}");
    }
    // Quarantined (a reset this process could not use, or the injected failure): the calls
    // after it are proved on the CPU, still bellperson's bytes.
    let device = gpu.devices().remove(0);
    assert_eq!(device.health, DeviceHealth::Quarantined, "{:?}", device.last_fault);
    for call in 0..2 {
        let mut t = Timings::new();
        let start = Instant::now();
        let proof = prove(&mut t).expect("a call after an unrecoverable fault proves on the CPU");
        check_proof(&proof, "quarantined device, CPU fallback");
        assert_eq!((t.backend, t.device_index), (BackendKind::Cpu as u32, -1));
        eprintln!("call {call} after the quarantine: CPU, {:.3} s", start.elapsed().as_secs_f64());
    }
}

/// The memory estimate of a C2 (`Engine::memory_estimate`) bounds what a call takes on the
/// device (its free memory sampled during the call) and on the host (the live heap's peak),
/// with nothing resident before the call, and is within 4x of each.
#[test]
#[cfg_attr(
    not(cuzk_gpu_tests),
    ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present"
)]
fn memory_estimate_bounds_a_c2_on_the_device_and_the_host() {
    let f = fixture();
    let engine = gpu_engine();
    let prove = || {
        prove_fixture_c2(&engine);
    };
    prove();
    let estimate = engine.memory_estimate(f.sector.registered_proof).unwrap();
    engine.release_memory(false);
    let device_used = |engine: &Engine| {
        let d = &engine.status().devices[0];
        d.memory_total - d.memory_free
    };
    let before = (device_used(&engine), cuzk_tools::memory::heap_in_use_bytes());
    let done = std::sync::atomic::AtomicBool::new(false);
    let (device_peak, host_peak) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut peak = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(device_used(&engine));
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
            peak
        });
        let host = cuzk_tools::memory::HeapPeak::start();
        prove();
        let host_peak = host.stop();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (sampler.join().unwrap(), host_peak)
    });
    let device = (
        device_peak.saturating_sub(before.0),
        estimate.device_resident_bytes + estimate.device_call_bytes,
    );
    let host = (
        host_peak.saturating_sub(before.1),
        estimate.host_resident_bytes + estimate.host_call_bytes,
    );
    eprintln!(
        "{estimate:?}: device +{} B against {} B ({:.2}x), host +{} B against {} B ({:.2}x)",
        device.0,
        device.1,
        device.1 as f64 / device.0 as f64,
        host.0,
        host.1,
        host.1 as f64 / host.0 as f64
    );
    for (what, (used, estimated)) in [("device", device), ("host", host)] {
        assert!(
            used <= estimated && estimated <= 4 * used,
            "{what}: the call took {used} B, estimated {estimated} B"
        );
    }
}
