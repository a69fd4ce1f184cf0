//! GPU test target. Compiled with the `cuda` feature; ignored (and reported as ignored) unless
//! built with CUZK_GPU_TESTS=1, and then it fails when no CUDA device is usable — it never
//! passes vacuously. Run on the H200 by scripts/gpu-run.sh.
#![cfg(feature = "cuda")]

mod common;

use std::sync::Arc;

use bellperson::groth16::{create_proof_batch, generate_random_parameters, prepare_verifying_key, verify_proof, Parameters};
use blstrs::{Bls12, Scalar};
use common::fixture;
use cuzk::backend::cpu::CpuBackend;
use cuzk::backend::gpu::GpuBackend;
use cuzk::backend::BackendKind;
use cuzk::engine::{prove_with, Engine, EngineConfig, ProveOptions};
use cuzk::error::Status;
use cuzk::testing::{synthetic_key, RandomCircuit};
use cuzk::timings::Timings;
use ff::Field;
use rand::SeedableRng;

fn gpu_engine() -> Arc<Engine> {
    let config = EngineConfig { param_cache_dir: Some(fixture().params_dir.clone()), ..Default::default() };
    let engine = Engine::acquire(config).expect("engine");
    assert_eq!(engine.backend().kind(), BackendKind::Gpu, "CUZK_GPU_TESTS=1 but no usable CUDA device (see RUST_LOG=cuzk=info)");
    engine
}

fn proof_bytes(p: &bellperson::groth16::Proof<Bls12>) -> Vec<u8> {
    let mut out = Vec::new();
    p.write(&mut out).unwrap();
    out
}

fn check_gpu_equals_cpu(constraints: usize, bit_heavy: bool) {
    let engine = gpu_engine();
    let seed: u64 = rand::random();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let circuit = RandomCircuit::new(&mut rng, constraints, bit_heavy);
    let key = synthetic_key(&circuit, seed);
    let rs = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let (mut tg, mut tc) = (Timings::new(), Timings::new());
    let gpu = prove_with(engine.backend(), &key, circuit.clone(), rs, None, &mut tg).expect("GPU proof");
    let cpu = prove_with(&CpuBackend, &key, circuit, rs, None, &mut tc).expect("CPU proof");
    assert_eq!(proof_bytes(&gpu), proof_bytes(&cpu), "{constraints} constraints (bit_heavy {bit_heavy}, seed {seed}): GPU and CPU differ");
    eprintln!(
        "{constraints:>8} constraints bit_heavy={bit_heavy:<5} GPU: ntt {:.3} s, msm_h {:.3} s, batch_add {:.3} s, tails {:.3} s | CPU: ntt {:.3} s, msm_h {:.3} s",
        tg.ntt_ns as f64 / 1e9,
        tg.msm_h_ns as f64 / 1e9,
        tg.batch_add_ns as f64 / 1e9,
        (tg.msm_l_ns + tg.msm_a_ns + tg.msm_b_g1_ns) as f64 / 1e9,
        tc.ntt_ns as f64 / 1e9,
        tc.msm_h_ns as f64 / 1e9,
    );
}

/// GPU against bellperson with a real (random-setup) key: same bytes, and the proof verifies.
fn check_gpu_equals_bellperson(constraints: usize, bit_heavy: bool) {
    let engine = gpu_engine();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(rand::random());
    let circuit = RandomCircuit::new(&mut rng, constraints, bit_heavy);
    let params = generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng).unwrap();
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let expected = create_proof_batch(vec![circuit.clone()], &params, vec![r], vec![s]).unwrap().remove(0);
    let ours = prove_with(engine.backend(), &params, circuit.clone(), (r, s), None, &mut Timings::new()).expect("GPU proof");
    assert_eq!(proof_bytes(&ours), proof_bytes(&expected), "2^{}: GPU proof differs from bellperson's", constraints.ilog2());
    assert!(verify_proof(&prepare_verifying_key(&params.vk), &ours, &circuit.inputs).unwrap());
}

#[test]
#[cfg_attr(not(cuzk_gpu_tests), ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present")]
fn gpu_matches_bellperson_2_pow_10_and_16() {
    for bit_heavy in [true, false] {
        check_gpu_equals_bellperson(1 << 10, bit_heavy);
        check_gpu_equals_bellperson((1 << 16) - 7, bit_heavy);
    }
}

#[test]
#[cfg_attr(not(cuzk_gpu_tests), ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present")]
fn gpu_matches_cpu_2_pow_20_and_22() {
    for bit_heavy in [true, false] {
        check_gpu_equals_cpu(1 << 20, bit_heavy);
        check_gpu_equals_cpu((1 << 22) - 100, bit_heavy);
    }
}

#[test]
#[cfg_attr(not(cuzk_gpu_tests), ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present")]
fn porep_2k_gpu_proof_equals_bellperson_and_verifies() {
    let f = fixture();
    let engine = gpu_engine();
    let mut rng = rand::thread_rng();
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let options = ProveOptions { randomness: Some(vec![(r, s)]), ..Default::default() };
    let (ours, t) = engine.seal_commit_phase2(&f.c1_json, f.sector.sector_id, f.sector.prover_id, &options).expect("GPU C2");
    assert_eq!(t.backend, BackendKind::Gpu as u32);
    assert_eq!(t.device_index, 0);
    assert!(common::filecoin_verify(&f.sector, &ours), "filecoin-proofs rejects the GPU proof");

    let c1 = cuzk::porep::parse_c1(&f.c1_json).unwrap();
    let inputs = cuzk::porep::check_c1::<filecoin_proofs::constants::SectorShape2KiB>(c1, f.sector.prover_id, f.sector.sector_id).unwrap();
    let id = cuzk::porep::parameter_cache_id::<filecoin_proofs::constants::SectorShape2KiB>(&inputs.config).unwrap();
    let path = f.params_dir.join(storage_proofs_core::parameter_cache::parameter_id(&id));
    let key = Parameters::<Bls12>::read(std::io::BufReader::new(std::fs::File::open(path).unwrap()), false).unwrap();
    let circuit = cuzk::porep::partition_circuit(&inputs, 0).unwrap();
    let theirs = create_proof_batch(vec![circuit], &key, vec![r], vec![s]).unwrap().remove(0);
    assert_eq!(ours, proof_bytes(&theirs), "GPU and bellperson proofs differ for the same r, s");

    // A second, random-r,s proof: its phases account for the total within 2 %.
    let (_, t) = engine.seal_commit_phase2(&f.c1_json, f.sector.sector_id, f.sector.prover_id, &ProveOptions::default()).unwrap();
    let parts: u64 = t.phases().iter().filter(|(n, _)| *n != "total").map(|(_, ns)| ns).sum();
    for (name, ns) in t.phases() {
        eprintln!("porep-2k GPU {name:<12} {:>9.3} ms", ns as f64 / 1e6);
    }
    assert!(t.srs_load_ns == 0, "the key stays resident: no load on the second call");
    assert!(parts <= t.total_ns && parts * 100 >= t.total_ns * 98, "phases {parts} ns vs total {} ns", t.total_ns);
    for (name, ns) in [("pin_h2d", t.pin_h2d_ns), ("ntt", t.ntt_ns), ("msm_h", t.msm_h_ns), ("batch_add", t.batch_add_ns), ("msm_l", t.msm_l_ns), ("msm_b_g2", t.msm_b_g2_ns)] {
        assert!(ns > 0, "{name} not measured on the GPU path");
    }
}

#[test]
#[cfg_attr(not(cuzk_gpu_tests), ignore = "GPU test: build with CUZK_GPU_TESTS=1 and run where a CUDA device is present")]
fn cuda_errors_become_statuses_and_the_next_call_works() {
    let engine = gpu_engine();
    let err = GpuBackend::new(1 << 20).err().expect("no such device");
    assert_eq!(err.status, Status::GpuError, "{err}");
    check_gpu_equals_cpu(1 << 12, true);
    let _ = engine;
}
