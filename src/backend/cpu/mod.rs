//! The CPU backend: NTTs and split MSMs on all cores with rayon. Correct on every machine, the
//! fallback when no GPU is present, and the reference the GPU backend is compared with.

mod msm;
mod ntt;

use self::msm::{pippenger, sum_points, BlstAffine};
use super::host_copies;
use super::prep::{ClassifiedScalars, PreparedMsms};
use super::turn::Turn;
use super::{check_not_a_worker, Backend, BackendKind, CallMemory, Priority};
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::groth16::{check_key_fits, MsmResults, ProvingKey, QueryLayout, QuerySizes};
use crate::synthesis::{Products, SynthesizedCircuit};
use crate::timings::{timed, Timings};
use bellperson::groth16::Parameters;
use blstrs::Bls12;
use rayon::ThreadPool;

use self::ntt::quotient_coefficients;
pub use self::ntt::Domain;

/// The CPU backend of an engine: one turn for the MSMs of every call, so that a partition's
/// MSMs have all the cores and a high-priority call goes first at the next partition boundary
/// (as on a device). They run in a pool of its own, not in the engine's: there the next
/// partition's synthesis would wait for the whole proof (a rayon worker waiting in a join takes
/// any pending task, and the MSMs' take seconds); with two pools the OS shares the cores.
pub struct CpuBackend {
    turn: Turn,
    pool: ThreadPool,
}

/// The CPU backend as one call sees it.
struct CpuCall<'a> {
    cpu: &'a CpuBackend,
    priority: Priority,
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn for_call(&self, device: Option<u32>, priority: Priority) -> Result<Box<dyn Backend + '_>> {
        match device {
            Some(ordinal) => Err(Error::invalid(format!("device {ordinal} requested, but the engine runs on the CPU"))),
            None => Ok(Box::new(CpuCall { cpu: self, priority })),
        }
    }

    fn compute_msms(
        &self,
        key: &ProvingKey,
        circuit: SynthesizedCircuit,
        pool: &ThreadPool,
        cancel: &CancelToken,
        t: &mut Timings,
    ) -> Result<MsmResults> {
        self.compute_in_turn(Priority::Sealing, key, circuit, pool, cancel, t)
    }

    /// Beside the circuit's a, b, c (the pipeline counts them with it): the scalar classes
    /// and the quotient's scalars, over the domain.
    fn call_memory(&self, sizes: &QuerySizes, _shape_bytes: u64) -> CallMemory {
        CallMemory {
            host_key_bytes: sizes.points_bytes(),
            host_lane_bytes: PreparedMsms::max_bytes(sizes.variables()) + 32 * sizes.domain(),
            ..CallMemory::default()
        }
    }
}

impl Backend for CpuCall<'_> {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn for_call(&self, device: Option<u32>, priority: Priority) -> Result<Box<dyn Backend + '_>> {
        self.cpu.for_call(device, priority)
    }

    fn compute_msms(
        &self,
        key: &ProvingKey,
        circuit: SynthesizedCircuit,
        pool: &ThreadPool,
        cancel: &CancelToken,
        t: &mut Timings,
    ) -> Result<MsmResults> {
        self.cpu.compute_in_turn(self.priority, key, circuit, pool, cancel, t)
    }

    fn call_memory(&self, sizes: &QuerySizes, shape_bytes: u64) -> CallMemory {
        self.cpu.call_memory(sizes, shape_bytes)
    }
}

impl CpuBackend {
    /// With `threads` workers for the NTTs and MSMs (0: one per core).
    pub fn new(threads: usize) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("cuzk-cpu-prover-{i}"))
            .build()
            .map_err(|e| Error::internal(format!("starting the CPU prover's threads: {e}")))?;
        Ok(CpuBackend { turn: Turn::default(), pool })
    }

    fn compute_in_turn(
        &self,
        priority: Priority,
        key: &ProvingKey,
        circuit: SynthesizedCircuit,
        pool: &ThreadPool,
        cancel: &CancelToken,
        t: &mut Timings,
    ) -> Result<MsmResults> {
        check_not_a_worker(pool)?;
        let domain = Domain::for_len(circuit.num_constraints())
            .ok_or_else(|| Error::invalid("circuit has more constraints than the field's 2^32 FFT domain"))?;
        let layout = check_key_fits(key, &circuit, domain.size())?;
        // Decoded from the parameter file when the host does not hold them (timed as the key's
        // load), before the turn.
        let points = host_copies::host_points(key, priority, pool, &mut t.srs_load_ns)?;
        let _turn = timed(&mut t.proving_wait_ns, || self.turn.take(priority));
        cancel.check()?;
        self.pool.install(|| Self::compute(&points, layout, circuit, cancel, t))
    }

    fn compute(
        key: &Parameters<Bls12>,
        layout: QueryLayout,
        circuit: SynthesizedCircuit,
        cancel: &CancelToken,
        t: &mut Timings,
    ) -> Result<MsmResults> {
        let SynthesizedCircuit {
            products,
            input_assignment,
            aux_assignment,
            a_aux_density,
            b_input_density,
            b_aux_density,
            ..
        } = circuit;
        let (a, b, c) = match products {
            deferred @ Products::Deferred(_) => timed(&mut t.spmv_ns, || deferred.evaluate(&input_assignment, &aux_assignment)),
            evaluated => evaluated.evaluate(&input_assignment, &aux_assignment),
        }?;

        let h_coeffs = timed(&mut t.ntt_ns, || quotient_coefficients(a, b, c, cancel)).expect("domain checked above");
        cancel.check()?;
        let (h_scalars, p) = timed(&mut t.prep_msm_ns, || {
            let prepared = PreparedMsms::new(
                &layout,
                &input_assignment,
                &aux_assignment,
                &a_aux_density,
                &b_input_density,
                &b_aux_density,
            );
            (ClassifiedScalars::all(&h_coeffs), prepared)
        });
        drop((h_coeffs, aux_assignment, input_assignment));

        cancel.check()?;
        let h = timed(&mut t.msm_h_ns, || {
            sum_points(&key.h, &h_scalars.ones) + tail_msm(&key.h, &h_scalars, cancel)
        });
        cancel.check()?;
        let (l_ones, a_ones, b_g1_ones) = timed(&mut t.batch_add_ns, || {
            (
                sum_points(&key.l, &p.l.ones),
                sum_points(&key.a, &p.a.ones),
                sum_points(&key.b_g1, &p.b.ones),
            )
        });
        let l = l_ones + timed(&mut t.msm_l_ns, || tail_msm(&key.l, &p.l, cancel));
        let a = a_ones + timed(&mut t.msm_a_ns, || tail_msm(&key.a, &p.a, cancel));
        let b_g1 = b_g1_ones + timed(&mut t.msm_b_g1_ns, || tail_msm(&key.b_g1, &p.b, cancel));
        cancel.check()?;
        let b_g2_ones = timed(&mut t.batch_add_ns, || sum_points(&key.b_g2, &p.b.ones));
        let b_g2 = b_g2_ones + timed(&mut t.msm_b_g2_ns, || tail_msm(&key.b_g2, &p.b, cancel));
        Ok(MsmResults { h, l, a, b_g1, b_g2 })
    }
}

pub(crate) fn tail_msm<G: BlstAffine>(points: &[G], classes: &ClassifiedScalars, cancel: &CancelToken) -> G::Curve {
    // Dense: scalar i is point i's.
    let indices = (!classes.dense).then_some(classes.tail_indices.as_slice());
    pippenger(points, indices, &classes.tail_scalars, cancel)
}
