//! Per-request settings: timeouts, cancellation, and where request-scoped
//! notifications (progress, log messages) go.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::handlers::InputHandler;
use toolwire_protocol::{
    ClientCapabilities, DetailedTask, JsonObject, LoggingLevel, LoggingMessageNotificationParams,
    Notification, ProgressNotificationParams,
};

/// A notification that belongs to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestNotification {
    /// `notifications/progress`.
    Progress(ProgressNotificationParams),
    /// `notifications/message` (a log message).
    Log(LoggingMessageNotificationParams),
    /// The task the call became, as a poll of `tasks/get` saw it (the
    /// Tasks extension; the server sends no progress for a task).
    Task(Box<DetailedTask>),
    /// Anything else the server sent for this request.
    Other(Notification),
}

impl RequestNotification {
    /// Types a raw notification.
    pub(crate) fn from_notification(notification: Notification) -> Self {
        let params = Value::Object(notification.params.clone().unwrap_or_default());
        match notification.method.as_str() {
            "notifications/progress" => match serde_json::from_value(params) {
                Ok(p) => RequestNotification::Progress(p),
                Err(_) => RequestNotification::Other(notification),
            },
            "notifications/message" => match serde_json::from_value(params) {
                Ok(p) => RequestNotification::Log(p),
                Err(_) => RequestNotification::Other(notification),
            },
            _ => RequestNotification::Other(notification),
        }
    }
}

/// Receives a request's notifications as they arrive.
pub type NotificationSink = Arc<dyn Fn(RequestNotification) + Send + Sync>;

/// Settings for one request; unset fields take the client's defaults.
///
/// ```
/// use std::time::Duration;
/// use toolwire_client::RequestOptions;
/// let options = RequestOptions::new()
///     .timeout(Duration::from_secs(5))
///     .max_timeout(Duration::from_secs(60))
///     .on_notification(|n| println!("{n:?}"));
/// # drop(options);
/// ```
#[derive(Clone, Default)]
pub struct RequestOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_timeout: Option<Duration>,
    pub(crate) reset_on_progress: Option<bool>,
    pub(crate) cancel: Option<CancellationToken>,
    pub(crate) sink: Option<NotificationSink>,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) meta: JsonObject,
    pub(crate) input: Option<Arc<dyn InputHandler>>,
    pub(crate) capabilities: Option<ClientCapabilities>,
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("max_timeout", &self.max_timeout)
            .field("reset_on_progress", &self.reset_on_progress)
            .field("cancel", &self.cancel.is_some())
            .field("sink", &self.sink.is_some())
            .field("log_level", &self.log_level)
            .field("meta", &self.meta)
            .field("input", &self.input.is_some())
            .field("capabilities", &self.capabilities)
            .finish()
    }
}

impl RequestOptions {
    /// The client's defaults.
    pub fn new() -> Self {
        RequestOptions::default()
    }

    /// How long to wait for an answer; progress notifications restart the
    /// clock (see [`RequestOptions::reset_on_progress`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The hard limit from the start of the request, whatever the progress.
    pub fn max_timeout(mut self, max: Duration) -> Self {
        self.max_timeout = Some(max);
        self
    }

    /// Whether a progress notification restarts the timeout (default true).
    pub fn reset_on_progress(mut self, reset: bool) -> Self {
        self.reset_on_progress = Some(reset);
        self
    }

    /// Cancels the request when `token` is cancelled (the call fails with
    /// [`crate::Error::Cancelled`]).
    pub fn cancel_on(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Asks for progress notifications and hands every request-scoped
    /// notification to `sink`.
    pub fn on_notification(
        mut self,
        sink: impl Fn(RequestNotification) + Send + Sync + 'static,
    ) -> Self {
        self.sink = Some(Arc::new(sink));
        self
    }

    /// Asks for log messages at `level` and above (delivered to the sink).
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Adds a key to the request's `_meta` (e.g. `traceparent`). Reserved
    /// `io.modelcontextprotocol/` keys are set by the client and cannot be overridden.
    pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// Answers this request's input requests with `handler` instead of the
    /// client's handlers (see [`InputHandler`]). A 2025-11-25 server's
    /// requests reach it when the transport can tell they belong to this
    /// request: on HTTP always, on stdio while it is the only one in flight.
    pub fn on_input(mut self, handler: impl InputHandler + 'static) -> Self {
        self.input = Some(Arc::new(handler));
        self
    }

    /// Declares `capabilities` on this request instead of the client's own
    /// (2026-07-28 servers; a 2025-11-25 session keeps what it declared at
    /// `initialize`).
    pub fn client_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = Some(capabilities);
        self
    }
}

/// The client-wide defaults for timeouts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeoutPolicy {
    pub timeout: Duration,
    pub max_timeout: Duration,
    pub reset_on_progress: bool,
}

impl Default for TimeoutPolicy {
    fn default() -> Self {
        TimeoutPolicy {
            timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(600),
            reset_on_progress: true,
        }
    }
}

impl TimeoutPolicy {
    /// The policy for one request: its own settings over the defaults.
    pub fn for_request(&self, options: &RequestOptions) -> TimeoutPolicy {
        let timeout = options.timeout.unwrap_or(self.timeout);
        let max_timeout = options.max_timeout.unwrap_or(self.max_timeout.max(timeout));
        TimeoutPolicy {
            timeout: timeout.min(max_timeout),
            max_timeout,
            reset_on_progress: options.reset_on_progress.unwrap_or(self.reset_on_progress),
        }
    }
}
