//! The settings of a stdio transport, shared by its builder and its links.

use std::time::Duration;

/// Settings of a stdio transport.
#[derive(Debug, Clone)]
pub(super) struct StdioConfig {
    pub(super) shutdown_grace: Duration,
    pub(super) term_grace: Duration,
    pub(super) max_line_bytes: usize,
    pub(super) stderr_lines: usize,
}

impl Default for StdioConfig {
    fn default() -> Self {
        StdioConfig {
            shutdown_grace: Duration::from_secs(5),
            term_grace: Duration::from_secs(2),
            max_line_bytes: 16 * 1024 * 1024,
            stderr_lines: 200,
        }
    }
}
