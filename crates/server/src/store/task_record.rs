//! One task's state as a store keeps it ([`TaskRecord`]): serializable, so
//! that a shared store lets any instance answer `tasks/get`, with the
//! rules for its time to live and its worker's lease.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolwire_protocol::{DetailedTask, ErrorObject, JsonObject, Task, TaskStatus};

/// A task as stored: its status and payload, the answers gathered for the
/// handler, and the lease of the worker running it.
///
/// A worker renews [`TaskRecord::lease_until_ms`] while it runs the task.
/// When a task that is not finished is read after its lease ran out, its
/// worker is taken for dead (its instance stopped): the task ends `failed`
/// ([`TaskRecord::settle`]), never stuck in `working`.
///
/// ```
/// use toolwire_server::TaskRecord;
/// use toolwire_server::protocol::TaskStatus;
/// let mut record = TaskRecord::new("t1", "s:alice", "build", 1_000, Some(60_000), 500, 30_000);
/// assert_eq!(record.status, TaskStatus::Working);
/// assert!(!record.settle(30_999));
/// assert!(record.settle(31_001)); // the worker stopped renewing its lease
/// assert_eq!(record.status, TaskStatus::Failed);
/// assert!(record.failed_by_lease());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// The task id (128 random bits).
    pub id: String,
    /// The key of the principal that created it ([`crate::Principal::key`]).
    pub owner: String,
    /// The tool that runs.
    pub tool: String,
    /// Current status.
    pub status: TaskStatus,
    /// What is going on, for people and models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Time of the last change, milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
    /// Time to live from creation; `None`: unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval.
    pub poll_interval_ms: u64,
    /// Outstanding input requests, by key (status `input_required`).
    #[serde(default)]
    pub input_requests: JsonObject,
    /// Every answer received so far, by key: the handler runs again with them.
    #[serde(default)]
    pub answers: JsonObject,
    /// The handler's own state from its last round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler_state: Option<Value>,
    /// The final result (status `completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// The JSON-RPC error (status `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    /// `tasks/cancel` was received; the worker stops the handler.
    #[serde(default)]
    pub cancel_requested: bool,
    /// Until when the worker's lease runs, milliseconds since the Unix epoch.
    pub lease_until_ms: u64,
    /// The task's end has been written to the audit log (`task_end`), so
    /// that it is written once whichever instance sees it first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub end_audited: bool,
}

/// Why a task whose worker's lease ran out failed.
const LEASE_RAN_OUT: &str = "The task's worker stopped before it finished (its lease ran out)";

impl TaskRecord {
    /// A `working` task created at `now_ms`, its worker's lease running `lease_ms`.
    pub fn new(
        id: impl Into<String>,
        owner: impl Into<String>,
        tool: impl Into<String>,
        now_ms: u64,
        ttl_ms: Option<u64>,
        poll_interval_ms: u64,
        lease_ms: u64,
    ) -> Self {
        TaskRecord {
            id: id.into(),
            owner: owner.into(),
            tool: tool.into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            ttl_ms,
            poll_interval_ms,
            input_requests: JsonObject::new(),
            answers: JsonObject::new(),
            handler_state: None,
            result: None,
            error: None,
            cancel_requested: false,
            lease_until_ms: now_ms.saturating_add(lease_ms),
            end_audited: false,
        }
    }

    /// True once the time to live has run out at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.ttl_ms
            .is_some_and(|ttl| now_ms >= self.created_at_ms.saturating_add(ttl))
    }

    /// True when the task is not finished and its worker's lease ran out.
    pub fn lease_lapsed(&self, now_ms: u64) -> bool {
        !self.status.is_terminal() && now_ms > self.lease_until_ms
    }

    /// Ends a task whose worker's lease ran out as `failed` (-32603).
    /// Returns whether it changed.
    pub fn settle(&mut self, now_ms: u64) -> bool {
        if !self.lease_lapsed(now_ms) {
            return false;
        }
        self.finish(
            TaskStatus::Failed,
            Some(LEASE_RAN_OUT.to_owned()),
            now_ms.max(self.updated_at_ms),
        );
        self.error = Some(ErrorObject::internal(LEASE_RAN_OUT));
        true
    }

    /// True when the task failed because its worker's lease ran out
    /// ([`TaskRecord::settle`]).
    pub fn failed_by_lease(&self) -> bool {
        self.status == TaskStatus::Failed
            && self
                .error
                .as_ref()
                .is_some_and(|e| e.message == LEASE_RAN_OUT)
    }

    /// Moves to a terminal `status`: outstanding input requests are dropped.
    pub fn finish(&mut self, status: TaskStatus, message: Option<String>, now_ms: u64) {
        self.status = status;
        self.status_message = message;
        self.input_requests.clear();
        self.updated_at_ms = now_ms;
    }

    /// The task as `tasks/get` and `notifications/tasks` show it.
    pub fn detailed(&self) -> DetailedTask {
        let task = Task {
            task_id: self.id.clone(),
            status: self.status,
            status_message: self.status_message.clone(),
            created_at: iso8601(self.created_at_ms),
            last_updated_at: iso8601(self.updated_at_ms),
            ttl_ms: self.ttl_ms,
            poll_interval_ms: Some(self.poll_interval_ms),
        };
        let mut detailed = DetailedTask::from(task);
        match self.status {
            TaskStatus::InputRequired => {
                detailed.input_requests = Some(self.input_requests.clone())
            }
            TaskStatus::Completed => detailed.result = self.result.clone(),
            TaskStatus::Failed => detailed.error = self.error.clone(),
            TaskStatus::Working | TaskStatus::Cancelled => {}
        }
        detailed
    }
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `ms` since the Unix epoch as ISO 8601 in UTC, e.g. `2026-07-28T10:30:00.000Z`.
pub(crate) fn iso8601(ms: u64) -> String {
    toolwire_protocol::time::iso8601_utc(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_785_234_600_000), "2026-07-28T10:30:00.000Z");
    }

    #[test]
    fn expiry_counts_from_creation() {
        let record = TaskRecord::new("t", "", "x", 1_000, Some(500), 100, 10_000);
        assert!(!record.is_expired(1_499));
        assert!(record.is_expired(1_500));
        let forever = TaskRecord::new("t", "", "x", 1_000, None, 100, 10_000);
        assert!(!forever.is_expired(u64::MAX));
    }

    #[test]
    fn a_lapsed_lease_fails_an_unfinished_task_only() {
        let mut record = TaskRecord::new("t", "", "x", 0, None, 100, 1_000);
        record.status = TaskStatus::InputRequired;
        record
            .input_requests
            .insert("k".into(), serde_json::json!({}));
        assert!(!record.settle(1_000));
        assert!(record.settle(1_001));
        assert_eq!(record.status, TaskStatus::Failed);
        assert_eq!(record.error.as_ref().unwrap().code, -32603);
        assert!(record.input_requests.is_empty());
        let wire = serde_json::to_value(record.detailed()).unwrap();
        assert_eq!(wire["status"], "failed");
        assert_eq!(wire["error"]["code"], -32603);
        assert!(wire.get("inputRequests").is_none());

        let mut done = TaskRecord::new("t", "", "x", 0, None, 100, 1_000);
        done.finish(TaskStatus::Completed, None, 10);
        assert!(!done.settle(5_000));
        assert_eq!(done.status, TaskStatus::Completed);
    }

    #[test]
    fn records_round_trip_as_json() {
        let mut record = TaskRecord::new("t", "s:a", "x", 5, Some(9), 100, 1_000);
        record
            .answers
            .insert("k".into(), serde_json::json!({"action": "accept"}));
        let text = serde_json::to_string(&record).unwrap();
        assert_eq!(serde_json::from_str::<TaskRecord>(&text).unwrap(), record);
    }
}
