//! The Rust mirror of cuda/cuzk_gpu.h: its `#[repr(C)]` structs and entry points, the
//! [`call`] helper that turns a code and message into an [`Error`], and the points it
//! returns as blstrs points. The layout checks below and the `static_assert`s in
//! cuda/cuzk_gpu.cu pin the same sizes, so a struct changed on one side only fails to build.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::mem::{align_of, offset_of, size_of};

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::prime::PrimeCurveAffine;
use group::Group;

use crate::error::{Error, Result, Status};

pub(super) const OK: c_int = 0;
pub(super) const OUT_OF_MEMORY: c_int = 2;

#[repr(C)]
#[derive(Default)]
pub(super) struct G1 {
    pub(super) x: [u64; 6],
    pub(super) y: [u64; 6],
    pub(super) infinity: u32,
    pub(super) padding: u32,
}

#[repr(C)]
#[derive(Default)]
pub(super) struct G2 {
    pub(super) x: [u64; 12],
    pub(super) y: [u64; 12],
    pub(super) infinity: u32,
    pub(super) padding: u32,
}

#[repr(C)]
#[derive(Default)]
pub(super) struct HTimes {
    pub(super) h2d_ns: u64,
    pub(super) spmv_ns: u64,
    pub(super) ntt_ns: u64,
}

/// The context's buffer set of the WinningPoSt class (CUZK_GPU_BUFFER_SETS): a call of that
/// class never touches the set (0) a partition of another class left H's coefficients in.
pub(super) const TOP_CLASS_BUFFERS: u32 = 1;
pub(super) const SHARED_BUFFERS: u32 = 0;

#[repr(C)]
pub(super) struct Message {
    pub(super) text: [c_char; 512],
}

pub(super) enum Context {}
pub(super) enum Key {}
pub(super) enum Shape {}
pub(super) enum Selection {}
/// A split witness's MSMs in flight (cuzk_gpu_split_witness_start).
pub(super) enum SplitWitness {}

#[repr(C)]
pub(super) struct Staging {
    pub(super) buffers: [*mut c_void; 2],
    pub(super) bytes: usize,
}

pub(super) const QUERY_H: u32 = 0;
pub(super) const QUERY_L: u32 = 1;
pub(super) const QUERY_A: u32 = 2;
pub(super) const QUERY_B_G1: u32 = 3;
pub(super) const QUERY_B_G2: u32 = 4;
pub(super) const QUERIES: usize = 5;

/// The MSM implementations (CUZK_GPU_MSM_*).
pub(super) const MSM_CUZK: u32 = 0;
pub(super) const MSM_SPPARK: u32 = 1;
pub(super) const MSM_CUZK_AFFINE: u32 = 2;

#[repr(C)]
pub(super) struct Points {
    pub(super) key: *const Key,
    pub(super) query: u32,
    pub(super) host: *const c_void,
    pub(super) n: usize,
}

#[repr(C)]
#[derive(Default)]
pub(super) struct Memory {
    pub(super) total: u64,
    pub(super) free: u64,
    pub(super) ntt_buffer_bytes: u64,
    pub(super) witness_buffer_bytes: u64,
}

#[repr(C)]
pub(super) struct CsrHost {
    pub(super) row_starts: *const u32,
    pub(super) columns: *const u32,
    pub(super) coefficient_ids: *const u32,
    pub(super) nonzeros: usize,
}

#[repr(C)]
pub(super) struct ShapeHost {
    pub(super) matrices: [CsrHost; 3],
    pub(super) coefficients: *const c_void,
    pub(super) num_coefficients: usize,
    pub(super) rows: usize,
    pub(super) variables: usize,
}

#[repr(C)]
pub(super) struct Witness {
    pub(super) kinds: *const u64,
    pub(super) full_offsets: *const u32,
    pub(super) full: *const c_void,
    pub(super) num_full: usize,
    pub(super) aux: *const c_void,
    pub(super) n: usize,
}

#[repr(C)]
pub(super) struct WitnessScalars {
    pub(super) z_len: usize,
    pub(super) first: usize,
    pub(super) selected: *const u32,
    pub(super) selected_offsets: *const u32,
    pub(super) resident: *const Selection,
}

#[repr(C)]
pub(super) struct SplitQuery {
    pub(super) ones_bitmap: *const u32,
    pub(super) tail_indices: *const u32,
    pub(super) tail_scalars: *const c_void,
    pub(super) tail_n: usize,
}

extern "C" {
    pub(super) fn cuzk_gpu_device_count(count: *mut c_int, msg: *mut Message) -> c_int;
    pub(super) fn cuzk_gpu_device_info(device: c_int, name: *mut c_char, total_memory: *mut u64, msg: *mut Message) -> c_int;
    pub(super) fn cuzk_gpu_context_new(device: c_int, out: *mut *mut Context, msg: *mut Message) -> c_int;
    pub(super) fn cuzk_gpu_context_free(ctx: *mut Context);
    pub(super) fn cuzk_gpu_context_release_buffers(ctx: *mut Context, msg: *mut Message) -> c_int;
    pub(super) fn cuzk_gpu_memory_info(ctx: *mut Context, out: *mut Memory, msg: *mut Message) -> c_int;
    pub(super) fn cuzk_gpu_pinned_alloc(device: c_int, bytes: usize, out: *mut *mut c_void, msg: *mut Message) -> c_int;
    pub(super) fn cuzk_gpu_pinned_free(ptr: *mut c_void);
    pub(super) fn cuzk_gpu_device_faulted(device: c_int, faulted: *mut c_int, msg: *mut Message) -> c_int;
    pub(super) fn cuzk_gpu_device_reset(device: c_int, msg: *mut Message) -> c_int;
    #[cfg(feature = "fault-injection")]
    pub(super) fn cuzk_gpu_inject_fault(ctx: *mut Context, msg: *mut Message) -> c_int;
    pub(super) fn cuzk_gpu_h_table_bits(n: usize, windows: *mut u32) -> u32;
    pub(super) fn cuzk_gpu_key_alloc(
        ctx: *mut Context,
        n: *const [usize; QUERIES],
        with_h_table: c_int,
        out: *mut *mut Key,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_key_build_h_table(ctx: *mut Context, key: *mut Key, msg: *mut Message) -> c_int;
    pub(super) fn cuzk_gpu_key_upload(
        ctx: *mut Context,
        key: *mut Key,
        query: u32,
        first: usize,
        count: usize,
        host: *const c_void,
        staging: *const Staging,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_key_upload_file_points(
        ctx: *mut Context,
        key: *mut Key,
        query: u32,
        first: usize,
        count: usize,
        file_bytes: *const c_void,
        staging: *const Staging,
        first_bad: *mut usize,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_key_free(key: *mut Key, context_lives: c_int);
    pub(super) fn cuzk_gpu_quotient(
        ctx: *mut Context,
        set: u32,
        a: *const c_void,
        b: *const c_void,
        c: *const c_void,
        n: usize,
        lg_domain: u32,
        staging: *const Staging,
        times: *mut HTimes,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_shape_upload(
        ctx: *mut Context,
        shape: *const ShapeHost,
        staging: *const Staging,
        out: *mut *mut Shape,
        bytes: *mut u64,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_shape_free(shape: *mut Shape, context_lives: c_int);
    pub(super) fn cuzk_gpu_quotient_r1cs(
        ctx: *mut Context,
        set: u32,
        shape: *const Shape,
        witness: *const Witness,
        lg_domain: u32,
        staging: *const Staging,
        times: *mut HTimes,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_witness_upload(
        ctx: *mut Context,
        set: u32,
        witness: *const Witness,
        staging: *const Staging,
        h2d_ns: *mut u64,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_h_msm(
        ctx: *mut Context,
        set: u32,
        lg_domain: u32,
        h_points: *const Points,
        first: usize,
        count: usize,
        implementation: u32,
        out: *mut G1,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_batch_add(
        ctx: *mut Context,
        points: *const Points,
        bitmap: *const u32,
        staging: *const Staging,
        out: *mut G1,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_msm(
        ctx: *mut Context,
        points: *const Points,
        indices: *const u32,
        scalars: *const c_void,
        n: usize,
        implementation: u32,
        out: *mut G1,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_batch_add_g2(
        ctx: *mut Context,
        points: *const Points,
        bitmap: *const u32,
        staging: *const Staging,
        out: *mut G2,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_msm_g2(
        ctx: *mut Context,
        points: *const Points,
        indices: *const u32,
        scalars: *const c_void,
        n: usize,
        implementation: u32,
        out: *mut G2,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_witness_msm(
        ctx: *mut Context,
        set: u32,
        points: *const Points,
        scalars: *const WitnessScalars,
        implementation: u32,
        staging: *const Staging,
        out: *mut G1,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_witness_msm_g2(
        ctx: *mut Context,
        set: u32,
        points: *const Points,
        scalars: *const WitnessScalars,
        implementation: u32,
        staging: *const Staging,
        out: *mut G2,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_classified_witness_msm(
        ctx: *mut Context,
        set: u32,
        points: *const Points,
        scalars: *const WitnessScalars,
        split_min_ones: u64,
        implementation: u32,
        staging: *const Staging,
        out: *mut G1,
        times: *mut [u64; 3],
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_classified_b_msms(
        ctx: *mut Context,
        set: u32,
        points: *const [Points; 2],
        scalars: *const WitnessScalars,
        implementation: u32,
        staging: *const Staging,
        b_g1: *mut G1,
        b_g2: *mut G2,
        times: *mut [u64; 5],
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_selection_upload(
        ctx: *mut Context,
        scalars: *const WitnessScalars,
        npoints: usize,
        staging: *const Staging,
        out: *mut *mut Selection,
        bytes: *mut u64,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_selection_free(selection: *mut Selection, context_lives: c_int);
    pub(super) fn cuzk_gpu_witness_msms_at_once(
        ctx: *mut Context,
        set: u32,
        lg_domain: u32,
        points: *const [Points; 5],
        scalars: *const [WitnessScalars; 3],
        staging: *const Staging,
        g1_out: *mut [G1; 4],
        g2_out: *mut G2,
        times: *mut [u64; 7],
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_split_witness_start(
        ctx: *mut Context,
        points: *const [Points; 4],
        queries: *const [SplitQuery; 4],
        implementation: u32,
        out: *mut *mut SplitWitness,
        msg: *mut Message,
    ) -> c_int;
    pub(super) fn cuzk_gpu_split_witness_free(witness: *mut SplitWitness, context_lives: c_int);
    pub(super) fn cuzk_gpu_split_msms_at_once(
        ctx: *mut Context,
        set: u32,
        lg_domain: u32,
        h_points: *const Points,
        witness: *mut SplitWitness,
        implementation: u32,
        g1_out: *mut [G1; 4],
        g2_out: *mut G2,
        times: *mut [u64; 7],
        msg: *mut Message,
    ) -> c_int;
    #[cfg(feature = "internals")]
    pub(super) fn cuzk_gpu_msm_by(
        ctx: *mut Context,
        points: *const Points,
        scalars: *const c_void,
        mont: c_int,
        implementation: u32,
        digit_bits: u32,
        out: *mut G1,
        msm_ns: *mut u64,
        msg: *mut Message,
    ) -> c_int;
    #[cfg(feature = "internals")]
    pub(super) fn cuzk_gpu_msm_by_g2(
        ctx: *mut Context,
        points: *const Points,
        scalars: *const c_void,
        mont: c_int,
        implementation: u32,
        digit_bits: u32,
        out: *mut G2,
        msm_ns: *mut u64,
        msg: *mut Message,
    ) -> c_int;
    #[cfg(test)]
    pub(super) fn cuzk_gpu_witness_classes_check(
        z: *const c_void,
        scalars: *const WitnessScalars,
        npoints: usize,
        split_min_ones: u64,
        counts: *mut [u64; 3],
        bitmap: *mut u32,
        tail_indices: *mut u32,
        tail_values: *mut c_void,
        msg: *mut Message,
    ) -> c_int;
    #[cfg(test)]
    pub(super) fn cuzk_gpu_affine_rounds_check(
        points: *const c_void,
        npoints: usize,
        keys: *const u32,
        entries: *const u32,
        m: usize,
        none: u32,
        rounds: u32,
        sums: *mut G1,
        msg: *mut Message,
    ) -> c_int;
}

// The layouts cuda/cuzk_gpu.cu checks too (pointers and size_t are 8 bytes on our targets).
const _: () = assert!(size_of::<G1>() == 104 && align_of::<G1>() == 8 && offset_of!(G1, infinity) == 96);
const _: () = assert!(size_of::<G2>() == 200 && align_of::<G2>() == 8 && offset_of!(G2, infinity) == 192);
const _: () = assert!(size_of::<HTimes>() == 24);
const _: () = assert!(size_of::<Message>() == 512);
const _: () = assert!(size_of::<Staging>() == 24 && offset_of!(Staging, bytes) == 16);
const _: () = assert!(size_of::<Points>() == 32 && offset_of!(Points, query) == 8 && offset_of!(Points, host) == 16 && offset_of!(Points, n) == 24);
// A wider `query` would fit in the padding after it, unseen by the size and offsets.
const _: () = assert!(field_bytes(|p: &Points| &p.query) == 4);
const _: () = assert!(size_of::<Memory>() == 32);
const _: () = assert!(size_of::<CsrHost>() == 32 && offset_of!(CsrHost, nonzeros) == 24);
const _: () = assert!(size_of::<ShapeHost>() == 128 && offset_of!(ShapeHost, coefficients) == 96 && offset_of!(ShapeHost, variables) == 120);
const _: () = assert!(size_of::<Witness>() == 48 && offset_of!(Witness, aux) == 32 && offset_of!(Witness, n) == 40);
const _: () =
    assert!(size_of::<WitnessScalars>() == 40 && offset_of!(WitnessScalars, selected_offsets) == 24 && offset_of!(WitnessScalars, resident) == 32);
const _: () = assert!(size_of::<SplitQuery>() == 32 && offset_of!(SplitQuery, tail_n) == 24);
// The points and scalars the entry points read from host memory: blst's affine points
// (CUZK_GPU_G1_AFFINE_BYTES, CUZK_GPU_G2_AFFINE_BYTES) and 32-byte scalars.
const _: () = assert!(size_of::<G1Affine>() == 96 && size_of::<G2Affine>() == 192 && size_of::<Scalar>() == 32);

/// The size of a struct's field, for the layout checks.
const fn field_bytes<S, F>(_: fn(&S) -> &F) -> usize {
    size_of::<F>()
}

/// Calls a cuda/ entry point and turns its code and message into an [`Error`].
pub(super) fn call(what: &str, f: impl FnOnce(*mut Message) -> i32) -> Result<()> {
    let mut msg = Message { text: [0; 512] };
    let code = f(&mut msg);
    if code == OK {
        return Ok(());
    }
    // SAFETY: the C side always NUL-terminates the message buffer.
    let text = unsafe { CStr::from_ptr(msg.text.as_ptr()) }.to_string_lossy().into_owned();
    let status = if code == OUT_OF_MEMORY { Status::OutOfMemory } else { Status::GpuError };
    Err(Error::new(status, format!("{what}: {text}")))
}

pub(super) fn to_projective(p: &G1) -> G1Projective {
    if p.infinity != 0 {
        return G1Projective::identity();
    }
    G1Affine::from_raw_unchecked(Fp::from_raw_unchecked(p.x), Fp::from_raw_unchecked(p.y), false).to_curve()
}

pub(super) fn to_projective_g2(p: &G2) -> G2Projective {
    if p.infinity != 0 {
        return G2Projective::identity();
    }
    let fp = |limbs: &[u64]| Fp::from_raw_unchecked(limbs.try_into().expect("6 limbs"));
    let fp2 = |c: &[u64; 12]| Fp2::new(fp(&c[..6]), fp(&c[6..]));
    G2Affine::from_raw_unchecked(fp2(&p.x), fp2(&p.y), false).to_curve()
}
