//! Cooperative cancellation: the caller flips a token, the engine stops at its next check
//! (phase boundaries, and every few thousand allocations during synthesis).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bellperson::SynthesisError;

use crate::error::{Error, Result, Status};

#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// `Err(Cancelled)` once the token has been cancelled.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::new(Status::Cancelled, "the call was cancelled"))
        } else {
            Ok(())
        }
    }
}

/// Synthesis looks at the cancel token once per this many allocations.
const CANCEL_CHECK_INTERVAL: usize = 1 << 14;

/// Synthesis stops with an `Interrupted` I/O error once `cancel` is set, looking at it before
/// every [`CANCEL_CHECK_INTERVAL`]-th allocation (`allocated` so far).
pub(crate) fn check_cancel(allocated: usize, cancel: Option<&CancelToken>) -> std::result::Result<(), SynthesisError> {
    if allocated % CANCEL_CHECK_INTERVAL == 0 && cancel.is_some_and(|c| c.is_cancelled()) {
        return Err(SynthesisError::IoError(std::io::Error::new(std::io::ErrorKind::Interrupted, "cancelled")));
    }
    Ok(())
}
