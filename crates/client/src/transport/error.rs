//! Why a transport failed. Authorization failures are one kind of it: the
//! HTTP transport authorizes through `auth/`.

use crate::auth::{AuthError, SendError};

/// Why the transport failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// Reading or writing failed, or the process could not be started.
    #[error("{0}")]
    Io(String),
    /// The server process exited or closed its output.
    #[error("server closed the connection{0}")]
    Closed(String),
    /// The HTTP server answered with an error status and no JSON-RPC error.
    #[error("HTTP {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The start of the body, for diagnostics.
        body: String,
    },
    /// A message could not be parsed.
    #[error("malformed message: {0}")]
    Malformed(String),
    /// Opening a legacy (2025-11-25 era) session failed: `initialize` was
    /// refused or answered with a version this client does not speak.
    #[error("legacy handshake failed: {0}")]
    Handshake(String),
    /// The transport was shut down.
    #[error("transport is shut down")]
    Shutdown,
    /// The server requires authorization and it could not be obtained.
    #[error("{0}")]
    Auth(#[from] AuthError),
}

impl From<SendError> for TransportError {
    fn from(error: SendError) -> Self {
        match error {
            SendError::Auth(error) => TransportError::Auth(error),
            SendError::Io(detail) => TransportError::Io(detail),
        }
    }
}
