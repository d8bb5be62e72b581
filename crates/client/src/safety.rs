//! The safety duties the Tools page asks of clients, as hooks: an approval
//! hook before every `tools/call`, annotations that are untrusted unless the
//! application trusts the server, and an audit record for every call.

use std::future::Future;
use std::time::Duration;

use toolwire_protocol::{JsonObject, Tool, ToolAnnotations};

use crate::future::BoxFuture;

/// A tool as the client knows it, with whether its annotations may be believed.
///
/// Annotations (`readOnlyHint`, `destructiveHint`, ...) come from the server;
/// unless the application marked the server trusted
/// ([`crate::ClientBuilder::trust_annotations`]), they are only claims.
///
/// ```
/// use toolwire_client::ToolInfo;
/// use toolwire_protocol::{Tool, ToolAnnotations};
/// let tool = Tool {
///     name: "rm".into(),
///     annotations: Some(ToolAnnotations { read_only_hint: Some(true), ..Default::default() }),
///     ..Default::default()
/// };
/// let info = ToolInfo { tool, annotations_trusted: false };
/// assert!(info.trusted_annotations().is_none());
/// assert_eq!(info.claims_read_only(), Some(true));
/// assert!(!info.is_read_only());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The definition, as the server sent it.
    pub tool: Tool,
    /// True only when the application trusts this server's annotations.
    pub annotations_trusted: bool,
}

impl ToolInfo {
    /// The tool's name on its server.
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// The annotations, only when they come from a trusted server.
    pub fn trusted_annotations(&self) -> Option<&ToolAnnotations> {
        self.tool
            .annotations
            .as_ref()
            .filter(|_| self.annotations_trusted)
    }

    /// The annotations whether trusted or not: treat them as claims.
    pub fn untrusted_annotations(&self) -> Option<&ToolAnnotations> {
        self.tool.annotations.as_ref()
    }

    /// What the server claims about being read-only (untrusted unless
    /// [`ToolInfo::annotations_trusted`]).
    pub fn claims_read_only(&self) -> Option<bool> {
        self.untrusted_annotations().and_then(|a| a.read_only_hint)
    }

    /// True only when a trusted server says the tool is read-only.
    pub fn is_read_only(&self) -> bool {
        self.trusted_annotations()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false)
    }
}

/// What the approval hook is asked about: exactly what would be sent.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalRequest<'a> {
    /// The server's label.
    pub server: &'a str,
    /// The tool's name on that server.
    pub tool: &'a str,
    /// The tool's definition, when the server listed it.
    pub info: Option<&'a ToolInfo>,
    /// The exact arguments.
    pub arguments: &'a JsonObject,
}

/// The approval hook's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Send the call.
    Allow,
    /// Do not send it; the call fails with [`crate::Error::Denied`].
    Deny(String),
}

/// Decides, before anything is sent, whether a `tools/call` may go ahead
/// (typically by asking the user).
///
/// Implemented for closures returning a future:
///
/// ```
/// use toolwire_client::{Approval, ApprovalHook, ApprovalRequest};
/// fn assert_hook<H: ApprovalHook>(_: H) {}
/// assert_hook(|req: ApprovalRequest<'_>| {
///     let deny = req.tool.starts_with("delete");
///     async move { if deny { Approval::Deny("deletes need a human".into()) } else { Approval::Allow } }
/// });
/// ```
pub trait ApprovalHook: Send + Sync {
    /// Decides about one call.
    fn approve(&self, request: ApprovalRequest<'_>) -> BoxFuture<'static, Approval>;
}

impl<F, Fut> ApprovalHook for F
where
    F: for<'a> Fn(ApprovalRequest<'a>) -> Fut + Send + Sync,
    Fut: Future<Output = Approval> + Send + 'static,
{
    fn approve(&self, request: ApprovalRequest<'_>) -> BoxFuture<'static, Approval> {
        Box::pin(self(request))
    }
}

/// The default hook: allows every call. Applications with a user should
/// install one that asks ([`crate::ClientBuilder::approval`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl ApprovalHook for AllowAll {
    fn approve(&self, _request: ApprovalRequest<'_>) -> BoxFuture<'static, Approval> {
        Box::pin(async { Approval::Allow })
    }
}

/// One audit record: written for every `tools/call`, whatever its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// The server's label.
    pub server: String,
    /// The tool's name on that server.
    pub tool: String,
    /// SHA-256 (hex) of the arguments as sent (compact JSON).
    pub arguments_sha256: String,
    /// `ok`, `tool_error`, `denied`, `timeout`, `protocol_error`, ...
    pub outcome: &'static str,
    /// From the approval decision to the final outcome.
    pub duration: Duration,
    /// How many requests the call took (more than one with input rounds).
    pub rounds: usize,
}

/// Receives audit records (besides the `toolwire::audit` tracing event).
pub trait AuditHook: Send + Sync {
    /// Records one call.
    fn record(&self, record: &AuditRecord);
}

impl<F> AuditHook for F
where
    F: Fn(&AuditRecord) + Send + Sync,
{
    fn record(&self, record: &AuditRecord) {
        self(record)
    }
}

/// True when a subscriber takes `toolwire::audit` events.
pub(crate) fn audit_events_enabled() -> bool {
    tracing::enabled!(target: "toolwire::audit", tracing::Level::INFO)
}

/// Emits the tracing event for a record (target `toolwire::audit`).
pub(crate) fn trace_audit(record: &AuditRecord) {
    tracing::info!(
        target: "toolwire::audit",
        server = %record.server,
        tool = %record.tool,
        arguments_sha256 = %record.arguments_sha256,
        outcome = record.outcome,
        duration_ms = record.duration.as_millis() as u64,
        rounds = record.rounds,
        "tools/call"
    );
}
