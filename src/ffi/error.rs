//! Errors and buffers the library hands to the caller, and the library's versions.

use std::ffi::{c_char, CStr, CString};

use super::boundary::{free_owned, free_owned_bytes, optional};
use super::CUZK_ABI_VERSION;
use crate::error::Status;

static VERSION: &CStr = match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
    Ok(v) => v,
    Err(_) => panic!("version string"),
};

/// An error: its status and a message. Owned by the caller; free with `cuzk_error_free`.
pub struct cuzk_error {
    pub(super) status: Status,
    pub(super) message: CString,
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
