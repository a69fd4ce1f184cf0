//! Where C meets Rust: the panic boundary every entry point runs in, the objects handed over
//! to the caller, and the only dereferences of the caller's pointers.
//!
//! The pointer helpers are safe functions over raw pointers, as the entry points are: each
//! one checks what can be checked (NULL, `struct_size`) and relies, as its documentation
//! says, on the rest of the pointer contract that the calling entry point documents for C.

use std::ffi::{c_char, CStr, CString};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::{cuzk_bytes, cuzk_error};
use crate::error::{panic_message, Error, Result, Status};

/// Runs `f` behind the panic boundary and reports its outcome through `err_out`: NULL, or
/// where to store NULL on success and an owned `cuzk_error` on failure.
pub(super) fn boundary(err_out: *mut *mut cuzk_error, f: impl FnOnce() -> Result<()>) -> Status {
    let mut err_out = optional_mut(err_out);
    if let Some(out) = err_out.as_deref_mut() {
        *out = std::ptr::null_mut();
    }
    let err = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return Status::Ok,
        Ok(Err(e)) => e,
        Err(payload) => Error::new(Status::Panic, format!("panic inside cuzk: {}", panic_message(&*payload))),
    };
    let status = err.status;
    if let Some(out) = err_out {
        *out = error_object(err);
    }
    status
}

/// An owned error object for the caller (free with `cuzk_error_free`).
pub(super) fn error_object(err: Error) -> *mut cuzk_error {
    let message = CString::new(err.message.replace('\0', "\\0")).expect("NULs were replaced");
    into_owned(cuzk_error {
        status: err.status,
        message,
        faulty_sectors: err.faulty_sectors,
    })
}

fn null_argument(name: &str) -> Error {
    Error::new(Status::NullArgument, format!("{name} is NULL"))
}

// Pointers the caller lends for the duration of a call. Each relies on: NULL, or a pointer
// to a valid, aligned value of the type (or `len` of them) that nothing else writes during
// the call, and for the `_mut` ones that nothing else reads either.

/// `ptr` as a reference; NULL is the error CUZK_STATUS_NULL_ARGUMENT naming `name`.
pub(super) fn required<'a, T>(ptr: *const T, name: &str) -> Result<&'a T> {
    optional(ptr).ok_or_else(|| null_argument(name))
}

/// `ptr` as a mutable reference (an output); NULL is the error CUZK_STATUS_NULL_ARGUMENT.
pub(super) fn required_mut<'a, T>(ptr: *mut T, name: &str) -> Result<&'a mut T> {
    optional_mut(ptr).ok_or_else(|| null_argument(name))
}

/// `ptr` as a reference, None for NULL.
pub(super) fn optional<'a, T>(ptr: *const T) -> Option<&'a T> {
    // SAFETY: NULL or valid for the call (the entry point's contract).
    unsafe { ptr.as_ref() }
}

/// `ptr` as a mutable reference, None for NULL.
pub(super) fn optional_mut<'a, T>(ptr: *mut T) -> Option<&'a mut T> {
    // SAFETY: NULL or valid and not aliased for the call (the entry point's contract).
    unsafe { ptr.as_mut() }
}

/// `len` values at `ptr`. A length of 0 is the empty input whatever `ptr` is (Go passes NULL
/// for an empty slice); NULL with any other length is the error CUZK_STATUS_NULL_ARGUMENT.
pub(super) fn slice<'a, T>(ptr: *const T, len: usize, name: &str) -> Result<&'a [T]> {
    match (ptr.is_null(), len) {
        (_, 0) => Ok(&[]),
        (true, _) => Err(null_argument(name)),
        // SAFETY: the caller passes `len` readable values at `ptr`.
        (false, _) => Ok(unsafe { std::slice::from_raw_parts(ptr, len) }),
    }
}

/// `len` writable values at `ptr`, with the NULL rules of `slice`.
pub(super) fn slice_mut<'a, T>(ptr: *mut T, len: usize, name: &str) -> Result<&'a mut [T]> {
    match (ptr.is_null(), len) {
        (_, 0) => Ok(&mut []),
        (true, _) => Err(null_argument(name)),
        // SAFETY: the caller passes `len` writable values at `ptr`, not aliased for the call.
        (false, _) => Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) }),
    }
}

/// The 32 bytes at `ptr` (a commitment, a ticket, a prover id).
pub(super) fn array32(ptr: *const u8, name: &str) -> Result<[u8; 32]> {
    Ok(slice(ptr, 32, name)?.try_into().expect("32 bytes"))
}

/// The NUL-terminated string at `ptr`, None for NULL.
pub(super) fn optional_c_str<'a>(ptr: *const c_char) -> Option<&'a CStr> {
    // SAFETY: a non-NULL pointer is a NUL-terminated string valid for the call.
    (!ptr.is_null()).then(|| unsafe { CStr::from_ptr(ptr) })
}

// Objects handed over to the caller: boxed here, owned by the caller until it passes them
// back to their `_free` function.

/// `value` boxed for the caller; `free_owned` frees it.
pub(super) fn into_owned<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Frees an object from `into_owned`; NULL is ignored.
pub(super) fn free_owned<T>(ptr: *mut T) {
    if !ptr.is_null() {
        // SAFETY: made by `into_owned` with this T and freed once (the `_free` function's
        // contract).
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// `data` as bytes for the caller; `free_owned_bytes` frees them.
pub(super) fn owned_bytes(data: Vec<u8>) -> *mut cuzk_bytes {
    let data = Box::into_raw(data.into_boxed_slice());
    into_owned(cuzk_bytes {
        data: data as *const u8,
        len: data.len(),
    })
}

/// Frees bytes from `owned_bytes`; NULL is ignored.
pub(super) fn free_owned_bytes(bytes: *mut cuzk_bytes) {
    if bytes.is_null() {
        return;
    }
    // SAFETY: made by `owned_bytes` from a boxed slice of exactly `len` bytes, freed once.
    unsafe {
        let b = Box::from_raw(bytes);
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(b.data as *mut u8, b.len)));
    }
}

/// A struct that may grow: the caller's copy starts with its `struct_size`, and may be an
/// earlier, shorter revision than the library's.
///
/// # Safety
/// The type is `repr(C)` plain data (integers, pointers, `bool`s: whatever C code stores through
/// the header's declaration is a valid value), its first field is the `u32 struct_size`, and
/// `MIN_SIZE` covers at least that field.
pub(super) unsafe trait SizedStruct: Copy {
    /// The C name, for messages.
    const NAME: &'static str;
    /// The smallest `struct_size` accepted.
    const MIN_SIZE: u32;
}

/// The caller's `struct_size` (`size`), refused below `T::MIN_SIZE`.
fn checked_struct_size<T: SizedStruct>(size: u32) -> Result<usize> {
    if size < T::MIN_SIZE {
        return Err(Error::invalid(format!(
            "{}.struct_size is {size}, at least {} is needed (set it to sizeof)",
            T::NAME,
            T::MIN_SIZE
        )));
    }
    Ok(size as usize)
}

/// The caller's struct at `ptr` (None for NULL): the fields its `struct_size` covers, and
/// `defaults` for the later ones. Relies on: NULL, or `struct_size` readable bytes at `ptr`.
pub(super) fn read_sized<T: SizedStruct>(ptr: *const T, defaults: T) -> Result<Option<T>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: a struct as the caller compiled it, whose first field is the u32 struct_size
    // (SizedStruct).
    let size = checked_struct_size::<T>(unsafe { ptr.cast::<u32>().read() })?;
    let mut value = defaults;
    // SAFETY: the caller's struct has `size` readable bytes; at most size_of::<T>() of them are
    // copied into a plain-data T.
    unsafe { std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), (&mut value as *mut T).cast::<u8>(), size.min(size_of::<T>())) };
    Ok(Some(value))
}

/// The caller's struct that receives a result, written no further than its `struct_size`.
/// Relies on: `struct_size` writable bytes at the pointer, not aliased until written.
pub(super) struct SizedOut<'a, T> {
    ptr: *mut T,
    size: usize,
    caller: PhantomData<&'a mut T>,
}

impl<T: SizedStruct> SizedOut<'_, T> {
    /// The struct at `ptr`, None for NULL; an error when its `struct_size` is too small.
    pub(super) fn optional(ptr: *mut T) -> Result<Option<Self>> {
        if ptr.is_null() {
            return Ok(None);
        }
        // SAFETY: as in `read_sized`.
        let size = checked_struct_size::<T>(unsafe { ptr.cast::<u32>().read() })?;
        Ok(Some(SizedOut {
            ptr,
            size,
            caller: PhantomData,
        }))
    }

    /// The struct at `ptr`; NULL is the error CUZK_STATUS_NULL_ARGUMENT naming `name`.
    pub(super) fn required(ptr: *mut T, name: &str) -> Result<Self> {
        Self::optional(ptr)?.ok_or_else(|| null_argument(name))
    }

    /// Writes the fields of `value` that fit the caller's `struct_size`, all but
    /// `struct_size` itself, which stays the caller's.
    pub(super) fn write(self, value: &T) {
        const SKIP: usize = size_of::<u32>();
        let n = self.size.min(size_of::<T>());
        // SAFETY: the caller's struct has `size` writable bytes and ours size_of::<T>(); both
        // are plain-data repr(C) T whose first SKIP bytes are struct_size (SizedStruct).
        unsafe { std::ptr::copy_nonoverlapping((value as *const T).cast::<u8>().add(SKIP), self.ptr.cast::<u8>().add(SKIP), n - SKIP) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::*;

    #[test]
    fn panics_of_any_payload_become_errors() {
        let mut err = std::ptr::null_mut();
        let status = boundary(&mut err, || std::panic::panic_any(42u8));
        assert_eq!(status, Status::Panic);
        assert_eq!(cuzk_error_status(err), Status::Panic);
        let msg = unsafe { CStr::from_ptr(cuzk_error_message(err)) }.to_str().unwrap().to_owned();
        assert!(msg.contains("panic inside cuzk"), "{msg}");
        cuzk_error_free(err);
        let status = boundary(&mut err, || panic!("formatted {}", 7));
        assert_eq!(status, Status::Panic);
        let msg = unsafe { CStr::from_ptr(cuzk_error_message(err)) }.to_str().unwrap().to_owned();
        assert!(msg.contains("formatted 7"), "{msg}");
        cuzk_error_free(err);
    }

    #[test]
    fn sized_structs_are_read_and_written_up_to_the_callers_struct_size() {
        // A caller of revision 1 of cuzk_config: the bytes past its struct are not its own.
        let mut memory = [u64::MAX; size_of::<cuzk_config>() / 8];
        let config = memory.as_mut_ptr().cast::<cuzk_config>();
        unsafe { config.cast::<u32>().write(CUZK_CONFIG_SIZE_V1) };
        assert_eq!(cuzk_config_default(config, std::ptr::null_mut()), Status::Ok);
        let v1_words = CUZK_CONFIG_SIZE_V1 as usize / 8;
        assert_eq!(
            unsafe { config.cast::<u32>().read() },
            CUZK_CONFIG_SIZE_V1,
            "struct_size stays the caller's"
        );
        assert!(memory[..v1_words].iter().any(|&w| w != u64::MAX), "revision 1 is written");
        assert!(memory[v1_words..].iter().all(|&w| w == u64::MAX), "nothing past struct_size is written");

        // Fields past the caller's struct_size are not read: they keep the defaults.
        let options = cuzk_prove_options {
            struct_size: CUZK_PROVE_OPTIONS_SIZE_V1,
            pin_device: true,
            priority: 7,
            ..Default::default()
        };
        let read = read_sized(&options, cuzk_prove_options::default()).unwrap().unwrap();
        assert!(!read.pin_device);
        assert_eq!(read.priority, CUZK_PRIORITY_NORMAL);
        let too_small = cuzk_prove_options { struct_size: 8, ..options };
        let err = read_sized(&too_small, cuzk_prove_options::default()).err().unwrap();
        assert_eq!(err.status, Status::InvalidArgument);
        assert!(read_sized(std::ptr::null::<cuzk_prove_options>(), options).unwrap().is_none());
    }
}
