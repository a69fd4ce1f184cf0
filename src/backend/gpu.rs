//! The GPU backend: H (7 NTTs + MSM), batch addition and tail MSMs of the G1 queries on a CUDA
//! device through cuda/ (sppark's kernels), B_G2 on the CPU cores. Prep_msm (the 0/1/tail
//! split) is shared with the CPU backend, so both feed their MSMs the same classes.

// sppark's device registry (select_gpu, ngpus) is compiled by its build script into its rlib:
// name the crate so that it is linked.
extern crate sppark;

use std::ffi::{c_char, c_void, CStr};
use std::sync::Mutex;

use blstrs::{Fp, G1Affine, G1Projective};
use group::prime::PrimeCurveAffine;
use group::Group;

use super::cpu::{b_g2_msm, Domain};
use super::prep::{ClassifiedScalars, PreparedMsms};
use super::{Backend, BackendKind};
use crate::cancel::CancelToken;
use crate::error::{Error, Result, Status};
use crate::groth16::{check_key_fits, MsmResults, ProvingKey};
use crate::synthesis::SynthesizedCircuit;
use crate::timings::{timed, Timings};

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
}

impl GpuBackend {
    pub fn new(device: i32) -> Result<Self> {
        let mut name = [0 as c_char; 256];
        let mut memory = 0u64;
        // SAFETY: out-pointers to locals of the sizes the C side writes.
        call("querying the CUDA device", |msg| unsafe { sys::cuzk_gpu_device_info(device, name.as_mut_ptr(), &mut memory, msg) })?;
        // SAFETY: NUL-terminated by the C side.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        log::info!("cuzk GPU backend on device {device}: {name}, {} GiB", memory >> 30);
        Ok(GpuBackend { device, name, in_use: Mutex::new(()) })
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
fn gather_tail(points: &[G1Affine], classes: &ClassifiedScalars) -> Vec<G1Affine> {
    classes.tail_indices.iter().map(|&i| points[i as usize]).collect()
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

        let device_turn = timed(&mut t.queue_wait_ns, || self.in_use.lock().unwrap_or_else(|p| p.into_inner()));
        cancel.check()?;
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
                domain.log_size,
                key.h.as_ptr() as *const c_void,
                &mut h,
                &mut times,
                msg,
            )
        })?;
        t.pin_h2d_ns += times.h2d_ns;
        t.ntt_ns += times.ntt_ns;
        t.msm_h_ns += times.msm_ns;
        drop((a, b, c));
        cancel.check()?;

        let (p, tails) = timed(&mut t.prep_msm_ns, || {
            let p = PreparedMsms::new(&layout, &input_assignment, &aux_assignment, &a_aux_density, &b_input_density, &b_aux_density);
            let tails = [gather_tail(&key.l, &p.l), gather_tail(&key.a, &p.a), gather_tail(&key.b_g1, &p.b)];
            (p, tails)
        });
        drop((input_assignment, aux_assignment));
        cancel.check()?;

        let (l_ones, a_ones, b_g1_ones) = timed(&mut t.batch_add_ns, || -> Result<_> {
            Ok((self.batch_add(&key.l, &p.l)?, self.batch_add(&key.a, &p.a)?, self.batch_add(&key.b_g1, &p.b)?))
        })?;
        let l = l_ones + timed(&mut t.msm_l_ns, || self.tail_msm(&tails[0], &p.l))?;
        let a = a_ones + timed(&mut t.msm_a_ns, || self.tail_msm(&tails[1], &p.a))?;
        let b_g1 = b_g1_ones + timed(&mut t.msm_b_g1_ns, || self.tail_msm(&tails[2], &p.b))?;
        drop(device_turn);
        cancel.check()?;
        let b_g2 = b_g2_msm(&key.b_g2, &p.b, t);
        Ok(MsmResults { h: to_projective(&h), l, a, b_g1, b_g2 })
    }
}
