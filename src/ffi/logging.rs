//! The library's log records handed to the host program (its own and its dependencies').

use std::ffi::{c_char, c_void, CString};

use super::boundary::boundary;
use super::cuzk_error;
use crate::error::{Error, Status};
use crate::logging::{self, Sink};

/// `cuzk_log_set_callback`'s levels, most severe first: a callback given `max_level` receives
/// the records of that level and the ones above it.
pub const CUZK_LOG_ERROR: u32 = 1;
pub const CUZK_LOG_WARN: u32 = 2;
pub const CUZK_LOG_INFO: u32 = 3;
pub const CUZK_LOG_DEBUG: u32 = 4;
pub const CUZK_LOG_TRACE: u32 = 5;

/// Receives one log record: the `user_data` given with it, the record's level (CUZK_LOG_*),
/// its target (the module that logged it, e.g. "cuzk::engine::pipeline") and its message,
/// both NUL-terminated UTF-8 valid only during the call. Called on the library's threads, any
/// of them, possibly at the same time: it must be thread-safe, return quickly, and not call
/// `cuzk_log_set_callback`.
pub type cuzk_log_callback = Option<extern "C" fn(user_data: *mut c_void, level: u32, target: *const c_char, message: *const c_char)>;

/// The caller's pointer, passed back untouched on whichever thread logs.
struct UserData(*mut c_void);

// SAFETY: the library never dereferences it; the caller's contract makes it usable from the
// library's threads.
unsafe impl Send for UserData {}
unsafe impl Sync for UserData {}

impl UserData {
    fn get(&self) -> *mut c_void {
        self.0
    }
}

/// Sends the library's log records (its own and those of filecoin-proofs and bellperson
/// inside it) at `max_level` (CUZK_LOG_ERROR … CUZK_LOG_TRACE) or more severe to `callback`
/// instead of stderr, for the whole process, until called again. NULL `callback` sends them
/// back to stderr, filtered by RUST_LOG. Call it before starting the engine to catch its
/// first records. CUZK_STATUS_ENGINE_STATE when the process has another Rust logger (a Rust
/// host program installed its own: cuzk's records go there).
///
/// `callback`: NULL, or a function with `cuzk_log_callback`'s contract. `user_data`: passed
/// to every call of `callback`; must stay valid until the callback is replaced. `err`: NULL,
/// or where to store the call's error.
#[no_mangle]
pub extern "C" fn cuzk_log_set_callback(callback: cuzk_log_callback, user_data: *mut c_void, max_level: u32, err: *mut *mut cuzk_error) -> Status {
    boundary(err, || {
        let Some(callback) = callback else {
            return logging::set_sink(None);
        };
        let max = match max_level {
            CUZK_LOG_ERROR => log::LevelFilter::Error,
            CUZK_LOG_WARN => log::LevelFilter::Warn,
            CUZK_LOG_INFO => log::LevelFilter::Info,
            CUZK_LOG_DEBUG => log::LevelFilter::Debug,
            CUZK_LOG_TRACE => log::LevelFilter::Trace,
            other => {
                return Err(Error::invalid(format!(
                    "max_level {other}: not a CUZK_LOG_* level ({CUZK_LOG_ERROR}..={CUZK_LOG_TRACE})"
                )))
            }
        };
        let user_data = UserData(user_data);
        let sink: Sink = Box::new(move |level, target, message| {
            let c_string = |text: &str| CString::new(text.replace('\0', "\\0")).expect("NULs were replaced");
            let (target, message) = (c_string(target), c_string(message));
            callback(user_data.get(), level as u32, target.as_ptr(), message.as_ptr());
        });
        logging::set_sink(Some((sink, max)))
    })
}
