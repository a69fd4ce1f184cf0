//! The C ABI, exported as `cuzk_*` and described by include/cuzk.h, which cbindgen generates
//! from this module and the files it declares (build.rs). Rules every entry point follows:
//! - a panic never crosses the boundary: it becomes `CUZK_STATUS_PANIC` with its message;
//! - errors come back from the same call (status + optional owned `cuzk_error`), never from
//!   thread-local state: Go moves goroutines between OS threads;
//! - pointers: each entry point's documentation says which of its pointers may be NULL, who
//!   owns what they point to and how long it must stay valid. A required pointer that is NULL
//!   is reported as `CUZK_STATUS_NULL_ARGUMENT`; anything else the library cannot check (a
//!   dangling or misaligned pointer, a length longer than the memory behind it) is undefined
//!   behaviour, as in any C API. The library keeps none of the caller's pointers after the
//!   call returns;
//! - objects the library hands over (`cuzk_engine`, `cuzk_error`, `cuzk_bytes`,
//!   `cuzk_cancel_token`) belong to the caller until passed to their `_free` function, which
//!   accepts NULL;
//! - structs that may grow start with `struct_size`, set by the caller to its sizeof: the
//!   library reads and writes no byte past it, fields past it keep their defaults, and a
//!   `CUZK_*_SIZE_*` constant names the smallest size accepted.
//!
//! The entry points are safe Rust functions over raw pointers, like any C function: the
//! documented pointer contract is the caller's obligation (Rust callers too). They reach the
//! caller's memory only through the helpers of `boundary`, the one place that dereferences it.
#![allow(non_camel_case_types)]

mod boundary;
mod registered_proof;

// The header lists the entry points in the order cbindgen reads these modules (the blank
// lines keep rustfmt from sorting them).
mod error;

mod engine;

mod keys;

mod prove;

mod batch;

mod verify;

mod post;

mod update;

mod logging;

pub use batch::*;
pub use engine::*;
pub use error::*;
pub use keys::*;
pub use logging::*;
pub use post::*;
pub use prove::*;
pub use registered_proof::{post_proof_from_abi, seal_proof_from_abi, seal_proof_to_abi, update_proof_from_abi};
pub use update::*;
pub use verify::*;

/// Version of the C ABI in include/cuzk.h. Bumped only for incompatible changes.
pub const CUZK_ABI_VERSION: u32 = 1;
