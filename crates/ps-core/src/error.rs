//! The one error type of ps-core.
//!
//! Each variant is a distinct failure a caller may want to tell apart; the Python bindings map
//! them one to one onto `MXNetError` subclasses. Errors that a server reports over the data plane
//! travel as an [`ErrorCode`] plus the server's message and come back as the same variant; errors
//! of the control plane travel as a gRPC status whose details name the variant (`status`).

mod status;

use std::borrow::Cow;
use std::io;

/// Result alias used throughout ps-core.
pub type Result<T, E = PsError> = std::result::Result<T, E>;

/// Everything that can go wrong in the parameter server.
#[derive(Debug, thiserror::Error)]
pub enum PsError {
    /// A setting (environment variable or flag) is missing or malformed.
    #[error("{var}: {reason}")]
    Config {
        var: Cow<'static, str>,
        reason: String,
    },

    /// The operating system refused an operation (socket, file).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },

    /// The peer failed the shared-secret handshake, or we failed its.
    #[error("authentication failed: {0}")]
    Auth(String),

    /// Bytes on a connection do not form a valid frame or message.
    #[error("protocol error: {0}")]
    Protocol(String),

    /// An array's shape or dtype differs from the key's initialisation.
    #[error("{0}")]
    ShapeMismatch(String),

    /// A pull or push of a key that was never initialised.
    #[error("{0}")]
    UnknownKey(String),

    /// The server refused a request that is well formed but not allowed now (for example a push
    /// in dist_async before any optimizer is set).
    #[error("{0}")]
    Rejected(String),

    /// An optimizer name or hyper-parameter the servers cannot run.
    #[error("{0}")]
    Optimizer(String),

    /// Row ids of a row-sparse push or pull that cannot be used: not strictly increasing, out
    /// of the key's rows, or a key that is not row-sparse.
    #[error("{0}")]
    InvalidRows(String),

    /// A node of the job stopped responding; the message names its role, rank and host.
    #[error("{0}")]
    NodeLost(String),

    /// A call to the scheduler failed.
    #[error("scheduler: {0}")]
    Rpc(String),

    /// The job is shutting down; no more requests are served.
    #[error("the job is shutting down")]
    Shutdown,
}

impl PsError {
    /// Wraps an I/O error with what we were doing.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        PsError::Io {
            context: context.into(),
            source,
        }
    }

    /// The data-plane code used to send this error to a worker.
    pub fn code(&self) -> ErrorCode {
        match self {
            PsError::ShapeMismatch(_) => ErrorCode::ShapeMismatch,
            PsError::UnknownKey(_) => ErrorCode::UnknownKey,
            PsError::Optimizer(_) => ErrorCode::Optimizer,
            PsError::InvalidRows(_) => ErrorCode::InvalidRows,
            PsError::NodeLost(_) => ErrorCode::NodeLost,
            PsError::Shutdown => ErrorCode::Shutdown,
            _ => ErrorCode::Rejected,
        }
    }

    /// Rebuilds the error a server reported with `code` and `message`.
    pub fn from_code(code: ErrorCode, message: String) -> Self {
        match code {
            ErrorCode::ShapeMismatch => PsError::ShapeMismatch(message),
            ErrorCode::UnknownKey => PsError::UnknownKey(message),
            ErrorCode::Optimizer => PsError::Optimizer(message),
            ErrorCode::InvalidRows => PsError::InvalidRows(message),
            ErrorCode::NodeLost => PsError::NodeLost(message),
            ErrorCode::Shutdown => PsError::Shutdown,
            ErrorCode::Rejected => PsError::Rejected(message),
        }
    }
}

/// Status of one entry of a reply frame; `0` on the wire means success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ErrorCode {
    Rejected = 1,
    ShapeMismatch = 2,
    UnknownKey = 3,
    Optimizer = 4,
    NodeLost = 5,
    Shutdown = 6,
    InvalidRows = 7,
}

impl ErrorCode {
    /// Decodes a non-zero status byte; unknown codes read as a generic refusal.
    pub fn from_u8(v: u8) -> ErrorCode {
        match v {
            2 => ErrorCode::ShapeMismatch,
            3 => ErrorCode::UnknownKey,
            4 => ErrorCode::Optimizer,
            5 => ErrorCode::NodeLost,
            6 => ErrorCode::Shutdown,
            7 => ErrorCode::InvalidRows,
            _ => ErrorCode::Rejected,
        }
    }
}
