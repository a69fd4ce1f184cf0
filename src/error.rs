//! Errors of the engine: a status code the C ABI can return plus a message for people.

use std::fmt;

/// Outcome of a cuzk call. The numeric values are part of the C ABI (`cuzk_status`): never
/// renumber, only append.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Ok = 0,
    /// A required pointer argument was NULL.
    NullArgument = 1,
    /// An argument is well-formed but not acceptable (wrong size, inconsistent C1, ...).
    InvalidArgument = 2,
    /// The C1 JSON (or another encoded input) could not be decoded.
    ParseError = 3,
    /// The Groth16 parameter (or verifying key) file does not exist in the cache directory.
    ParametersNotFound = 4,
    /// The parameter file exists but is unreadable or corrupt.
    ParametersInvalid = 5,
    /// A GPU (CUDA) operation failed.
    GpuError = 6,
    /// Host or device memory could not be allocated, or a key's points do not fit the host's
    /// available memory even after idle copies of other keys went (the call fails before it
    /// decodes them; the process goes on).
    OutOfMemory = 7,
    /// The call was cancelled by its caller.
    Cancelled = 8,
    /// A panic was caught at the C boundary; the message says where.
    Panic = 9,
    /// A bug or an unexpected failure inside cuzk or its dependencies.
    Internal = 10,
    /// The engine was not initialised, or initialised again with a different config.
    EngineState = 11,
    /// A proof was produced but failed verification (self-verify), or a proof was rejected.
    VerifyFailed = 12,
    /// PoSt vanilla proofs of some sectors do not verify (`cuzk_error_faulty_sectors` lists
    /// them): what filecoin-ffi reports as faulty sectors.
    FaultySectors = 13,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NullArgument => "null argument",
            Status::InvalidArgument => "invalid argument",
            Status::ParseError => "parse error",
            Status::ParametersNotFound => "parameters not found",
            Status::ParametersInvalid => "parameters invalid",
            Status::GpuError => "GPU error",
            Status::OutOfMemory => "out of memory",
            Status::Cancelled => "cancelled",
            Status::Panic => "panic",
            Status::Internal => "internal error",
            Status::EngineState => "engine state",
            Status::VerifyFailed => "verification failed",
            Status::FaultySectors => "faulty sectors",
        }
    }
}

/// An error with the status the C ABI reports and a message that says what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    pub message: String,
    /// With `Status::FaultySectors`: the sector numbers whose vanilla proofs do not verify.
    pub faulty_sectors: Vec<u64>,
}

/// The longest text of a dependency's error kept in a message, in characters.
const DEPENDENCY_MESSAGE_CHARS: usize = 1000;

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        Error {
            status,
            message: message.into(),
            faulty_sectors: Vec::new(),
        }
    }

    /// The vanilla proofs of `sectors` do not verify.
    pub fn faulty_sectors(sectors: Vec<u64>) -> Self {
        let mut error = Self::new(
            Status::FaultySectors,
            format!("the vanilla proofs of sectors {sectors:?} do not verify (faulty sectors)"),
        );
        error.faulty_sectors = sectors;
        error
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Status::InvalidArgument, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Status::Internal, message)
    }

    /// Wraps an error from a dependency (filecoin-proofs, bellperson) with what we were doing.
    /// The dependency's text is cut at [`DEPENDENCY_MESSAGE_CHARS`]: parsers quote the input
    /// they reject, which can be megabytes of caller data.
    pub fn from_dependency(status: Status, context: &str, err: impl fmt::Display) -> Self {
        let text = format!("{err:#}");
        let text = match text.char_indices().nth(DEPENDENCY_MESSAGE_CHARS) {
            Some((cut, _)) => format!("{}… ({} bytes in all)", &text[..cut], text.len()),
            None => text,
        };
        Self::new(status, format!("{context}: {text}"))
    }

    /// Prefixes the message with where it happened, keeping the status.
    pub fn context(mut self, context: &str) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.status.name())
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Turns a panic payload of any type into text (filecoin-ffi only understood `&'static str`
/// payloads, so its users saw "no unwind information" for every formatted panic).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(e) = payload.downcast_ref::<Error>() {
        e.to_string()
    } else if let Some(e) = payload.downcast_ref::<anyhow::Error>() {
        format!("{e:#}")
    } else {
        format!("panic with a payload of unknown type (type id {:?})", payload.type_id())
    }
}
