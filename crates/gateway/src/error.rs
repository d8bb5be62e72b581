//! Why the gateway could not start.

use toolwire_server::RegistrationError;

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// Two tools would be exposed under one name.
    #[error(
        "two tools would be exposed as {name:?}: {first_tool:?} of upstream {first:?} and \
         {second_tool:?} of upstream {second:?}; give one upstream another prefix, or deny one tool"
    )]
    Collision {
        /// The exposed name.
        name: String,
        /// The upstream that had it first.
        first: String,
        /// Its tool.
        first_tool: String,
        /// The upstream that wanted it too.
        second: String,
        /// Its tool.
        second_tool: String,
    },
    /// The lock file cannot be read.
    #[error("cannot read the lock file: {0}")]
    Lock(std::io::Error),
    /// The audit file cannot be opened.
    #[error("cannot open the audit log: {0}")]
    Audit(std::io::Error),
    /// `TOOLWIRE_STATE_KEYS` holds a key that does not parse.
    #[error("{0}")]
    StateKeys(String),
    /// The server refused a definition.
    #[error("cannot serve the upstreams' tools: {0}")]
    Build(#[from] RegistrationError),
}
