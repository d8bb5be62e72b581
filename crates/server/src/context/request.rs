//! What a handler knows about the request it serves, and how it talks back
//! while it runs (progress, log messages, cancellation).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::{Mutex, OnceLock};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolwire_protocol::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitResult, ErrorObject, Implementation, JsonObject, ListRootsResult, LoggingLevel, Message,
    Notification, Params, ProgressToken, RequestId, keys,
};
use toolwire_telemetry::Network;

use crate::context::Outbox;
use crate::context::mrtr::{InputRequired, Round, parse_answer};
use crate::context::output::ToolError;

/// Who is calling: filled in by the transport's authenticator. Anonymous by default.
///
/// ```
/// use toolwire_server::Principal;
/// let p = Principal::new("alice").with_scopes(["tools:read"]);
/// assert!(p.has_scope("tools:read"));
/// assert!(!Principal::anonymous().is_authenticated());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Principal {
    /// The subject, `None` when anonymous.
    pub subject: Option<String>,
    /// Granted scopes.
    pub scopes: Vec<String>,
}

impl Principal {
    /// The anonymous principal (no subject, no scopes).
    pub fn anonymous() -> Self {
        Principal::default()
    }

    /// An authenticated principal.
    pub fn new(subject: impl Into<String>) -> Self {
        Principal {
            subject: Some(subject.into()),
            scopes: Vec::new(),
        }
    }

    /// Adds scopes.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// True when a subject is known.
    pub fn is_authenticated(&self) -> bool {
        self.subject.is_some()
    }

    /// True when `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// A stable key for binding state to this principal: empty for the
    /// anonymous one, `s:` and the subject otherwise (so an authenticated
    /// principal whose subject is empty is still not the anonymous one).
    ///
    /// ```
    /// use toolwire_server::Principal;
    /// assert_eq!(Principal::anonymous().key(), "");
    /// assert_eq!(Principal::new("").key(), "s:");
    /// assert_eq!(Principal::new("alice").key(), "s:alice");
    /// ```
    pub fn key(&self) -> String {
        match &self.subject {
            Some(subject) => format!("s:{subject}"),
            None => String::new(),
        }
    }

    /// Whether [`key`](Self::key) is `key`, without making it.
    ///
    /// ```
    /// use toolwire_server::Principal;
    /// assert!(Principal::new("alice").has_key("s:alice"));
    /// assert!(!Principal::new("alice").has_key(""));
    /// assert!(Principal::anonymous().has_key(""));
    /// ```
    pub fn has_key(&self, key: &str) -> bool {
        match &self.subject {
            Some(subject) => key.strip_prefix("s:") == Some(subject.as_str()),
            None => key.is_empty(),
        }
    }
}

/// What the transport hands the dispatcher along with a request.
#[derive(Debug, Clone, Default)]
pub struct RequestEnv {
    /// Who is calling.
    pub principal: Principal,
    /// Where request-scoped notifications go; `None` drops them.
    pub outbox: Option<Outbox>,
    /// Cancelled when the client cancels the request or goes away.
    pub cancel: CancellationToken,
    /// How the request arrived (stdio, HTTP/1.1, HTTP/2), for telemetry.
    pub network: Network,
    /// The legacy session the request belongs to, for telemetry.
    pub session_id: Option<Arc<str>>,
}

impl RequestEnv {
    /// An environment with an anonymous principal and nowhere to send notifications.
    pub fn new() -> Self {
        RequestEnv::default()
    }

    /// Sets the principal.
    pub fn with_principal(mut self, principal: Principal) -> Self {
        self.principal = principal;
        self
    }

    /// Sets the outbox.
    pub fn with_outbox(mut self, outbox: Outbox) -> Self {
        self.outbox = Some(outbox);
        self
    }

    /// Sets the cancellation token.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sets how the request arrived.
    pub fn with_network(mut self, network: Network) -> Self {
        self.network = network;
        self
    }
}

/// The per-request context handed to every handler.
#[derive(Debug, Clone)]
pub struct RequestContext {
    inner: Arc<ContextInner>,
}

#[derive(Debug)]
struct ContextInner {
    request_id: RequestId,
    /// Not copied when it is one of the methods this server serves.
    method: Cow<'static, str>,
    client_capabilities: Arc<ClientCapabilities>,
    client_info: Option<Arc<Implementation>>,
    protocol_version: Cow<'static, str>,
    principal: Principal,
    progress_token: Option<ProgressToken>,
    log_level: Option<LoggingLevel>,
    outbox: Option<Outbox>,
    cancel: CancellationToken,
    last_progress: Mutex<Option<f64>>,
    round: Round,
    /// What the server's sanitiser does to a notification's text (progress
    /// messages, log data) before it is sent; `None` sends it as it is.
    text_filter: Option<TextFilter>,
    /// For a handler run as a task: where its progress goes instead (the
    /// task's `statusMessage`; a task sends no progress notifications).
    task_status: Option<TaskStatusSink>,
    /// The digest of a `tools/call`'s arguments, once the audit record has
    /// computed it.
    arguments_sha256: OnceLock<Arc<str>>,
}

/// Sets the `statusMessage` of the task a handler runs in.
#[derive(Clone)]
pub(crate) struct TaskStatusSink(
    pub(crate) Arc<dyn Fn(String) -> crate::BoxFuture<()> + Send + Sync>,
);

impl fmt::Debug for TaskStatusSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TaskStatusSink")
    }
}

/// The sanitiser's rule for texts, applied to every string of a value.
#[derive(Clone)]
pub(crate) struct TextFilter(pub(crate) Arc<dyn Fn(&mut Value) + Send + Sync>);

impl fmt::Debug for TextFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TextFilter")
    }
}

/// `method`, not copied when it is one a server serves.
fn method_name(method: &str) -> Cow<'static, str> {
    const SERVED: &[&str] = &[
        "tools/call",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "subscriptions/listen",
        "server/discover",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
    ];
    match SERVED.iter().find(|served| **served == method) {
        Some(served) => Cow::Borrowed(*served),
        None => Cow::Owned(method.to_owned()),
    }
}

/// The request metadata the dispatcher has checked, used to build a context.
/// The client's capabilities and info are shared, not copied, between the
/// requests that declare the same ones.
#[derive(Debug, Clone)]
pub(crate) struct CheckedMeta {
    pub protocol_version: Cow<'static, str>,
    pub client_capabilities: Arc<ClientCapabilities>,
    pub client_info: Option<Arc<Implementation>>,
    pub progress_token: Option<ProgressToken>,
    pub log_level: Option<LoggingLevel>,
}

impl RequestContext {
    pub(crate) fn new(id: RequestId, method: &str, meta: CheckedMeta, env: RequestEnv) -> Self {
        RequestContext {
            inner: Arc::new(ContextInner {
                request_id: id,
                method: method_name(method),
                client_capabilities: meta.client_capabilities,
                client_info: meta.client_info,
                protocol_version: meta.protocol_version,
                principal: env.principal,
                progress_token: meta.progress_token,
                log_level: meta.log_level,
                outbox: env.outbox,
                cancel: env.cancel,
                last_progress: Mutex::new(None),
                round: Round::default(),
                text_filter: None,
                task_status: None,
                arguments_sha256: OnceLock::new(),
            }),
        }
    }

    /// Attaches the answers and state of a multi round-trip retry.
    pub(crate) fn with_round(mut self, round: Round) -> Self {
        let inner = Arc::get_mut(&mut self.inner).expect("a fresh context is not shared");
        inner.round = round;
        self
    }

    /// Sends this handler's progress to the task it runs in, as the task's
    /// `statusMessage`.
    pub(crate) fn with_task_status(mut self, sink: TaskStatusSink) -> Self {
        let inner = Arc::get_mut(&mut self.inner).expect("a fresh context is not shared");
        inner.task_status = Some(sink);
        self
    }

    /// Passes the texts of this request's notifications through `filter`.
    pub(crate) fn with_text_filter(mut self, filter: Option<TextFilter>) -> Self {
        let inner = Arc::get_mut(&mut self.inner).expect("a fresh context is not shared");
        inner.text_filter = filter;
        self
    }

    /// The raw answer to the input request named `key`, from this round or an earlier one.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.inner.round.answers.get(key)
    }

    /// The answer to `key` parsed as `T` (`ElicitResult`, `CreateMessageResult`,
    /// `ListRootsResult`, ...). A malformed answer is a -32602 error.
    pub fn answer<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, ToolError> {
        match self.input_response(key) {
            None => Ok(None),
            Some(answer) => Ok(Some(parse_answer(key, answer)?)),
        }
    }

    /// The handler's own state from the previous round.
    pub fn state<T: DeserializeOwned>(&self) -> Option<T> {
        self.inner
            .round
            .state
            .as_ref()
            .and_then(|s| T::deserialize(s).ok())
    }

    /// Asks the user to fill in a form, or returns the answer once it is there.
    ///
    /// Use with `?`: the first call ends the round with an `input_required`
    /// result; on the retry it returns the (validated) answer. An accepted
    /// answer whose content breaks `requested_schema` is a -32602 error.
    pub fn elicit_form(
        &self,
        key: &str,
        message: &str,
        requested_schema: Value,
    ) -> Result<ElicitResult, ToolError> {
        let Some(answer) = self.answer::<ElicitResult>(key)? else {
            return Err(InputRequired::new()
                .elicit_form(key, message, requested_schema)
                .into());
        };
        if answer.action == ElicitAction::Accept {
            let content = serde_json::to_value(answer.content.clone().unwrap_or_default())
                .unwrap_or_default();
            let schema =
                toolwire_schema::CompiledSchema::compile(&requested_schema).map_err(|e| {
                    ErrorObject::internal(format!(
                        "requested schema for {key:?} does not compile: {e}"
                    ))
                })?;
            if let Err(errors) = schema.validate(&content) {
                return Err(ErrorObject::invalid_params(format!(
                    "inputResponses[{key:?}] does not match the requested schema: {errors}"
                ))
                .into());
            }
        }
        Ok(answer)
    }

    /// Asks the client's model for a completion, or returns it once it is there.
    pub fn sample(
        &self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ToolError> {
        match self.answer(key)? {
            Some(answer) => Ok(answer),
            None => Err(InputRequired::new().sample(key, params).into()),
        }
    }

    /// Asks for the client's roots, or returns them once they are there.
    pub fn list_roots(&self, key: &str) -> Result<ListRootsResult, ToolError> {
        match self.answer(key)? {
            Some(answer) => Ok(answer),
            None => Err(InputRequired::new().list_roots(key).into()),
        }
    }

    /// The JSON-RPC id of this request.
    pub fn request_id(&self) -> &RequestId {
        &self.inner.request_id
    }

    /// The method being served, e.g. `tools/call`.
    pub fn method(&self) -> &str {
        &self.inner.method
    }

    /// The capabilities the client declared on this request.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.client_capabilities
    }

    /// The client's self-reported name and version (display only, never for security).
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.client_info.as_deref()
    }

    /// The metadata a task started by this request runs with: this
    /// request's, without progress or log level (a task sends neither
    /// progress nor log notifications, SEP-2663).
    pub(crate) fn task_meta(&self) -> CheckedMeta {
        CheckedMeta {
            protocol_version: self.inner.protocol_version.clone(),
            client_capabilities: Arc::clone(&self.inner.client_capabilities),
            client_info: self.inner.client_info.clone(),
            progress_token: None,
            log_level: None,
        }
    }

    /// The protocol version of this request.
    pub fn protocol_version(&self) -> &str {
        &self.inner.protocol_version
    }

    /// Who is calling.
    pub fn principal(&self) -> &Principal {
        &self.inner.principal
    }

    /// The hex SHA-256 of this `tools/call`'s arguments as canonical JSON
    /// ([`crate::audit::arguments_digest`]), when the server has already
    /// computed it for the call's audit record (a handler run as a task of
    /// the call gets it too); `None` otherwise (nobody listens to audit
    /// events, or the request is not a `tools/call`).
    ///
    /// A handler that records the call itself (a gateway's own audit log)
    /// takes it from here instead of computing it a second time:
    ///
    /// ```
    /// use toolwire_server::audit::arguments_digest;
    /// use toolwire_server::protocol::JsonObject;
    /// use toolwire_server::RequestContext;
    ///
    /// fn digest(cx: &RequestContext, arguments: &JsonObject) -> String {
    ///     match cx.arguments_sha256() {
    ///         Some(digest) => digest.to_owned(),
    ///         None => arguments_digest(arguments),
    ///     }
    /// }
    /// ```
    pub fn arguments_sha256(&self) -> Option<&str> {
        self.inner.arguments_sha256.get().map(|digest| &**digest)
    }

    /// The digest of [`RequestContext::arguments_sha256`], shared, for the
    /// context of the task this call starts.
    pub(crate) fn shared_arguments_sha256(&self) -> Option<Arc<str>> {
        self.inner.arguments_sha256.get().cloned()
    }

    /// Keeps the digest of this call's arguments for
    /// [`RequestContext::arguments_sha256`].
    pub(crate) fn keep_arguments_sha256(&self, digest: Arc<str>) {
        // Set once per request: a second call is the same digest.
        let _ = self.inner.arguments_sha256.set(digest);
    }

    /// Cancelled when the client cancels the request or disconnects.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// True once the request has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// True when the request asked for progress notifications.
    pub fn wants_progress(&self) -> bool {
        self.inner.progress_token.is_some()
    }

    /// Reports progress. Sent only when the request carried a `progressToken`,
    /// and only when `done` is greater than the last value sent (progress must
    /// strictly increase); other calls are dropped. In a handler run as a
    /// task it becomes the task's `statusMessage` instead (`message`, or
    /// `done/total`), which `tasks/get` shows.
    pub async fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.inner.task_status {
            let text = match (message, total) {
                (Some(message), _) => message.to_owned(),
                (None, Some(total)) => format!("{done}/{total}"),
                (None, None) => format!("{done} done"),
            };
            let text = match self.filtered(json!(text)) {
                Value::String(text) => text,
                other => other.to_string(),
            };
            (sink.0)(text).await;
            return;
        }
        let Some(token) = &self.inner.progress_token else {
            return;
        };
        {
            let mut last = self.inner.last_progress.lock().expect("progress lock");
            if last.is_some_and(|prev| done <= prev) {
                return;
            }
            *last = Some(done);
        }
        let mut params = JsonObject::new();
        params.insert("progressToken".into(), json!(token));
        params.insert("progress".into(), json!(done));
        if let Some(total) = total {
            params.insert("total".into(), json!(total));
        }
        if let Some(message) = message {
            params.insert("message".into(), self.filtered(json!(message)));
        }
        self.notify("notifications/progress", params).await;
    }

    /// Sends a log message. Sent only when the request carried
    /// `io.modelcontextprotocol/logLevel` and `level` is at or above it.
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: impl Into<Value>) {
        let Some(min) = self.inner.log_level else {
            return;
        };
        if level < min {
            return;
        }
        let mut params = JsonObject::new();
        params.insert("level".into(), json!(level));
        if let Some(logger) = logger {
            params.insert("logger".into(), self.filtered(json!(logger)));
        }
        params.insert("data".into(), self.filtered(data.into()));
        self.notify("notifications/message", params).await;
    }

    fn filtered(&self, mut value: Value) -> Value {
        if let Some(filter) = &self.inner.text_filter {
            (filter.0)(&mut value);
        }
        value
    }

    async fn notify(&self, method: &str, params: JsonObject) {
        self.send(Message::Notification(Notification::new(
            method,
            Some(params),
        )))
        .await;
    }

    /// Ends the HTTP connection carrying this request's stream while the
    /// request goes on, so that the client reconnects and resumes it with
    /// `Last-Event-ID` (SSE polling, legacy sessions only). Elsewhere, and
    /// when nothing was streamed yet, it does nothing.
    pub fn close_stream(&self) {
        if let Some(outbox) = &self.inner.outbox {
            outbox.close_stream();
        }
    }

    /// Sends a message on this request's own stream.
    pub(crate) async fn send(&self, message: Message) {
        if let Some(outbox) = &self.inner.outbox {
            outbox.send(message).await;
        }
    }
}

/// True when the response to `request` is a stream of messages rather than
/// one message: `subscriptions/listen`, or a request that asked for
/// notifications. HTTP answers these with `text/event-stream`.
pub fn response_streams(request: &toolwire_protocol::Request) -> bool {
    request.method == "subscriptions/listen" || wants_notifications(request.params.as_ref())
}

/// True when a request's `_meta` asks for request-scoped notifications
/// (a `progressToken` or a `logLevel`), so a transport knows to stream.
pub fn wants_notifications(params: Option<&Params>) -> bool {
    if let Some(meta) = params.and_then(Params::request_meta) {
        return meta.progress_token.is_some() || meta.log_level.is_some();
    }
    params.and_then(Params::meta).flatten().is_some_and(|meta| {
        meta.get(keys::PROGRESS_TOKEN).is_some() || meta.get(keys::LOG_LEVEL).is_some()
    })
}
