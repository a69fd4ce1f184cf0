//! The GPU backend: H (7 NTTs + MSM), batch addition and tail MSMs of the G1 queries on a CUDA
//! device through cuda/ (sppark's kernels), B_G2 on the CPU cores. Prep_msm (the 0/1/tail
//! split) is shared with the CPU backend, so both feed their MSMs the same classes.

// sppark's device registry (select_gpu, ngpus) is compiled by its build script into its rlib:
// name the crate so that it is linked.
extern crate sppark;

use std::borrow::Cow;
use std::ffi::{c_char, c_void, CStr};
use std::sync::Mutex;
use std::time::Instant;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::prime::PrimeCurveAffine;
use group::Group;
use rayon::prelude::*;

use super::cpu::Domain;
use super::prep::{ClassifiedScalars, PreparedMsms};
use super::{Backend, BackendKind};
use crate::cancel::CancelToken;
use crate::error::{Error, Result, Status};
use crate::groth16::{check_key_fits, MsmResults, ProvingKey};
use crate::synthesis::SynthesizedCircuit;
use crate::timings::{nanos, timed, Timings};

mod sys {
    //! cuda/cuzk_gpu.h
    use std::ffi::{c_char, c_int, c_void};

    pub const OK: c_int = 0;
    pub const OUT_OF_MEMORY: c_int = 2;

    #[repr(C)]
    #[derive(Default)]
    pub struct G1 {
        pub x: [u64; 6],
        pub y: [u64; 6],
        pub infinity: u32,
        pub padding: u32,
    }

    #[repr(C)]
    #[derive(Default)]
    pub struct G2 {
        pub x: [u64; 12],
        pub y: [u64; 12],
        pub infinity: u32,
        pub padding: u32,
    }

    #[repr(C)]
    #[derive(Default)]
    pub struct HTimes {
        pub h2d_ns: u64,
        pub ntt_ns: u64,
        pub msm_ns: u64,
    }

    #[repr(C)]
    pub struct Message {
        pub text: [c_char; 512],
    }

    extern "C" {
        pub fn cuzk_gpu_device_count(count: *mut c_int, msg: *mut Message) -> c_int;
        pub fn cuzk_gpu_device_info(device: c_int, name: *mut c_char, total_memory: *mut u64, msg: *mut Message) -> c_int;
        pub fn cuzk_gpu_quotient_msm(
            device: c_int,
            a: *const c_void,
            b: *const c_void,
            c: *const c_void,
            n: usize,
            lg_domain: u32,
            h_points: *const c_void,
            out: *mut G1,
            times: *mut HTimes,
            msg: *mut Message,
        ) -> c_int;
        pub fn cuzk_gpu_batch_add(device: c_int, points: *const c_void, npoints: usize, bitmap: *const u32, out: *mut G1, msg: *mut Message) -> c_int;
        pub fn cuzk_gpu_msm(device: c_int, points: *const c_void, scalars: *const c_void, n: usize, out: *mut G1, msg: *mut Message) -> c_int;
        pub fn cuzk_gpu_batch_add_g2(device: c_int, points: *const c_void, npoints: usize, bitmap: *const u32, out: *mut G2, msg: *mut Message) -> c_int;
        pub fn cuzk_gpu_msm_g2(device: c_int, points: *const c_void, scalars: *const c_void, n: usize, out: *mut G2, msg: *mut Message) -> c_int;
    }
}

/// Calls a cuda/ entry point and turns its code and message into an [`Error`].
fn call(what: &str, f: impl FnOnce(*mut sys::Message) -> i32) -> Result<()> {
    let mut msg = sys::Message { text: [0; 512] };
    let code = f(&mut msg);
    if code == sys::OK {
        return Ok(());
    }
    // SAFETY: the C side always NUL-terminates the message buffer.
    let text = unsafe { CStr::from_ptr(msg.text.as_ptr()) }.to_string_lossy().into_owned();
    let status = if code == sys::OUT_OF_MEMORY { Status::OutOfMemory } else { Status::GpuError };
    Err(Error::new(status, format!("{what}: {text}")))
}

fn to_projective(p: &sys::G1) -> G1Projective {
    if p.infinity != 0 {
        return G1Projective::identity();
    }
    G1Affine::from_raw_unchecked(Fp::from_raw_unchecked(p.x), Fp::from_raw_unchecked(p.y), false).to_curve()
}

fn to_projective_g2(p: &sys::G2) -> G2Projective {
    if p.infinity != 0 {
        return G2Projective::identity();
    }
    let fp = |limbs: &[u64]| Fp::from_raw_unchecked(limbs.try_into().expect("6 limbs"));
    let fp2 = |c: &[u64; 12]| Fp2::new(fp(&c[..6]), fp(&c[6..]));
    G2Affine::from_raw_unchecked(fp2(&p.x), fp2(&p.y), false).to_curve()
}

/// Number of CUDA devices usable by this process (0 without a driver or device).
pub fn device_count() -> Result<usize> {
    let mut count = 0;
    // SAFETY: out-pointers to locals.
    call("counting CUDA devices", |msg| unsafe { sys::cuzk_gpu_device_count(&mut count, msg) })?;
    Ok(count.max(0) as usize)
}

pub struct GpuBackend {
    device: i32,
    name: String,
    /// GPU phases of one device run one call at a time (sppark's batch-addition kernel keeps
    /// per-stream work counters in device memory); waiting for it is the call's queue wait.
    in_use: Mutex<()>,
    split: SplitPolicy,
}

impl GpuBackend {
    /// The backend of `device`, splitting MSMs by the cost model unless CUZK_GPU_SPLIT says
    /// otherwise.
    pub fn new(device: i32) -> Result<Self> {
        Self::with_split_policy(device, SplitPolicy::from_env()?)
    }

    pub fn with_split_policy(device: i32, split: SplitPolicy) -> Result<Self> {
        let mut name = [0 as c_char; 256];
        let mut memory = 0u64;
        // SAFETY: out-pointers to locals of the sizes the C side writes.
        call("querying the CUDA device", |msg| unsafe { sys::cuzk_gpu_device_info(device, name.as_mut_ptr(), &mut memory, msg) })?;
        // SAFETY: NUL-terminated by the C side.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        log::info!("cuzk GPU backend on device {device}: {name}, {} GiB, 0/1 split: {split:?}", memory >> 30);
        Ok(GpuBackend { device, name, in_use: Mutex::new(()), split })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn batch_add(&self, points: &[G1Affine], classes: &ClassifiedScalars) -> Result<G1Projective> {
        let bitmap = classes.ones_bitmap(points.len());
        let mut out = sys::G1::default();
        // SAFETY: `points` and `bitmap` (⌈len/32⌉ words) outlive the synchronous call.
        call("batch addition", |msg| unsafe {
            sys::cuzk_gpu_batch_add(self.device, points.as_ptr() as *const c_void, points.len(), bitmap.as_ptr(), &mut out, msg)
        })?;
        Ok(to_projective(&out))
    }

    /// The whole B_G2 MSM on the device: batch addition of the 1-scalars (timed into
    /// batch_add), then the tail (into msm_b_g2).
    fn b_g2_msm(&self, points: &[G2Affine], classes: &ClassifiedScalars, t: &mut Timings) -> Result<G2Projective> {
        let mut ones = sys::G2::default();
        let start = Instant::now();
        if !classes.ones.is_empty() {
            let bitmap = classes.ones_bitmap(points.len());
            // SAFETY: `points` and `bitmap` (⌈len/32⌉ words) outlive the synchronous call.
            call("G2 batch addition", |msg| unsafe {
                sys::cuzk_gpu_batch_add_g2(self.device, points.as_ptr() as *const c_void, points.len(), bitmap.as_ptr(), &mut ones, msg)
            })?;
        }
        t.batch_add_ns += nanos(start.elapsed());
        let start = Instant::now();
        let tail_points = gather_tail(points, classes);
        let mut tail = sys::G2::default();
        // SAFETY: as many points as scalars, both alive for the synchronous call.
        call("G2 tail MSM", |msg| unsafe {
            sys::cuzk_gpu_msm_g2(
                self.device,
                tail_points.as_ptr() as *const c_void,
                classes.tail_scalars.as_ptr() as *const c_void,
                tail_points.len(),
                &mut tail,
                msg,
            )
        })?;
        t.msm_b_g2_ns += nanos(start.elapsed());
        Ok(to_projective_g2(&ones) + to_projective_g2(&tail))
    }

    /// H on the device from a, b, c (which are freed as soon as they are on it).
    fn quotient_msm(&self, key: &ProvingKey, (a, b, c): (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>), lg_domain: u32, t: &mut Timings) -> Result<G1Projective> {
        let mut h = sys::G1::default();
        let mut times = sys::HTimes::default();
        // SAFETY: a, b, c hold n scalars each and key.h the domain size - 1 points (checked by
        // check_key_fits); all outlive the synchronous call.
        call("H (NTT + MSM)", |msg| unsafe {
            sys::cuzk_gpu_quotient_msm(
                self.device,
                a.as_ptr() as *const c_void,
                b.as_ptr() as *const c_void,
                c.as_ptr() as *const c_void,
                a.len(),
                lg_domain,
                key.h.as_ptr() as *const c_void,
                &mut h,
                &mut times,
                msg,
            )
        })?;
        t.pin_h2d_ns += times.h2d_ns;
        t.ntt_ns += times.ntt_ns;
        t.msm_h_ns += times.msm_ns;
        Ok(to_projective(&h))
    }

    fn tail_msm(&self, tail_points: &[G1Affine], classes: &ClassifiedScalars) -> Result<G1Projective> {
        let mut out = sys::G1::default();
        // SAFETY: as many points as scalars, both alive for the synchronous call.
        call("tail MSM", |msg| unsafe {
            sys::cuzk_gpu_msm(
                self.device,
                tail_points.as_ptr() as *const c_void,
                classes.tail_scalars.as_ptr() as *const c_void,
                tail_points.len(),
                &mut out,
                msg,
            )
        })?;
        Ok(to_projective(&out))
    }
}

/// The points of a query whose scalars are full-width, gathered contiguously for the device.
fn gather_tail<P: Copy + Send + Sync>(points: &[P], classes: &ClassifiedScalars) -> Vec<P> {
    classes.tail_indices.par_iter().map(|&i| points[i as usize]).collect()
}

/// The device's cost model of the 0/1 split, in ns, fitted to the 2KiB PoRep C2 and 2^22
/// circuits on the H200 with points streamed from host memory (docs/PERFORMANCE.md): batch
/// addition sends every point of the query to the device and scans it, whatever its scalar;
/// a 1-scalar left in the tail MSM costs its gather on the host, its transfer, and additions
/// into the one bucket all 1-scalars share. Splitting pays above ~28 % of 1-scalars.
const BATCH_ADD_NS_PER_QUERY_POINT: f64 = 12.0;
const ONE_IN_TAIL_NS: f64 = 42.0;

/// How the backend decides the 0/1 split per MSM: by the cost model, or forced
/// (`CUZK_GPU_SPLIT=always|never`, for measuring the model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitPolicy {
    CostModel,
    Always,
    Never,
}

impl SplitPolicy {
    fn from_env() -> Result<Self> {
        match std::env::var("CUZK_GPU_SPLIT").as_deref() {
            Err(_) | Ok("") | Ok("auto") => Ok(SplitPolicy::CostModel),
            Ok("always") => Ok(SplitPolicy::Always),
            Ok("never") => Ok(SplitPolicy::Never),
            Ok(other) => Err(Error::invalid(format!("CUZK_GPU_SPLIT={other:?}: expected auto, always or never"))),
        }
    }

    /// Whether batch addition of the 1-scalars pays for a query of `npoints`, against adding
    /// them to the tail MSM.
    fn split_pays(self, npoints: usize, ones: usize) -> bool {
        match self {
            SplitPolicy::Always => true,
            SplitPolicy::Never => false,
            SplitPolicy::CostModel => ones as f64 * ONE_IN_TAIL_NS > npoints as f64 * BATCH_ADD_NS_PER_QUERY_POINT,
        }
    }

    /// The classes the device uses for a query of `npoints`: as they are, or with the 1-scalars
    /// moved into the tail when their batch addition does not pay.
    fn apply<'a>(self, name: &str, npoints: usize, classes: &'a ClassifiedScalars) -> Cow<'a, ClassifiedScalars> {
        let mut classes = Cow::Borrowed(classes);
        if !self.split_pays(npoints, classes.ones.len()) {
            log::debug!("{name}: batch addition of {} 1-scalars does not pay over {npoints} points", classes.ones.len());
            classes.to_mut().fold_ones_into_tail();
        }
        classes
    }
}

/// One G1 query's MSM as the device computes it: the sum of the bases whose scalar is 1 by
/// batch addition (when the split pays) plus the tail MSM over the gathered points.
struct G1Msm<'a> {
    points: &'a [G1Affine],
    classes: Cow<'a, ClassifiedScalars>,
    tail_points: Vec<G1Affine>,
}

impl<'a> G1Msm<'a> {
    fn plan(name: &str, points: &'a [G1Affine], classes: &'a ClassifiedScalars, policy: SplitPolicy) -> Self {
        let classes = policy.apply(name, points.len(), classes);
        let tail_points = gather_tail(points, &classes);
        G1Msm { points, classes, tail_points }
    }

    /// Σ sᵢ·Pᵢ on the device, the batch addition timed into `batch_ns` and the tail into
    /// `tail_ns`.
    fn run(&self, gpu: &GpuBackend, batch_ns: &mut u64, tail_ns: &mut u64) -> Result<G1Projective> {
        let ones = if self.classes.ones.is_empty() {
            G1Projective::identity()
        } else {
            timed(batch_ns, || gpu.batch_add(self.points, &self.classes))?
        };
        Ok(ones + timed(tail_ns, || gpu.tail_msm(&self.tail_points, &self.classes))?)
    }
}

impl Backend for GpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Gpu
    }

    fn device_index(&self) -> i32 {
        self.device
    }

    fn compute_msms(&self, key: &ProvingKey, circuit: SynthesizedCircuit, cancel: &CancelToken, t: &mut Timings) -> Result<MsmResults> {
        let domain = Domain::for_len(circuit.num_constraints())
            .ok_or_else(|| Error::invalid("circuit has more constraints than the field's 2^32 FFT domain"))?;
        let layout = check_key_fits(key, &circuit, domain.size())?;
        let SynthesizedCircuit { a, b, c, input_assignment, aux_assignment, a_aux_density, b_input_density, b_aux_density } =
            circuit;
        let policy = self.split;

        let p = timed(&mut t.prep_msm_ns, || {
            PreparedMsms::new(&layout, &input_assignment, &aux_assignment, &a_aux_density, &b_input_density, &b_aux_density)
        });
        let [l, a_q, b_q] = timed(&mut t.prep_msm_ns, || {
            [G1Msm::plan("L", &key.l, &p.l, policy), G1Msm::plan("A", &key.a, &p.a, policy), G1Msm::plan("B_G1", &key.b_g1, &p.b, policy)]
        });
        drop((input_assignment, aux_assignment));
        cancel.check()?;

        let device_turn = timed(&mut t.queue_wait_ns, || self.in_use.lock().unwrap_or_else(|p| p.into_inner()));
        cancel.check()?;
        let h = self.quotient_msm(key, (a, b, c), domain.log_size, t)?;
        cancel.check()?;
        let l = l.run(self, &mut t.batch_add_ns, &mut t.msm_l_ns)?;
        let a = a_q.run(self, &mut t.batch_add_ns, &mut t.msm_a_ns)?;
        let b_g1 = b_q.run(self, &mut t.batch_add_ns, &mut t.msm_b_g1_ns)?;
        // On the device, not on the CPU cores beside it: measured faster at every size
        // (docs/PERFORMANCE.md). Always split: the cost model was fitted to G1 only.
        let b_g2 = self.b_g2_msm(&key.b_g2, &p.b, t)?;
        drop(device_turn);
        Ok(MsmResults { h, l, a, b_g1, b_g2 })
    }
}
