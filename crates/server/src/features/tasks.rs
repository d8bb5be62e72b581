//! Tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): which
//! tools run as tasks ([`TaskSupport`]), the server's task settings
//! ([`TaskSettings`]) and where tasks are kept.
//!
//! A tool that supports tasks runs the same handler either way. When the
//! client declared the extension on its `tools/call`, the server stores a
//! task, answers `CreateTaskResult` at once and runs the handler in the
//! background: a handler that asks for input (`cx.elicit_form(..)?` and
//! friends) parks the task in `input_required` with those requests, and
//! runs again with the answers `tasks/update` brings, exactly as a
//! multi round-trip retry runs it again. `tasks/cancel` fires the
//! handler's cancellation token.

use std::time::Duration;

use rand::TryRngCore;

/// Whether a tool's calls run as tasks (SEP-2663). Nothing about it appears
/// in the tool's definition: the extension leaves the choice to the server,
/// per request.
///
/// ```
/// use toolwire_server::{NoArgs, RequestContext, TaskSupport, ToolBuilder};
/// let tool = ToolBuilder::new("build")
///     .task_support(TaskSupport::Optional)
///     .handler(|_: NoArgs, _cx: RequestContext| async { "built" });
/// # drop(tool);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TaskSupport {
    /// Never a task: the call is answered when the handler finishes (the default).
    #[default]
    Never,
    /// A task when the request declares the extension; otherwise the call
    /// is answered when the handler finishes.
    Optional,
    /// Always a task: a request that does not declare the extension gets
    /// -32021 (Missing Required Client Capability) naming it.
    Always,
}

/// The server's task settings; every field has a default.
///
/// ```
/// let settings = toolwire_server::TaskSettings::default();
/// assert_eq!(settings.ttl, Some(std::time::Duration::from_secs(3600)));
/// assert_eq!(settings.max_per_principal, 32);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSettings {
    /// How long a task is kept from its creation (`ttlMs`); `None`: for
    /// ever. A task still running then is cancelled. Default one hour.
    pub ttl: Option<Duration>,
    /// The polling interval suggested to clients (`pollIntervalMs`). Default 1 s.
    pub poll_interval: Duration,
    /// How long a worker's lease lasts without renewal (it renews it every
    /// third of that while it runs the task); a task whose lease ran out
    /// ends `failed`. Default 30 s.
    pub lease: Duration,
    /// Unfinished tasks allowed per principal; the next call gets a tool
    /// execution error saying so. Default 32.
    pub max_per_principal: usize,
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings {
            ttl: Some(Duration::from_secs(3600)),
            poll_interval: Duration::from_secs(1),
            lease: Duration::from_secs(30),
            max_per_principal: 32,
        }
    }
}

impl TaskSettings {
    pub(crate) fn ttl_ms(&self) -> Option<u64> {
        self.ttl.map(millis)
    }

    pub(crate) fn poll_interval_ms(&self) -> u64 {
        millis(self.poll_interval).max(1)
    }

    pub(crate) fn lease_ms(&self) -> u64 {
        millis(self.lease).max(3)
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A task id: 128 random bits from the OS CSPRNG, 32 lowercase hex digits.
pub(crate) fn mint_task_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .expect("the operating system's random number generator works");
    toolwire_protocol::hex::lower_hex(&bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn task_ids_are_128_random_bits() {
        let (a, b) = (super::mint_task_id(), super::mint_task_id());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
