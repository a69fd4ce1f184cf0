//! Errors and buffers the library hands to the caller, and the library's versions.

use std::ffi::{c_char, CStr, CString};

use super::boundary::{free_owned, free_owned_bytes, optional, optional_mut};
use super::CUZK_ABI_VERSION;
use crate::error::Status;

static VERSION: &CStr = match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
    Ok(v) => v,
    Err(_) => panic!("version string"),
};

/// An error: its status, a message and, for CUZK_STATUS_FAULTY_SECTORS, the faulty sectors.
/// Owned by the caller; free with `cuzk_error_free`.
pub struct cuzk_error {
    pub(super) status: Status,
    pub(super) message: CString,
    pub(super) faulty_sectors: Vec<u64>,
}

/// Bytes owned by the library (a proof). Free with `cuzk_bytes_free`.
#[repr(C)]
pub struct cuzk_bytes {
    pub data: *const u8,
    pub len: usize,
}

/// The library version ("0.1.0"): a static NUL-terminated string, valid for the life of the
/// process; not to be freed.
#[no_mangle]
pub extern "C" fn cuzk_version() -> *const c_char {
    VERSION.as_ptr()
}

/// CUZK_ABI_VERSION of the library actually loaded (compare with the header's macro).
#[no_mangle]
pub extern "C" fn cuzk_abi_version() -> u32 {
    CUZK_ABI_VERSION
}

/// The status of an error.
///
/// `err`: NULL (answers CUZK_STATUS_NULL_ARGUMENT) or an error from this library not yet freed.
#[no_mangle]
pub extern "C" fn cuzk_error_status(err: *const cuzk_error) -> Status {
    optional(err).map_or(Status::NullArgument, |e| e.status)
}

/// The message of an error (NUL-terminated UTF-8). Never NULL.
///
/// `err`: NULL (answers "(no error)") or an error from this library not yet freed. The
/// message belongs to `err`: valid until `cuzk_error_free(err)`.
#[no_mangle]
pub extern "C" fn cuzk_error_message(err: *const cuzk_error) -> *const c_char {
    match optional(err) {
        Some(e) => e.message.as_ptr(),
        None => c"(no error)".as_ptr(),
    }
}

/// The sector numbers whose PoSt vanilla proofs do not verify, for an error of status
/// CUZK_STATUS_FAULTY_SECTORS (what filecoin-ffi reports as faulty sectors); 0 and NULL for
/// any other error. Returns their count and points `*sectors_out` at them.
///
/// `err`: NULL (answers 0) or an error from this library not yet freed. `sectors_out`: NULL
/// or writable; the array belongs to `err`: valid until `cuzk_error_free(err)`.
#[no_mangle]
pub extern "C" fn cuzk_error_faulty_sectors(err: *const cuzk_error, sectors_out: *mut *const u64) -> usize {
    let sectors = optional(err).map_or(&[][..], |e| &e.faulty_sectors[..]);
    if let Some(out) = optional_mut(sectors_out) {
        *out = if sectors.is_empty() { std::ptr::null() } else { sectors.as_ptr() };
    }
    sectors.len()
}

/// Frees an error.
///
/// `err`: NULL (ignored) or an error from this library not yet freed; invalid afterwards.
#[no_mangle]
pub extern "C" fn cuzk_error_free(err: *mut cuzk_error) {
    free_owned(err);
}

/// Frees bytes returned by the library.
///
/// `bytes`: NULL (ignored) or bytes from this library not yet freed; invalid afterwards,
/// with the memory `bytes->data` points to.
#[no_mangle]
pub extern "C" fn cuzk_bytes_free(bytes: *mut cuzk_bytes) {
    free_owned_bytes(bytes);
}
