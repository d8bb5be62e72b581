//! One audit record per call, as a JSON line: who called which tool of
//! which upstream, a digest of the arguments (never the arguments), how it
//! ended and how long it took.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::config::AuditTarget;

/// One call, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditRecord {
    /// `call`.
    pub event: &'static str,
    /// Milliseconds since the Unix epoch when the call ended.
    pub time_ms: u64,
    /// The caller's subject (`anonymous` without authentication).
    pub principal: String,
    /// The upstream's name.
    pub upstream: String,
    /// The name the gateway exposes.
    pub tool: String,
    /// The name on the upstream.
    pub upstream_tool: String,
    /// Hex SHA-256 of the arguments as canonical JSON (keys sorted).
    pub arguments_sha256: String,
    /// `ok`, `tool_error`, `upstream_error`, `timeout` or `cancelled`.
    pub outcome: &'static str,
    /// How long the call took, in milliseconds.
    pub duration_ms: u64,
}

impl AuditRecord {
    /// Milliseconds since the epoch, now.
    pub(crate) fn now_ms() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(crate) fn millis(duration: Duration) -> u64 {
        u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
    }
}

/// Where records are written, one line each, flushed at once.
pub struct AuditLog {
    out: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog").finish_non_exhaustive()
    }
}

impl AuditLog {
    /// Opens `target` (a file is appended to, created when missing).
    pub fn open(target: &AuditTarget) -> io::Result<AuditLog> {
        let out: Box<dyn Write + Send> = match target {
            AuditTarget::Stderr => Box::new(io::stderr()),
            AuditTarget::File(path) => {
                Box::new(OpenOptions::new().create(true).append(true).open(path)?)
            }
        };
        Ok(AuditLog {
            out: Mutex::new(out),
        })
    }

    /// Writes `record`; a failed write is logged, never fails the call.
    pub fn write(&self, record: &AuditRecord) {
        self.write_line(serde_json::to_vec(record).expect("a record serializes"));
    }

    /// Writes a record of something other than a call (e.g. a tool whose
    /// definition changed), with its `event` and the time.
    pub fn write_event(&self, event: &str, mut fields: serde_json::Map<String, serde_json::Value>) {
        fields.insert("event".into(), event.into());
        fields.insert("time_ms".into(), AuditRecord::now_ms().into());
        self.write_line(serde_json::to_vec(&fields).expect("a map serializes"));
    }

    fn write_line(&self, mut line: Vec<u8>) {
        line.push(b'\n');
        let mut out = self
            .out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(error) = out.write_all(&line).and_then(|()| out.flush()) {
            tracing::warn!(%error, "an audit record could not be written");
        }
    }
}
