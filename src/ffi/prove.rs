//! Proving one sector: the options of prove calls, cancellation tokens, timings written to the
//! caller, and PoRep commit phase 2.

use std::mem::offset_of;

use super::boundary::{
    array32, boundary, free_owned, into_owned, optional, owned_bytes, read_sized, required_mut, slice, slice_mut, SizedOut, SizedStruct,
};
use super::{cuzk_bytes, cuzk_engine, cuzk_error, engine::engine_of};
use crate::cancel::CancelToken;
use crate::engine::Priority;
use crate::engine::{ProofOutput, ProveOptions};
use crate::error::{Error, Result, Status};
use crate::timings::Timings;

/// Largest C1 JSON accepted. A 32GiB sector's C1 is tens of megabytes; anything past this is
/// not a C1 and would only exhaust memory.
pub const CUZK_MAX_C1_JSON_BYTES: usize = 1 << 28;

/// A cancellation token: pass it in `cuzk_prove_options` and cancel it from any thread.
pub struct cuzk_cancel_token {
    token: CancelToken,
}

/// Options of one prove call; NULL means all defaults; zero-initialised fields are defaults.
///
/// Revisions; a caller compiled against an earlier one passes its smaller `struct_size` and
/// the later fields keep their defaults:
/// 1. `struct_size` and `cancel` (CUZK_PROVE_OPTIONS_SIZE_V1 bytes);
/// 2. adds `pin_device` and `device`;
/// 3. adds `priority`;
/// 4. adds `partition_timings` and `partition_timings_len`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cuzk_prove_options {
    /// sizeof(cuzk_prove_options) as the caller compiled it.
    pub struct_size: u32,
    /// Cancel this token (from any thread) to stop the call at its next phase boundary with
    /// CUZK_STATUS_CANCELLED. May be NULL. Must outlive the call.
    pub cancel: *const cuzk_cancel_token,
    // Revision 2.
    /// Run the GPU phases on CUDA device `device` instead of the least busy one.
    pub pin_device: bool,
    pub device: u32,
    // Revision 3.
    /// The class of the call's work, by deadline: CUZK_PRIORITY_NORMAL (0: the proof kind's
    /// own class), CUZK_PRIORITY_HIGH (1: the top class, WinningPoSt's),
    /// CUZK_PRIORITY_WINDOW_POST (2) or CUZK_PRIORITY_SEALING (3). A class takes each GPU
    /// before waiting calls of lower classes — so it overtakes a running batch at the batch's
    /// next partition boundary; the top class never waits for the host memory budget.
    pub priority: u32,
    // Revision 4.
    /// NULL, or an array of `partition_timings_len` cuzk_timings, each with its `struct_size`
    /// set: receives the timings of each partition the call proved, sector after sector (a
    /// failed sector has none), partitions in order; their `sector_index` and
    /// `partition_index` say whose they are, `queue_wait_ns` is 0 and `proving_wait_ns` the
    /// partition's wait for the proving stage. Entries past the proven partitions are left as
    /// they were; partitions past the array are not reported (a 32GiB sector has 10). Written
    /// during the call only.
    pub partition_timings: *mut Timings,
    pub partition_timings_len: usize,
}

impl Default for cuzk_prove_options {
    /// Every option at its default, `struct_size` this version's.
    fn default() -> Self {
        cuzk_prove_options {
            struct_size: size_of::<cuzk_prove_options>() as u32,
            cancel: std::ptr::null(),
            pin_device: false,
            device: 0,
            priority: CUZK_PRIORITY_NORMAL,
            partition_timings: std::ptr::null_mut(),
            partition_timings_len: 0,
        }
    }
}

/// `cuzk_prove_options.priority`: the proof kind's class (WinningPoSt: the top class;
/// WindowPoSt: the WindowPoSt class; PoRep C2: sealing).
pub const CUZK_PRIORITY_NORMAL: u32 = 0;
/// `cuzk_prove_options.priority`: the top class (block production), before every other.
pub const CUZK_PRIORITY_HIGH: u32 = 1;
/// `cuzk_prove_options.priority`: the WindowPoSt class, before sealing work.
pub const CUZK_PRIORITY_WINDOW_POST: u32 = 2;
/// `cuzk_prove_options.priority`: the sealing class (hours of slack), after every other.
pub const CUZK_PRIORITY_SEALING: u32 = 3;

/// The smallest `cuzk_prove_options.struct_size` accepted: the size of revision 1 (64-bit
/// targets).
pub const CUZK_PROVE_OPTIONS_SIZE_V1: u32 = 16;
const _: () = assert!(CUZK_PROVE_OPTIONS_SIZE_V1 as usize == offset_of!(cuzk_prove_options, pin_device));

// SAFETY: repr(C), plain data (integers, pointers, bools), starting with its u32 struct_size.
unsafe impl SizedStruct for cuzk_prove_options {
    const NAME: &'static str = "cuzk_prove_options";
    const MIN_SIZE: u32 = CUZK_PROVE_OPTIONS_SIZE_V1;
}

/// The smallest `cuzk_timings.struct_size` accepted: `struct_size` and `version`. The library
/// writes the fields that fit in the caller's `struct_size`.
pub const CUZK_TIMINGS_SIZE_MIN: u32 = 8;
const _: () = assert!(CUZK_TIMINGS_SIZE_MIN as usize == offset_of!(Timings, backend));

// SAFETY: repr(C), plain data (integers, pointers, bools), starting with its u32 struct_size.
unsafe impl SizedStruct for Timings {
    const NAME: &'static str = "cuzk_timings";
    const MIN_SIZE: u32 = CUZK_TIMINGS_SIZE_MIN;
}

/// A new, not yet cancelled token: the caller's, free with `cuzk_cancel_token_free`.
#[no_mangle]
pub extern "C" fn cuzk_cancel_token_new() -> *mut cuzk_cancel_token {
    into_owned(cuzk_cancel_token { token: CancelToken::new() })
}

/// Cancels every call using this token (now or later). Safe from any thread.
///
/// `token`: NULL (ignored) or a token from `cuzk_cancel_token_new` not yet freed.
#[no_mangle]
pub extern "C" fn cuzk_cancel_token_cancel(token: *const cuzk_cancel_token) {
    if let Some(t) = optional(token) {
        t.token.cancel();
    }
}

/// Frees a token.
///
/// `token`: NULL (ignored) or a token from `cuzk_cancel_token_new` not yet freed, which no call
/// is using any more; invalid afterwards.
#[no_mangle]
pub extern "C" fn cuzk_cancel_token_free(token: *mut cuzk_cancel_token) {
    free_owned(token);
}

/// The C1 JSON of a call, refused above the size limit.
pub(super) fn c1_json<'a>(ptr: *const u8, len: usize, name: &str) -> Result<&'a [u8]> {
    let json = slice(ptr, len, name)?;
    if json.len() > CUZK_MAX_C1_JSON_BYTES {
        return Err(Error::invalid(format!(
            "{name} is {} bytes, more than the {} byte limit",
            json.len(),
            CUZK_MAX_C1_JSON_BYTES
        )));
    }
    Ok(json)
}

/// The options of a prove call (NULL: defaults), and where its partitions' timings go.
pub(super) fn prove_options<'a>(options: *const cuzk_prove_options) -> Result<(ProveOptions, PartitionTimingsOut<'a>)> {
    let mut prove_options = ProveOptions::default();
    let mut partition_timings = PartitionTimingsOut(Vec::new());
    let unset = cuzk_prove_options {
        struct_size: 0,
        ..Default::default()
    };
    if let Some(options) = read_sized(options, unset)? {
        prove_options.cancel = optional(options.cancel).map(|t| t.token.clone());
        prove_options.device = options.pin_device.then_some(options.device);
        prove_options.priority = match options.priority {
            CUZK_PRIORITY_NORMAL => None,
            CUZK_PRIORITY_HIGH => Some(Priority::WinningPost),
            CUZK_PRIORITY_WINDOW_POST => Some(Priority::WindowPost),
            CUZK_PRIORITY_SEALING => Some(Priority::Sealing),
            other => {
                return Err(Error::invalid(format!(
                    "cuzk_prove_options.priority = {other}: expected CUZK_PRIORITY_NORMAL, _HIGH, _WINDOW_POST or _SEALING"
                )))
            }
        };
        if options.partition_timings_len > 0 && options.partition_timings.is_null() {
            return Err(Error::new(
                Status::NullArgument,
                format!("cuzk_prove_options.partition_timings is NULL (length {})", options.partition_timings_len),
            ));
        }
        let slots = slice_mut(
            options.partition_timings,
            options.partition_timings_len,
            "cuzk_prove_options.partition_timings",
        )?;
        partition_timings.0 = slots.iter_mut().map(|slot| TimingsOut::new(slot)).collect::<Result<_>>()?;
    }
    Ok((prove_options, partition_timings))
}

/// Where a call writes its partitions' timings (`cuzk_prove_options.partition_timings`).
pub(super) struct PartitionTimingsOut<'a>(Vec<TimingsOut<'a>>);

impl PartitionTimingsOut<'_> {
    /// Writes the partitions of `sectors` (caller's sector index, proven sector) in order.
    pub(super) fn write<'s>(self, sectors: impl Iterator<Item = (usize, &'s ProofOutput)>) {
        let partitions = sectors.flat_map(|(index, proven)| {
            proven.partitions.iter().map(move |t| Timings {
                sector_index: index as u32,
                ..*t
            })
        });
        for (slot, measured) in self.0.into_iter().zip(partitions) {
            slot.write(&measured);
        }
    }
}

/// Where a call writes timings: nowhere (NULL), or a `cuzk_timings` whose `struct_size` the
/// caller set.
pub(super) struct TimingsOut<'a>(Option<SizedOut<'a, Timings>>);

impl TimingsOut<'_> {
    pub(super) fn new(timings: *mut Timings) -> Result<Self> {
        Ok(TimingsOut(SizedOut::optional(timings)?))
    }

    pub(super) fn write(self, measured: &Timings) {
        if let Some(out) = self.0 {
            out.write(measured);
        }
    }
}

/// PoRep commit phase 2, with the inputs of filecoin-ffi's `seal_commit_phase2`: the JSON of
/// filecoin-proofs-api's `SealCommitPhase1Output`, the sector number and the 32-byte prover id.
/// On success `*proof_out` holds the proof (192 bytes per partition, filecoin-proofs' format)
/// and `timings`, when not NULL, the per-phase timings.
///
/// `engine`: not NULL, a handle from `cuzk_engine_new` not yet freed. `c1_json`:
/// `c1_json_len` readable bytes (NULL only when the length is 0), at most
/// CUZK_MAX_C1_JSON_BYTES. `prover_id`: not NULL, 32 readable bytes. `options`: NULL (all
/// defaults) or a cuzk_prove_options (see there). `proof_out`: not NULL; receives the proof
/// (the caller's, free with `cuzk_bytes_free`), NULL on failure. `timings`: NULL, or a
/// cuzk_timings with its `struct_size` set, written no further than that. `err`: NULL, or
/// where to store the call's error. All are read or written during the call only.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cuzk_seal_commit_phase2(
    engine: *const cuzk_engine,
    c1_json: *const u8,
    c1_json_len: usize,
    sector_id: u64,
    prover_id: *const u8,
    options: *const cuzk_prove_options,
    proof_out: *mut *mut cuzk_bytes,
    timings: *mut Timings,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let proof_out = required_mut(proof_out, "proof_out")?;
        *proof_out = std::ptr::null_mut();
        let engine = engine_of(engine)?;
        let c1_json = self::c1_json(c1_json, c1_json_len, "c1_json")?;
        let prover_id = array32(prover_id, "prover_id")?;
        let timings = TimingsOut::new(timings)?;
        let (options, partition_timings) = prove_options(options)?;
        let proven = engine.seal_commit_phase2(c1_json, sector_id, prover_id, &options)?;
        timings.write(&proven.timings);
        partition_timings.write(std::iter::once((0, &proven)));
        *proof_out = owned_bytes(proven.proof);
        Ok(())
    })
}
