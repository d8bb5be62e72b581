//! The `Client`: the one request pipeline every method uses
//! (`_meta`, version negotiation, timeouts, notifications), the cache path,
//! and the MRTR loop.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use serde::de::DeserializeOwned;
use tokio::time::{Instant, sleep_until};
use toolwire_protocol::{
    ClientCapabilities, CreateTaskResult, DiscoverResult, JsonObject, Message, Request, RequestId,
    ResultBody, ResultType, TASKS_EXTENSION, code, revision_text,
};

use crate::cache::{Cache, CacheHints, Freshness};
use crate::error::{Error, TransportError};
use crate::future::BoxFuture;
use crate::handlers::Handlers;
use crate::mrtr::{Origin, RequestInputs, answer_all, parse_input_required, retry_params};
use crate::options::{RequestNotification, RequestOptions, TimeoutPolicy};
use crate::request_text::{DeclaredTexts, RequestMeta, params_with_meta};
use crate::safety::{ApprovalHook, AuditHook};
use crate::telemetry;
use crate::tool_book::ToolBook;
use crate::transport::{Era, Exchange, OutgoingRequest, Transport, TransportKind};
use crate::watch::Watched;
use toolwire_telemetry::TraceHeaders;
use tracing::Instrument;

/// Ids are unique across every client in the process, so clients may share a transport.
static NEXT_ID: AtomicI64 = AtomicI64::new(1);

fn next_id() -> RequestId {
    RequestId::Number(NEXT_ID.fetch_add(1, Ordering::Relaxed))
}

/// A result with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched<T> {
    /// The result.
    pub value: T,
    /// Fetched now, served fresh from the cache, or served stale after a failed refetch.
    pub freshness: Freshness,
    /// The server's caching hints (for a list, the most cautious of its pages').
    pub hints: CacheHints,
}

/// An MCP client for one server: cheap to clone, safe to share between tasks.
///
/// ```no_run
/// # async fn run() -> Result<(), toolwire_client::Error> {
/// use serde_json::json;
/// use toolwire_client::{Client, transport::HttpTransport};
/// let client = Client::builder(HttpTransport::new("http://127.0.0.1:8080/mcp")?)
///     .name("weather")
///     .build();
/// let tools = client.list_tools().await?;
/// let result = client.call_tool("get_weather", json!({"location": "Paris"})).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<ClientInner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("name", &self.inner.name)
            .field("transport", &self.inner.transport)
            .field("version", &self.protocol_version())
            .finish_non_exhaustive()
    }
}

pub(crate) struct ClientInner {
    pub name: String,
    pub transport: Arc<dyn Transport>,
    pub server_key: String,
    pub versions: Vec<String>,
    pub version: RwLock<String>,
    pub handlers: Handlers,
    pub capabilities: ClientCapabilities,
    /// The capabilities and info as text, for every request's `_meta`.
    pub declared: DeclaredTexts,
    pub cache: Cache,
    pub tools: RwLock<ToolBook>,
    pub approval: Arc<dyn ApprovalHook>,
    pub audit: Option<Arc<dyn AuditHook>>,
    /// Whether each call's audit record is also a `toolwire::audit` event.
    pub audit_events: bool,
    pub trusted: bool,
    pub timeouts: TimeoutPolicy,
    pub max_rounds: usize,
    pub watched: Watched,
    /// Per-request input handlers of the requests in flight.
    pub request_inputs: RequestInputs,
    /// Whether `call_tool` declares the Tasks extension.
    pub tasks: bool,
}

impl Client {
    /// The server's label.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The protocol version spoken: the one requests are sent with (it
    /// changes when the server asks for another one), or on a legacy
    /// session the one `initialize` negotiated.
    pub fn protocol_version(&self) -> String {
        match self.inner.transport.negotiated_version() {
            Some(version) => version,
            None => read(&self.inner.version).clone(),
        }
    }

    /// The version put in requests' `_meta` (a legacy transport strips it).
    pub(crate) fn request_version(&self) -> String {
        read(&self.inner.version).clone()
    }

    /// The era the server speaks: known after the first request (or at
    /// once when the transport forces one).
    ///
    /// ```
    /// use toolwire_client::{Client, transport::{Era, HttpTransport, ProtocolMode}};
    /// let transport = HttpTransport::builder("http://127.0.0.1:8080/mcp")
    ///     .protocol(ProtocolMode::Legacy)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(Client::builder(transport).build().era(), Some(Era::Legacy));
    /// ```
    pub fn era(&self) -> Option<Era> {
        self.inner.transport.era()
    }

    /// The capabilities declared on every request (from the installed handlers).
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// The result cache.
    pub fn cache(&self) -> &Cache {
        &self.inner.cache
    }

    /// The transport.
    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.inner.transport
    }

    /// Shuts the transport down (stdio: closes stdin, then SIGTERM, then SIGKILL).
    pub async fn close(&self) {
        self.inner.transport.close().await;
    }

    /// `server/discover`: versions, capabilities and instructions. Picks the
    /// preferred version the server supports for later requests.
    pub async fn discover(&self) -> Result<Fetched<DiscoverResult>, Error> {
        let (result, freshness) = self
            .cached("server/discover", JsonObject::new(), &RequestOptions::new())
            .await?;
        let hints = CacheHints::of(&result);
        let discovered: DiscoverResult = parse(result)?;
        if self.era() != Some(Era::Legacy) {
            let version = self.common_version(&discovered.supported_versions)?;
            *write(&self.inner.version) = version;
        }
        Ok(Fetched {
            value: discovered,
            freshness,
            hints,
        })
    }

    /// The first of our versions the server also speaks.
    fn common_version(&self, theirs: &[String]) -> Result<String, Error> {
        self.inner
            .versions
            .iter()
            .find(|v| theirs.contains(v))
            .cloned()
            .ok_or_else(|| Error::NoCommonVersion {
                ours: self.inner.versions.clone(),
                theirs: theirs.to_vec(),
            })
    }

    /// After -32022: the version to retry with, or the error to give up with.
    ///
    /// The version may be the one just used: a server that lists it as
    /// supported after refusing it (e.g. one replica behind a load balancer
    /// not upgraded yet) gets one retry with it, as the spec asks ("select a
    /// mutually supported version from the `supported` list and retry").
    /// Callers retry once, so this cannot loop.
    pub(crate) fn renegotiate(&self, used: &str, error: Error) -> Result<String, Error> {
        let Error::Protocol {
            code: code::UNSUPPORTED_PROTOCOL_VERSION,
            data,
            ..
        } = &error
        else {
            return Err(error);
        };
        let theirs: Vec<String> = data
            .as_ref()
            .and_then(|d| d.get("supported"))
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default();
        let version = self.common_version(&theirs)?;
        if version == used {
            tracing::info!(server = %self.inner.name, version = used, "the server refused a version it lists as supported; retrying once");
        } else {
            tracing::info!(server = %self.inner.name, from = used, to = %version, "switching protocol version");
            *write(&self.inner.version) = version.clone();
        }
        Ok(version)
    }

    /// Sends one request and waits for its result; on -32022 retries once
    /// with a version both sides speak.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: &JsonObject,
        options: &RequestOptions,
        param_headers: &[(String, String)],
    ) -> Result<ResultBody, Error> {
        let version = self.request_version();
        let first = self
            .request_once(method, params, options, param_headers, &version)
            .await;
        match first {
            Err(error) if error.code() == Some(code::UNSUPPORTED_PROTOCOL_VERSION) => {
                let version = self.renegotiate(&version, error)?;
                self.request_once(method, params, options, param_headers, &version)
                    .await
            }
            other => other,
        }
    }

    async fn request_once(
        &self,
        method: &str,
        params: &JsonObject,
        options: &RequestOptions,
        param_headers: &[(String, String)],
        version: &str,
    ) -> Result<ResultBody, Error> {
        let id = next_id();
        if toolwire_telemetry::enabled() {
            let kind = self.inner.transport.kind();
            let started = telemetry::start(method, params, &id, version, kind);
            let exchange = self.exchange(id, method, params, options, param_headers, version);
            // Boxed: the untraced path keeps its future's size.
            return Box::pin(telemetry::traced(started, exchange)).await;
        }
        self.exchange(id, method, params, options, param_headers, version)
            .await
    }

    /// Sends request `id` and waits for its response.
    async fn exchange(
        &self,
        id: RequestId,
        method: &str,
        params: &JsonObject,
        options: &RequestOptions,
        param_headers: &[(String, String)],
        version: &str,
    ) -> Result<ResultBody, Error> {
        let policy = self.inner.timeouts.for_request(options);
        let started = Instant::now();
        // Held until the response: the server may ask for input meanwhile.
        let _inputs = options.input.as_ref().map(|handler| {
            self.inner
                .request_inputs
                .register(id.clone(), Arc::clone(handler))
        });
        if options.cancel.is_some() && may_answer_with_task(method, options) {
            let outgoing =
                self.outgoing(id.clone(), method, params, options, param_headers, version);
            return self
                .exchange_minding_tasks(outgoing, id, options, policy, started)
                .await;
        }
        let mut exchange = self
            .send_as(id.clone(), method, params, options, param_headers, version)
            .await?;
        await_response(&mut exchange, &id, options, policy, started).await
    }

    /// [`Client::exchange`] for a cancellable `tools/call` that declared the
    /// Tasks extension: the server may make a task before it hears of the
    /// cancellation, and the caller would never see its id. So on
    /// cancellation the request still being sent is not dropped: it moves
    /// to a task of its own, which reads its answer in the background to
    /// cancel the task it may name. (It is polled in place until then: a
    /// task per call would cost a spawn and a hop between threads.)
    async fn exchange_minding_tasks(
        &self,
        outgoing: OutgoingRequest,
        id: RequestId,
        options: &RequestOptions,
        policy: TimeoutPolicy,
        started: Instant,
    ) -> Result<ResultBody, Error> {
        let transport = Arc::clone(&self.inner.transport);
        let mut sending: BoxFuture<'static, Result<Exchange, TransportError>> =
            Box::pin(async move { transport.send(outgoing).await });
        let sent = tokio::select! {
            sent = &mut sending => sent,
            _ = tokio::time::sleep(policy.timeout) => return Err(Error::Timeout(policy.timeout)),
            _ = cancelled(options) => {
                self.cancel_late_task(async move { sending.await.ok() }, id);
                return Err(Error::Cancelled);
            }
        };
        let mut exchange = sent?;
        let answer = await_response(&mut exchange, &id, options, policy, started).await;
        if matches!(answer, Err(Error::Cancelled)) {
            self.cancel_late_task(async move { Some(exchange) }, id);
        }
        answer
    }

    /// Reads the answer `exchange` brings (for at most [`LATE_TASK_WAIT`]),
    /// in the background, and cancels the task it names, if any.
    fn cancel_late_task(
        &self,
        exchange: impl Future<Output = Option<Exchange>> + Send + 'static,
        id: RequestId,
    ) {
        let client = self.clone();
        tokio::spawn(async move {
            let response = async {
                let mut exchange = exchange.await?;
                loop {
                    match exchange.next().await? {
                        Ok(Message::Result(response)) if response.id == id => {
                            return Some(response.result);
                        }
                        Ok(Message::Error(_)) | Err(_) => return None,
                        Ok(_) => {}
                    }
                }
            };
            let Ok(Some(result)) = tokio::time::timeout(LATE_TASK_WAIT, response).await else {
                return;
            };
            let Ok(created) = result.into_parsed::<CreateTaskResult>() else {
                return;
            };
            let task = client.task(created.task.task_id);
            if let Err(error) = task.cancel().await {
                tracing::warn!(task = %task.id(), %error, "tasks/cancel of a task made after its call was cancelled failed");
            }
        });
    }

    /// Builds and sends a request; returns its exchange and id.
    pub(crate) async fn open(
        &self,
        method: &str,
        params: &JsonObject,
        options: &RequestOptions,
        param_headers: &[(String, String)],
        version: &str,
    ) -> Result<(Exchange, RequestId), Error> {
        let id = next_id();
        let exchange = self
            .send_as(id.clone(), method, params, options, param_headers, version)
            .await?;
        Ok((exchange, id))
    }

    /// Builds and sends a request with id `id`; returns its exchange.
    async fn send_as(
        &self,
        id: RequestId,
        method: &str,
        params: &JsonObject,
        options: &RequestOptions,
        param_headers: &[(String, String)],
        version: &str,
    ) -> Result<Exchange, Error> {
        let outgoing = self.outgoing(id, method, params, options, param_headers, version);
        let policy = self.inner.timeouts.for_request(options);
        let send = self.inner.transport.send(outgoing);
        let exchange = tokio::select! {
            sent = send => sent?,
            _ = tokio::time::sleep(policy.timeout) => return Err(Error::Timeout(policy.timeout)),
            _ = cancelled(options) => return Err(Error::Cancelled),
        };
        Ok(exchange)
    }

    /// The request to send, with its mirrored headers.
    fn outgoing(
        &self,
        id: RequestId,
        method: &str,
        params: &JsonObject,
        options: &RequestOptions,
        param_headers: &[(String, String)],
        version: &str,
    ) -> OutgoingRequest {
        OutgoingRequest {
            request: self.build_request(id, method, params, options, version),
            param_headers: param_headers.to_vec(),
            // Borrowed for every revision this crate negotiates.
            protocol_version: Some(revision_text(version)),
        }
    }

    /// The one place `_meta` is built.
    fn build_request(
        &self,
        id: RequestId,
        method: &str,
        params: &JsonObject,
        options: &RequestOptions,
        version: &str,
    ) -> Request {
        let meta = RequestMeta {
            extra: &options.meta,
            version,
            capabilities: options.capabilities.as_ref(),
            declared: &self.inner.declared,
            progress_token: options.sink.is_some().then_some(&id),
            log_level: options.log_level,
            trace: toolwire_telemetry::enabled()
                .then(|| TraceHeaders::of(&tracing::Span::current()))
                .flatten(),
        };
        let params = params_with_meta(params, &meta);
        Request::with_params(id, method, Some(params))
    }

    /// Runs a request that may answer `input_required` until it completes:
    /// each round asks the handlers, then retries with a new id.
    /// `first` is the first round's result when the caller already has it.
    /// Returns the complete result and how many requests it took.
    pub(crate) async fn run_rounds(
        &self,
        origin: &Origin,
        params: &JsonObject,
        options: &RequestOptions,
        param_headers: &[(String, String)],
        first: Option<ResultBody>,
    ) -> Result<Rounds, Error> {
        if let Some(span) = telemetry::rounds_span(&origin.method, &origin.target) {
            let rounds = self.run_rounds_untraced(origin, params, options, param_headers, first);
            return Box::pin(rounds.instrument(span)).await;
        }
        self.run_rounds_untraced(origin, params, options, param_headers, first)
            .await
    }

    async fn run_rounds_untraced(
        &self,
        origin: &Origin,
        params: &JsonObject,
        options: &RequestOptions,
        param_headers: &[(String, String)],
        first: Option<ResultBody>,
    ) -> Result<Rounds, Error> {
        let method = origin.method.as_str();
        let mut result = match first {
            Some(result) => result,
            None => self.request(method, params, options, param_headers).await?,
        };
        let mut round = 0;
        loop {
            let result_type = kind_of(&result)?;
            let done = |result| Rounds {
                result,
                result_type,
                rounds: round + 1,
            };
            match result_type {
                ResultType::Complete => return Ok(done(result)),
                ResultType::InputRequired if round == self.inner.max_rounds => {
                    return Err(Error::TooManyRounds(self.inner.max_rounds));
                }
                ResultType::InputRequired => {}
                // A task handle answers only a `tools/call` that declared the
                // Tasks extension; anything else is invalid (SEP-2663).
                ResultType::Task
                    if method == "tools/call"
                        && options
                            .capabilities
                            .as_ref()
                            .is_some_and(|c| c.declares_extension(TASKS_EXTENSION)) =>
                {
                    return Ok(done(result));
                }
                ResultType::Task => {
                    return Err(Error::InvalidReply(
                        "the server answered with a task (resultType \"task\") although this request did not declare the tasks extension".into(),
                    ));
                }
            }
            round += 1;
            let asked = parse_input_required(result)?;
            let responses = answer_all(
                &self.inner.handlers,
                options.input.as_ref(),
                origin,
                round,
                &asked,
            )
            .await?;
            let retry = retry_params(params, responses, asked.request_state);
            result = self.request(method, &retry, options, param_headers).await?;
        }
    }

    pub(crate) fn origin(&self, method: &str, target: &str) -> Origin {
        Origin {
            server: self.inner.name.clone(),
            method: method.to_owned(),
            target: target.to_owned(),
        }
    }

    pub(crate) fn transport_kind(&self) -> TransportKind {
        self.inner.transport.kind()
    }
}

/// How long a cancelled call's response is still awaited for the id of a
/// task the server may have made meanwhile. Over Streamable HTTP closing
/// the stream is the cancellation, so a plain call's cancellation reaches
/// the server this much later: a task's answer comes at once, so this is
/// short.
const LATE_TASK_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// True for a `tools/call` that declared the Tasks extension: its answer
/// may be a task.
fn may_answer_with_task(method: &str, options: &RequestOptions) -> bool {
    method == "tools/call"
        && options
            .capabilities
            .as_ref()
            .is_some_and(|c| c.declares_extension(TASKS_EXTENSION))
}

/// Waits for the response to request `id`, passing notifications to the
/// sink. Times out after the idle timeout (restarted by progress when so
/// configured) or the hard maximum, whichever comes first.
async fn await_response(
    exchange: &mut Exchange,
    id: &RequestId,
    options: &RequestOptions,
    policy: TimeoutPolicy,
    started: Instant,
) -> Result<ResultBody, Error> {
    let hard = started + policy.max_timeout;
    let mut deadline = hard.min(Instant::now() + policy.timeout);
    loop {
        let message = tokio::select! {
            message = exchange.next() => message,
            _ = sleep_until(deadline) => return Err(Error::Timeout(started.elapsed())),
            _ = cancelled(options) => return Err(Error::Cancelled),
        };
        match message {
            None => return Err(TransportError::Closed(" (no response)".into()).into()),
            Some(Err(error)) => return Err(error.into()),
            Some(Ok(Message::Result(response))) if &response.id == id => return Ok(response.result),
            Some(Ok(Message::Error(response))) => return Err(response.error.into()),
            Some(Ok(Message::Notification(notification))) => {
                let is_progress = notification.method == "notifications/progress";
                if is_progress && policy.reset_on_progress {
                    deadline = hard.min(Instant::now() + policy.timeout);
                }
                if let Some(sink) = &options.sink {
                    sink(RequestNotification::from_notification(notification));
                }
            }
            Some(Ok(other)) => {
                tracing::debug!(?other, "unexpected message on a request's stream (ignored)");
            }
        }
    }
}

/// Resolves when the request's cancellation token fires (never without one).
pub(crate) async fn cancelled(options: &RequestOptions) {
    match &options.cancel {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

/// `resultType` of a result: absent is complete; an unknown value is invalid.
pub(crate) fn result_type(result: &JsonObject) -> Result<ResultType, Error> {
    ResultType::of(result).map_err(|e| Error::InvalidReply(format!("bad resultType: {e}")))
}

/// `resultType` of a result as received.
pub(crate) fn kind_of(result: &ResultBody) -> Result<ResultType, Error> {
    result
        .result_type()
        .map_err(|e| Error::InvalidReply(format!("bad resultType: {e}")))
}

/// Parses a complete result as `T`.
pub(crate) fn parse<T: DeserializeOwned>(result: impl Into<ResultBody>) -> Result<T, Error> {
    let result = result.into();
    if kind_of(&result)? != ResultType::Complete {
        return Err(Error::InvalidReply(
            "input_required is not allowed for this request".into(),
        ));
    }
    parse_complete(result)
}

/// Parses a result already known to be complete as `T`.
pub(crate) fn parse_complete<T: DeserializeOwned>(result: ResultBody) -> Result<T, Error> {
    result
        .into_parsed()
        .map_err(|e| Error::InvalidReply(e.to_string()))
}

/// What [`Client::run_rounds`] ends with: a complete result (or a task's,
/// when the request allowed one) and how many requests it took.
#[derive(Debug)]
pub(crate) struct Rounds {
    pub(crate) result: ResultBody,
    /// `complete` or `task`.
    pub(crate) result_type: ResultType,
    pub(crate) rounds: usize,
}

pub(crate) fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(crate) fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
