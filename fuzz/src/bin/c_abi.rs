//! Every C ABI entry point's argument handling. One input is one call: a byte picks the entry
//! point, a 32-bit mask which of its pointers are NULL, then come its numbers (registered
//! proofs as raw values), 32-byte arguments, options and output structs with the caller's
//! `struct_size`, and its byte arguments as chunks (seeds: real 2KiB inputs, `make-seeds.py`).
//!
//! The engine it calls runs on the CPU with an empty parameter directory, so a call stops at
//! the missing key, after its input checks: it never proves. A crash is what a C caller keeping
//! the documented pointer contract must never see: CUZK_STATUS_PANIC, a failure without an
//! error object, an error whose status differs from the call's, a message over 4 KiB, and any
//! prove or verify call that succeeds without a key.

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

use cuzk::error::Status;
use cuzk::ffi::*;
use cuzk::timings::Timings;
use cuzk_fuzz::Reader;

/// Bytes of an input struct the library may read: more than any revision of it, so a
/// `struct_size` past the current one reads zeros, as from a caller compiled against a later
/// header.
const STRUCT_ROOM: usize = 256;

#[repr(C, align(8))]
struct Room([u8; STRUCT_ROOM]);

struct Handles {
    engine: *mut cuzk_engine,
    cancelled: *mut cuzk_cancel_token,
    live: *mut cuzk_cancel_token,
}

// SAFETY: the engine and tokens are Sync; these handles are never freed.
unsafe impl Send for Handles {}
unsafe impl Sync for Handles {}

fn handles() -> &'static Handles {
    static HANDLES: OnceLock<Handles> = OnceLock::new();
    HANDLES.get_or_init(|| {
        let dir = std::env::temp_dir().join("cuzk-fuzz-no-parameters");
        std::fs::create_dir_all(&dir).expect("parameter directory");
        assert!(
            std::fs::read_dir(&dir).expect("parameter directory").next().is_none(),
            "{} must stay empty: the harness must never prove",
            dir.display()
        );
        // A verify call with a NULL engine reads its keys from here: the same empty directory.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
        let dir = CString::new(dir.to_str().expect("UTF-8 temp dir")).expect("no NUL");
        // SAFETY: all-zero is a valid cuzk_config (NULL directory, zero numbers).
        let mut config: cuzk_config = unsafe { std::mem::zeroed() };
        config.struct_size = size_of::<cuzk_config>() as u32;
        assert_eq!(cuzk_config_default(&mut config, null_mut()), Status::Ok);
        config.cpu_only = true;
        config.num_threads = 1;
        config.param_cache_dir = dir.as_ptr();
        let mut engine = null_mut();
        assert_eq!(cuzk_engine_new(&config, &mut engine, null_mut()), Status::Ok);
        let cancelled = cuzk_cancel_token_new();
        cuzk_cancel_token_cancel(cancelled);
        Handles {
            engine,
            cancelled,
            live: cuzk_cancel_token_new(),
        }
    })
}

/// Which pointer arguments of the call are NULL: bit i for the i-th one asked for.
struct Nulls {
    mask: u32,
    next: u32,
}

impl Nulls {
    fn pick<T>(&mut self, ptr: *const T) -> *const T {
        let is_null = self.mask >> (self.next % 32) & 1 == 1;
        self.next += 1;
        if is_null {
            null()
        } else {
            ptr
        }
    }

    fn pick_mut<T>(&mut self, ptr: *mut T) -> *mut T {
        self.pick(ptr).cast_mut()
    }
}

/// An output `cuzk_timings` with the caller's `struct_size`, at most the real size (the
/// library writes that many bytes).
fn timings(input: &mut Reader) -> Timings {
    let mut t = Timings::new();
    t.struct_size = input.u32().min(size_of::<Timings>() as u32);
    t
}

/// The call's `cuzk_prove_options` (in `room`) and its partition timings array, or NULL.
fn options(input: &mut Reader, room: &mut Room, partition_timings: &mut Vec<Timings>) -> *const cuzk_prove_options {
    let mode = input.u8();
    if mode % 3 == 0 {
        return null();
    }
    let h = handles();
    let mut options = cuzk_prove_options::default();
    if mode % 3 == 2 {
        options.struct_size = input.u32() % (STRUCT_ROOM as u32 + 1);
        options.cancel = match input.u8() % 3 {
            0 => null(),
            1 => h.cancelled,
            _ => h.live,
        };
        options.pin_device = input.u8() % 2 == 1;
        options.device = input.u32();
        options.priority = input.u32();
        let count = usize::from(input.u8() % 4);
        partition_timings.extend((0..count).map(|_| timings(input)));
        options.partition_timings = partition_timings.as_mut_ptr();
        options.partition_timings_len = count;
    }
    room.0 = [0; STRUCT_ROOM];
    // SAFETY: Room is 8-aligned and larger than cuzk_prove_options.
    unsafe { std::ptr::write(room.0.as_mut_ptr().cast::<cuzk_prove_options>(), options) };
    room.0.as_ptr().cast()
}

/// Byte slices as the C ABI takes them.
fn byte_slices(chunks: &[&[u8]]) -> Vec<cuzk_byte_slice> {
    chunks
        .iter()
        .map(|c| cuzk_byte_slice {
            data: c.as_ptr(),
            len: c.len(),
        })
        .collect()
}

/// What a call may return, as this harness runs it.
#[derive(PartialEq)]
enum Expect {
    /// A prove or verify call: it has no key, so it must fail.
    Failure,
    /// Parsing, status, key management: either.
    Any,
}

/// CUZK_FUZZ_TRACE set: each call's error is printed (to see what an input reaches).
fn tracing() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("CUZK_FUZZ_TRACE").is_some())
}

/// The crash AFL records.
fn broken(why: String) -> ! {
    eprintln!("broken promise: {why}");
    std::process::abort()
}

/// Aborts when the call broke the C ABI's promises; frees its error.
fn settle(status: Status, err: *mut cuzk_error, asked_for_error: bool, expect: Expect) {
    if status == Status::Panic {
        let message = (!err.is_null()).then(|| unsafe { CStr::from_ptr(cuzk_error_message(err)) }.to_string_lossy().into_owned());
        broken(format!("CUZK_STATUS_PANIC: {message:?}"));
    }
    if status == Status::Ok && expect == Expect::Failure {
        broken("a prove or verify call succeeded without any key".into());
    }
    if err.is_null() {
        if status != Status::Ok && asked_for_error {
            broken(format!("{status:?} without an error object"));
        }
        return;
    }
    if status == Status::Ok {
        broken("an error object from a call that succeeded".into());
    }
    if tracing() {
        // SAFETY: as below.
        eprintln!("{status:?}: {}", unsafe { CStr::from_ptr(cuzk_error_message(err)) }.to_string_lossy());
    }
    if cuzk_error_status(err) != status {
        broken(format!("error status {:?}, call status {status:?}", cuzk_error_status(err)));
    }
    // SAFETY: the library's message is a NUL-terminated string owned by `err`.
    let message = unsafe { CStr::from_ptr(cuzk_error_message(err)) };
    if message.to_bytes().len() > 4096 {
        broken(format!("a {}-byte message", message.to_bytes().len()));
    }
    let mut sectors = null();
    let count = cuzk_error_faulty_sectors(err, &mut sectors);
    if count > 0 && sectors.is_null() {
        broken("faulty sectors without their array".into());
    }
    cuzk_error_free(err);
}

/// A batch result as the caller hands it in: nothing in it yet but its timings pointer.
fn unwritten(timings: *mut Timings) -> cuzk_sector_result {
    cuzk_sector_result {
        status: Status::Ok,
        proof: null_mut(),
        error: null_mut(),
        timings,
    }
}

/// A batch call's results: each sector's outcome when the call succeeded (a failure, without
/// keys), none at all when it failed as a whole. Frees them.
fn settle_results(status: Status, results: &[cuzk_sector_result]) {
    for result in results {
        if status == Status::Ok {
            settle(result.status, result.error, true, Expect::Failure);
        } else if !result.error.is_null() || !result.proof.is_null() {
            broken(format!("a batch call failed with {status:?} but left results behind"));
        }
        cuzk_bytes_free(result.proof);
    }
}

extern "C" fn ignore_record(_: *mut c_void, _: u32, _: *const c_char, _: *const c_char) {}

/// One call, its arguments read from `input`.
fn call(input: &mut Reader) {
    let h = handles();
    let op = input.u8();
    let mut nulls = Nulls { mask: input.u32(), next: 0 };
    let mut err: *mut cuzk_error = null_mut();
    let err_ptr = nulls.pick_mut(&mut err as *mut _);
    let engine = nulls.pick(h.engine.cast_const());
    let mut room = Room([0; STRUCT_ROOM]);
    let mut partition_timings = Vec::new();
    let mut proof: *mut cuzk_bytes = null_mut();
    let proof_out = nulls.pick_mut(&mut proof as *mut _);
    let mut valid = false;
    let valid_out = nulls.pick_mut(&mut valid as *mut _);
    let registered = input.u32();
    let mut t = timings(input);
    let timings_out = nulls.pick_mut(&mut t as *mut _);
    let [a, b, c, d, e] = std::array::from_fn(|_| input.array32());
    let number = input.u64();

    let (status, expect) = match op % 15 {
        0 => {
            let mut info = Room([0; STRUCT_ROOM]);
            let size = input.u32() % (STRUCT_ROOM as u32 + 1);
            info.0[..4].copy_from_slice(&size.to_le_bytes());
            let json = input.rest();
            let info_ptr = nulls.pick_mut(info.0.as_mut_ptr().cast::<cuzk_c1_info>());
            (cuzk_c1_info_parse(nulls.pick(json.as_ptr()), json.len(), info_ptr, err_ptr), Expect::Any)
        }
        1 => {
            let options = options(input, &mut room, &mut partition_timings);
            let json = input.rest();
            let status = cuzk_seal_commit_phase2(
                engine,
                nulls.pick(json.as_ptr()),
                json.len(),
                number,
                nulls.pick(a.as_ptr()),
                options,
                proof_out,
                timings_out,
                err_ptr,
            );
            (status, Expect::Failure)
        }
        2 => {
            let options = options(input, &mut room, &mut partition_timings);
            let jsons = input.chunks();
            let mut result_timings: Vec<Timings> = jsons.iter().map(|_| Timings::new()).collect();
            let requests: Vec<cuzk_sector_request> = jsons
                .iter()
                .enumerate()
                .map(|(i, json)| cuzk_sector_request {
                    c1_json: nulls.pick(json.as_ptr()),
                    c1_json_len: json.len(),
                    sector_id: number.wrapping_add(i as u64),
                    prover_id: nulls.pick(a.as_ptr()),
                })
                .collect();
            let mut results: Vec<cuzk_sector_result> = result_timings.iter_mut().map(|t| unwritten(nulls.pick_mut(t))).collect();
            let status = cuzk_seal_commit_phase2_batch(
                engine,
                nulls.pick(requests.as_ptr()),
                nulls.pick_mut(results.as_mut_ptr()),
                requests.len(),
                options,
                err_ptr,
            );
            settle_results(status, &results);
            (status, Expect::Any)
        }
        3 => {
            let proof_bytes = input.rest();
            let status = cuzk_verify_seal(
                engine,
                registered,
                nulls.pick(a.as_ptr()),
                nulls.pick(b.as_ptr()),
                nulls.pick(c.as_ptr()),
                number,
                nulls.pick(d.as_ptr()),
                nulls.pick(e.as_ptr()),
                nulls.pick(proof_bytes.as_ptr()),
                proof_bytes.len(),
                valid_out,
                err_ptr,
            );
            (status, Expect::Failure)
        }
        4 | 5 => {
            let options = options(input, &mut room, &mut partition_timings);
            let partition_index = usize::from(input.u8());
            let chunks = input.chunks();
            let slices = byte_slices(&chunks);
            let vanilla = nulls.pick(slices.as_ptr());
            let status = if op % 15 == 4 {
                cuzk_generate_window_post_partition(
                    engine,
                    registered,
                    nulls.pick(a.as_ptr()),
                    nulls.pick(b.as_ptr()),
                    vanilla,
                    slices.len(),
                    partition_index,
                    options,
                    proof_out,
                    timings_out,
                    err_ptr,
                )
            } else {
                cuzk_generate_winning_post(
                    engine,
                    registered,
                    nulls.pick(a.as_ptr()),
                    nulls.pick(b.as_ptr()),
                    vanilla,
                    slices.len(),
                    options,
                    proof_out,
                    timings_out,
                    err_ptr,
                )
            };
            (status, Expect::Failure)
        }
        6 | 7 => {
            let count = usize::from(input.u8() % 8);
            let sectors: Vec<cuzk_post_sector> = (0..count)
                .map(|_| cuzk_post_sector {
                    sector_id: input.u64(),
                    comm_r: input.array32(),
                })
                .collect();
            let proof_bytes = input.rest();
            let verify = if op % 15 == 6 {
                cuzk_verify_window_post
            } else {
                cuzk_verify_winning_post
            };
            let status = verify(
                engine,
                registered,
                nulls.pick(a.as_ptr()),
                nulls.pick(b.as_ptr()),
                nulls.pick(sectors.as_ptr()),
                sectors.len(),
                nulls.pick(proof_bytes.as_ptr()),
                proof_bytes.len(),
                valid_out,
                err_ptr,
            );
            (status, Expect::Failure)
        }
        8 | 9 => {
            let options = options(input, &mut room, &mut partition_timings);
            let sectors = usize::from(input.u8() % 3) + 1;
            let chunks = input.chunks();
            let slices = byte_slices(&chunks);
            let request = cuzk_update_request {
                registered_update_proof: registered,
                comm_r_old: nulls.pick(a.as_ptr()),
                comm_r_new: nulls.pick(b.as_ptr()),
                comm_d_new: nulls.pick(c.as_ptr()),
                vanilla_proofs: nulls.pick(slices.as_ptr()),
                vanilla_proofs_len: slices.len(),
            };
            if op % 15 == 8 {
                let status = cuzk_generate_update_proof(engine, nulls.pick(&request), options, proof_out, timings_out, err_ptr);
                (status, Expect::Failure)
            } else {
                let requests: Vec<cuzk_update_request> = (0..sectors)
                    .map(|_| cuzk_update_request {
                        vanilla_proofs: nulls.pick(slices.as_ptr()),
                        ..request
                    })
                    .collect();
                let mut results: Vec<cuzk_sector_result> = (0..sectors).map(|_| unwritten(null_mut())).collect();
                let status = cuzk_generate_update_proof_batch(
                    engine,
                    nulls.pick(requests.as_ptr()),
                    nulls.pick_mut(results.as_mut_ptr()),
                    sectors,
                    options,
                    err_ptr,
                );
                settle_results(status, &results);
                (status, Expect::Any)
            }
        }
        10 => {
            let proof_bytes = input.rest();
            let status = cuzk_verify_update_proof(
                engine,
                registered,
                nulls.pick(a.as_ptr()),
                nulls.pick(b.as_ptr()),
                nulls.pick(c.as_ptr()),
                nulls.pick(proof_bytes.as_ptr()),
                proof_bytes.len(),
                valid_out,
                err_ptr,
            );
            (status, Expect::Failure)
        }
        11 => {
            let (mut load, mut upload) = (0u64, 0u64);
            let (load, upload) = (nulls.pick_mut(&mut load as *mut _), nulls.pick_mut(&mut upload as *mut _));
            let preload = match number % 3 {
                0 => cuzk_engine_preload_key,
                1 => cuzk_engine_preload_post_key,
                _ => cuzk_engine_preload_update_key,
            };
            (preload(engine, registered, load, upload, err_ptr), Expect::Failure)
        }
        12 => {
            let mut evicted = false;
            let evicted_out = nulls.pick_mut(&mut evicted as *mut _);
            let evict = match number % 3 {
                0 => cuzk_engine_evict_key,
                1 => cuzk_engine_evict_post_key,
                _ => cuzk_engine_evict_update_key,
            };
            (evict(engine, registered, evicted_out, err_ptr), Expect::Any)
        }
        14 => {
            // The process's log sink: set (with the raw level) and back to stderr.
            let callback: cuzk_log_callback = (number % 2 == 1).then_some(ignore_record);
            let status = cuzk_log_set_callback(callback, null_mut(), registered, err_ptr);
            settle(status, err, !err_ptr.is_null(), Expect::Any);
            err = null_mut();
            (cuzk_log_set_callback(None, null_mut(), 0, err_ptr), Expect::Any)
        }
        _ => {
            let mut config = Room([0; STRUCT_ROOM]);
            config.0[..4].copy_from_slice(&(registered % (STRUCT_ROOM as u32 + 1)).to_le_bytes());
            let status = cuzk_config_default(nulls.pick_mut(config.0.as_mut_ptr().cast()), err_ptr);
            settle(status, err, !err_ptr.is_null(), Expect::Any);
            err = null_mut();
            let mut json: *mut cuzk_bytes = null_mut();
            let status = cuzk_engine_status(engine, nulls.pick_mut(&mut json as *mut _), err_ptr);
            cuzk_bytes_free(json);
            let _: *const c_char = cuzk_version();
            (status, Expect::Any)
        }
    };
    settle(status, err, !err_ptr.is_null(), expect);
    cuzk_bytes_free(proof);
}

fn main() {
    afl::fuzz_nohook!(|data: &[u8]| {
        let outcome = std::panic::catch_unwind(|| call(&mut Reader::new(data)));
        if outcome.is_err() {
            std::process::abort();
        }
    });
}
