//! The settings of a stdio transport, shared by its builder and its links.

use std::time::Duration;

use crate::transport::ProtocolMode;

/// Settings of a stdio transport.
#[derive(Debug, Clone)]
pub(super) struct StdioConfig {
    pub(super) shutdown_grace: Duration,
    pub(super) term_grace: Duration,
    pub(super) max_line_bytes: usize,
    pub(super) stderr_lines: usize,
    pub(super) mode: ProtocolMode,
    /// How long auto mode waits for the `server/discover` probe's answer.
    pub(super) probe_timeout: Duration,
    /// How long to wait for the answer to `initialize`.
    pub(super) handshake_timeout: Duration,
}

impl Default for StdioConfig {
    fn default() -> Self {
        StdioConfig {
            shutdown_grace: Duration::from_secs(5),
            term_grace: Duration::from_secs(2),
            max_line_bytes: 16 * 1024 * 1024,
            stderr_lines: 200,
            mode: ProtocolMode::Auto,
            probe_timeout: Duration::from_secs(3),
            handshake_timeout: Duration::from_secs(30),
        }
    }
}
