//! One audit record per call, as a JSON line: who called which tool of
//! which upstream, a digest of the arguments (never the arguments), how it
//! ended and how long it took. The latest call records are also kept in
//! memory, and each new one is broadcast, for the web console.

use std::collections::VecDeque;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::sync::broadcast;

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

/// How many call records [`AuditLog::recent`] keeps.
pub const RECENT_CALLS: usize = 1_000;

/// How many call records a slow [`AuditLog::subscribe`] receiver may fall
/// behind before it misses some (it then gets `RecvError::Lagged`).
const FEED_CAPACITY: usize = 256;

/// Where records are written, one line each, flushed at once; the latest
/// [`RECENT_CALLS`] call records are kept in memory besides, and each new
/// call record is broadcast to [`AuditLog::subscribe`]rs.
pub struct AuditLog {
    /// `None`: kept in memory only ([`AuditLog::in_memory`]).
    out: Option<Mutex<Box<dyn Write + Send>>>,
    recent: Mutex<VecDeque<AuditRecord>>,
    feed: broadcast::Sender<AuditRecord>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("written", &self.out.is_some())
            .finish_non_exhaustive()
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
        Ok(AuditLog::with_output(Some(Mutex::new(out))))
    }

    /// A log that writes nowhere: call records are only kept in memory
    /// ([`AuditLog::recent`]) and broadcast ([`AuditLog::subscribe`]).
    pub fn in_memory() -> AuditLog {
        AuditLog::with_output(None)
    }

    fn with_output(out: Option<Mutex<Box<dyn Write + Send>>>) -> AuditLog {
        AuditLog {
            out,
            recent: Mutex::new(VecDeque::with_capacity(RECENT_CALLS)),
            feed: broadcast::channel(FEED_CAPACITY).0,
        }
    }

    /// Writes `record`, keeps it among the recent ones and broadcasts it; a
    /// failed write is logged, never fails the call.
    pub fn write(&self, record: AuditRecord) {
        self.write_line(serde_json::to_vec(&record).expect("a record serializes"));
        // Nobody watching (no console open) is the usual case: no copy then.
        let broadcast = (self.feed.receiver_count() > 0).then(|| record.clone());
        let mut recent = lock(&self.recent);
        if recent.len() == RECENT_CALLS {
            recent.pop_front();
        }
        recent.push_back(record);
        drop(recent);
        if let Some(record) = broadcast {
            // A receiver gone since is no error.
            let _ = self.feed.send(record);
        }
    }

    /// Writes a record of something other than a call (e.g. a tool whose
    /// definition changed), with its `event` and the time. It is neither
    /// kept among the recent call records nor broadcast.
    pub fn write_event(&self, event: &str, mut fields: serde_json::Map<String, serde_json::Value>) {
        fields.insert("event".into(), event.into());
        fields.insert("time_ms".into(), AuditRecord::now_ms().into());
        self.write_line(serde_json::to_vec(&fields).expect("a map serializes"));
    }

    /// The latest call records (at most [`RECENT_CALLS`]), oldest first.
    pub fn recent(&self) -> Vec<AuditRecord> {
        lock(&self.recent).iter().cloned().collect()
    }

    /// Each call record written from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<AuditRecord> {
        self.feed.subscribe()
    }

    fn write_line(&self, mut line: Vec<u8>) {
        let Some(out) = &self.out else { return };
        line.push(b'\n');
        let mut out = lock(out);
        if let Err(error) = out.write_all(&line).and_then(|()| out.flush()) {
            tracing::warn!(%error, "an audit record could not be written");
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(n: u64) -> AuditRecord {
        AuditRecord {
            event: "call",
            time_ms: n,
            principal: "alice".into(),
            upstream: "crm".into(),
            tool: "crm__search".into(),
            upstream_tool: "search".into(),
            arguments_sha256: "00".into(),
            outcome: "ok",
            duration_ms: 3,
        }
    }

    fn times(records: &[AuditRecord]) -> Vec<u64> {
        records.iter().map(|r| r.time_ms).collect()
    }

    #[test]
    fn recent_keeps_the_latest_thousand_oldest_first() {
        let log = AuditLog::in_memory();
        for n in 0..3 {
            log.write(call(n));
        }
        assert_eq!(times(&log.recent()), [0, 1, 2]);
        for n in 3..1_005 {
            log.write(call(n));
        }
        let recent = log.recent();
        assert_eq!(recent.len(), 1_000);
        assert_eq!(recent[0], call(5));
        assert_eq!(recent[999], call(1_004));
        assert_eq!(times(&recent), (5..1_005).collect::<Vec<u64>>());
    }

    #[test]
    fn events_other_than_calls_are_neither_kept_nor_broadcast() {
        let log = AuditLog::in_memory();
        let mut feed = log.subscribe();
        log.write_event("drift", serde_json::Map::new());
        assert_eq!(log.recent(), []);
        assert_eq!(feed.try_recv(), Err(broadcast::error::TryRecvError::Empty));
    }

    #[tokio::test]
    async fn a_subscriber_receives_each_call_record_written_after_it_subscribed() {
        let log = AuditLog::in_memory();
        log.write(call(1));
        let mut feed = log.subscribe();
        log.write(call(2));
        log.write(call(3));
        assert_eq!(feed.recv().await.unwrap(), call(2));
        assert_eq!(feed.recv().await.unwrap(), call(3));
        assert_eq!(feed.try_recv(), Err(broadcast::error::TryRecvError::Empty));
    }

    #[test]
    fn a_file_gets_calls_and_events_as_json_lines() {
        let path =
            std::env::temp_dir().join(format!("toolwire-audit-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let log = AuditLog::open(&AuditTarget::File(path.clone())).unwrap();
        log.write(call(7));
        let mut fields = serde_json::Map::new();
        fields.insert("upstream".into(), "crm".into());
        log.write_event("drift", fields);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], serde_json::to_value(call(7)).unwrap());
        assert_eq!(lines[1]["event"], "drift");
        assert_eq!(lines[1]["upstream"], "crm");
        assert_eq!(times(&log.recent()), [7]);
        std::fs::remove_file(&path).unwrap();
    }
}
