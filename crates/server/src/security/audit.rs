//! The audit log: structured `tracing` events with target `toolwire::audit`.
//!
//! - `event = "tool_call"` (level INFO) for every `tools/call`: `principal`,
//!   `tool`, `arguments_sha256` (hex SHA-256 of the arguments as canonical
//!   JSON, keys sorted, so equal arguments give equal digests and the
//!   arguments themselves never reach the log), `outcome` (`ok`,
//!   `tool_error`, `protocol_error`, `denied`, `rate_limited`,
//!   `input_required`, or `cancelled` when the call was dropped before it
//!   ended: the client cancelled it or went away), `duration_ms` and
//!   `sanitized`: what the output
//!   sanitiser removed from (or escaped in) the result, as a
//!   [`SanitizeReport`] (`bidi=1 tags=14`, or `none`).
//!   A call answered with a task (the Tasks extension) logs `task_created`
//!   with the task's id in `task`.
//! - `event = "task_end"` (level INFO) once per task, when it ends:
//!   `principal`, `task` (its id), `tool`, `outcome` (`completed`,
//!   `tool_error` for a result with `isError: true`, `failed` for a JSON-RPC
//!   error, `cancelled`, `lease_expired` when its worker stopped (its
//!   instance died) and the task was settled as `failed`, or `expired` when
//!   its time to live ran out while it was still running) and `duration_ms`
//!   (from its creation to its end). Its arguments are in its `tool_call`
//!   record's digest, never here. The worker that ends a task logs it; a
//!   task ended otherwise (cancelled while it waited for input, or settled
//!   after its lease ran out) is logged by the first instance that reads it
//!   so ended ([`crate::TaskRecord::end_audited`] keeps it to once).
//! - `event = "sanitized"` (level INFO) for a `prompts/get` or
//!   `resources/read` result the sanitiser changed: `principal`, `method`,
//!   `target` (the prompt's name or the resource's URI) and `sanitized`.
//! - `event = "denial"` (level WARN) for every refusal: `reason`
//!   (`auth_failed`, `insufficient_scope`, `forbidden` or `rate_limited`),
//!   `principal`, `detail` (what was refused: a tool, prompt or resource,
//!   or the HTTP endpoint). A forbidden or rate-limited tool call logs both
//!   events.
//!
//! Values a peer chose (tool names, subjects) are logged with `Debug`
//! formatting, so quotes and control characters cannot forge log lines.
//! Route the target wherever audit records belong, e.g. with
//! `tracing_subscriber`'s `Targets` filter.

use std::sync::Arc;
use std::time::Instant;

use sha2::{Digest, Sha256};
use toolwire_protocol::{CallToolRequestParams, JsonObject};

use crate::context::{Principal, RequestContext};
pub use crate::security::sanitize::SanitizeReport;

/// The `tracing` target of every audit event.
pub const AUDIT_TARGET: &str = "toolwire::audit";

/// How a tool call ended, as logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ok,
    ToolError,
    ProtocolError,
    Denied,
    RateLimited,
    InputRequired,
    Cancelled,
    /// Answered with a task handle (the Tasks extension); the task runs on.
    TaskCreated,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::ProtocolError => "protocol_error",
            Outcome::Denied => "denied",
            Outcome::RateLimited => "rate_limited",
            Outcome::InputRequired => "input_required",
            Outcome::Cancelled => "cancelled",
            Outcome::TaskCreated => "task_created",
        }
    }
}

/// Why something was refused, as logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Denial {
    AuthFailed,
    InsufficientScope,
    Forbidden,
    RateLimited,
}

impl Denial {
    fn as_str(self) -> &'static str {
        match self {
            Denial::AuthFailed => "auth_failed",
            Denial::InsufficientScope => "insufficient_scope",
            Denial::Forbidden => "forbidden",
            Denial::RateLimited => "rate_limited",
        }
    }
}

/// The subject as logged: `<anonymous>` when there is none.
fn who(principal: Option<&Principal>) -> &str {
    principal
        .and_then(|p| p.subject.as_deref())
        .unwrap_or("<anonymous>")
}

/// What is known about a tool call when it starts; `None` when nobody
/// listens to audit events (then the digest is not computed). Dropped
/// before [`ToolCallRecord::finish`] (the call's future was dropped), it
/// logs the call as `cancelled`.
pub(crate) struct ToolCallRecord {
    principal: Principal,
    tool: String,
    /// Shared with the call's context ([`RequestContext::arguments_sha256`]).
    digest: Arc<str>,
    started: Instant,
    logged: bool,
}

impl ToolCallRecord {
    pub(crate) fn start(cx: &RequestContext, params: &CallToolRequestParams) -> Option<Self> {
        if !tracing::enabled!(target: AUDIT_TARGET, tracing::Level::INFO) {
            return None;
        }
        let empty = JsonObject::new();
        let digest = shared_digest(params.arguments.as_ref().unwrap_or(&empty));
        cx.keep_arguments_sha256(Arc::clone(&digest));
        Some(ToolCallRecord {
            principal: cx.principal().clone(),
            tool: params.name.clone(),
            digest,
            started: Instant::now(),
            logged: false,
        })
    }

    /// Logs the call with its outcome, duration and what the sanitiser
    /// removed; `task` is the id of the task it was answered with.
    pub(crate) fn finish(
        mut self,
        outcome: Outcome,
        sanitized: &SanitizeReport,
        task: Option<&str>,
    ) {
        self.log(outcome, sanitized, task);
    }

    fn log(&mut self, outcome: Outcome, sanitized: &SanitizeReport, task: Option<&str>) {
        self.logged = true;
        let duration = self.started.elapsed();
        let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let (principal, tool) = (who(Some(&self.principal)), &self.tool);
        match task {
            Some(task) => tracing::info!(
                target: AUDIT_TARGET,
                event = "tool_call",
                principal = ?principal,
                tool = ?tool,
                arguments_sha256 = %self.digest,
                outcome = outcome.as_str(),
                task = ?task,
                duration_ms,
                sanitized = %sanitized,
            ),
            None => tracing::info!(
                target: AUDIT_TARGET,
                event = "tool_call",
                principal = ?principal,
                tool = ?tool,
                arguments_sha256 = %self.digest,
                outcome = outcome.as_str(),
                duration_ms,
                sanitized = %sanitized,
            ),
        }
    }
}

impl Drop for ToolCallRecord {
    fn drop(&mut self) {
        if !self.logged {
            self.log(Outcome::Cancelled, &SanitizeReport::default(), None);
        }
    }
}

/// How a task ended, as logged (`task_end` events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskEnd {
    Completed,
    ToolError,
    Failed,
    Cancelled,
    /// Its worker's lease ran out: settled as `failed`.
    LeaseExpired,
    /// Its time to live ran out while it ran.
    Expired,
}

impl TaskEnd {
    fn as_str(self) -> &'static str {
        match self {
            TaskEnd::Completed => "completed",
            TaskEnd::ToolError => "tool_error",
            TaskEnd::Failed => "failed",
            TaskEnd::Cancelled => "cancelled",
            TaskEnd::LeaseExpired => "lease_expired",
            TaskEnd::Expired => "expired",
        }
    }
}

/// What is logged of a task that ended.
pub(crate) struct TaskEnded<'a> {
    /// The key of its principal ([`Principal::key`]).
    pub owner: &'a str,
    pub task: &'a str,
    pub tool: &'a str,
    pub outcome: TaskEnd,
    pub duration_ms: u64,
}

/// Logs the end of a task (once per task: the caller sees to that).
pub(crate) fn task_end(ended: &TaskEnded<'_>) {
    // A principal's key is `s:` and its subject, or empty for nobody.
    let principal = ended.owner.strip_prefix("s:").unwrap_or("<anonymous>");
    tracing::info!(
        target: AUDIT_TARGET,
        event = "task_end",
        principal = ?principal,
        task = ?ended.task,
        tool = ?ended.tool,
        outcome = ended.outcome.as_str(),
        duration_ms = ended.duration_ms,
    );
}

/// True when someone listens to audit events.
pub(crate) fn listening() -> bool {
    tracing::enabled!(target: AUDIT_TARGET, tracing::Level::INFO)
}

/// Logs what the sanitiser removed from a `prompts/get` or `resources/read`
/// result of `target` for `principal` (taken only when [`listening`]);
/// nothing is logged when nothing was removed.
pub(crate) fn sanitized(
    principal: Option<&Principal>,
    method: &str,
    target: &str,
    report: &SanitizeReport,
) {
    if report.is_empty() || principal.is_none() {
        return;
    }
    tracing::info!(
        target: AUDIT_TARGET,
        event = "sanitized",
        principal = ?who(principal),
        method,
        target = ?target,
        sanitized = %report,
    );
}

/// Logs one refusal. `principal` is `None` when nobody was authenticated.
pub(crate) fn denial(principal: Option<&Principal>, reason: Denial, detail: &str) {
    tracing::warn!(
        target: AUDIT_TARGET,
        event = "denial",
        reason = reason.as_str(),
        principal = ?who(principal),
        detail = ?detail,
    );
}

/// Hex SHA-256 of `arguments` as canonical JSON (object keys sorted).
pub fn arguments_digest(arguments: &JsonObject) -> String {
    digest_hex(arguments, &mut [0; 64]).to_owned()
}

/// [`arguments_digest`], made once to be shared.
fn shared_digest(arguments: &JsonObject) -> Arc<str> {
    Arc::from(digest_hex(arguments, &mut [0; 64]))
}

fn digest_hex<'a>(arguments: &JsonObject, hex: &'a mut [u8; 64]) -> &'a str {
    let canonical = crate::context::mrtr::canonical_object_json(arguments);
    toolwire_protocol::hex::write_lower_hex(&Sha256::digest(canonical.as_bytes()), hex)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digest_ignores_key_order() {
        let a = json!({"x": 1, "y": {"b": 2, "a": 1}});
        let b = json!({"y": {"a": 1, "b": 2}, "x": 1});
        let d = arguments_digest(a.as_object().unwrap());
        assert_eq!(d, arguments_digest(b.as_object().unwrap()));
        assert_eq!(d.len(), 64);
        // The digest of `{}`.
        assert_eq!(
            arguments_digest(&JsonObject::new()),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }
}
