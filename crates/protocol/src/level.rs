//! Log levels, shared by `_meta` (the level a request asks for) and
//! `notifications/message`.

use serde::{Deserialize, Serialize};

/// Syslog severities (RFC 5424), lowest first, so `>=` compares severity.
///
/// ```
/// use toolwire_protocol::LoggingLevel;
/// assert!(LoggingLevel::Error > LoggingLevel::Info);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Detailed debugging information.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// System is unusable.
    Emergency,
}
