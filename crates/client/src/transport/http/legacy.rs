//! Legacy (2025-11-25 era) sessions over Streamable HTTP: `initialize`,
//! `Mcp-Session-Id` and `MCP-Protocol-Version` on every later request, one
//! re-initialise and retry when the session expired (404), SSE streams
//! resumed with `Last-Event-ID` after the `retry` delay, the standalone
//! `GET` stream for unsolicited notifications and requests, server→client
//! requests answered with a POST, `notifications/cancelled` when a request is
//! dropped, and `DELETE` on close. A server that refuses the `initialize`
//! POST with 400, 404 or 405 may run the deprecated 2024-11-05 HTTP+SSE
//! transport instead; see [`old_sse`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use reqwest::Method;
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use serde_json::Value;
use tokio::sync::mpsc;
use toolwire_protocol::{Message, Notification, Request, RequestId, keys};

use super::old_sse;
use super::{
    HttpInner, OutgoingRequest, PROTOCOL_VERSION_HEADER, Reply, ReplyBody, SESSION_ID_HEADER,
    insert, lock, read_limited,
};
use crate::transport::legacy::{
    LegacySession, Related, accept_initialize, answer_inbound, initialize_request,
    initialized_notification, internal_id, strip_modern_meta, subscribe_request,
};
use crate::transport::sse::SseParser;
use crate::transport::{Exchange, TransportError};

type Sender = mpsc::UnboundedSender<Result<Message, TransportError>>;

/// How long to wait before reconnecting when the server gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// How long to wait for the answer to a request of the transport's own.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long to wait for the standalone GET stream's response headers.
const GET_OPEN_TIMEOUT: Duration = Duration::from_secs(5);
/// Reconnections in a row without a new event before giving up.
const MAX_RECONNECTS: u32 = 5;

/// One open legacy session on an HTTP server.
#[derive(Debug)]
pub(super) struct HttpSession {
    /// `Mcp-Session-Id`, when the server assigned one.
    id: Option<String>,
    /// Where messages are POSTed on a 2024-11-05 HTTP+SSE server (its
    /// `endpoint` event); `None` on Streamable HTTP (the endpoint URL).
    endpoint: Option<reqwest::Url>,
    /// Set when the session ended (its HTTP+SSE stream closed).
    dead: AtomicBool,
    state: LegacySession,
    /// The standalone GET stream's task, once started.
    get_stream: Mutex<Option<tokio::task::AbortHandle>>,
    /// Requests waiting for their response. A server may send a response
    /// on any stream of the session (e.g. the GET stream a resumed request
    /// stream was folded into), so responses are routed by id.
    pending: Mutex<HashMap<RequestId, Waiting>>,
}

/// A request waiting for its response.
#[derive(Debug)]
struct Waiting {
    tx: Sender,
    related: Related,
    /// Its `progressToken`, to route progress that arrives on the GET stream.
    progress_token: Option<Value>,
}

impl Waiting {
    fn new(tx: Sender, request: &Request) -> Waiting {
        let progress_token = request
            .params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(keys::PROGRESS_TOKEN))
            .cloned();
        Waiting {
            tx,
            related: Related::of(request),
            progress_token,
        }
    }
}

impl HttpSession {
    /// Adds `Mcp-Session-Id` and `MCP-Protocol-Version`.
    pub(super) fn insert_headers(&self, headers: &mut HeaderMap) -> Result<(), TransportError> {
        insert(headers, PROTOCOL_VERSION_HEADER, self.state.version())?;
        if let Some(id) = &self.id {
            insert(headers, SESSION_ID_HEADER, id)?;
        }
        Ok(())
    }
}

impl HttpSession {
    pub(super) fn new(
        id: Option<String>,
        endpoint: Option<reqwest::Url>,
        init: toolwire_protocol::InitializeResult,
    ) -> HttpSession {
        HttpSession {
            id,
            endpoint,
            dead: AtomicBool::new(false),
            state: LegacySession::new(init),
            get_stream: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// Hands a response to the request it answers; false when none waits.
    fn deliver(&self, id: &RequestId, message: Message) -> bool {
        match lock(&self.pending).remove(id) {
            Some(Waiting { tx, .. }) => {
                let _ = tx.send(Ok(message));
                true
            }
            None => false,
        }
    }

    /// Where to POST messages.
    fn post_url<'a>(&'a self, inner: &'a HttpInner) -> &'a reqwest::Url {
        self.endpoint.as_ref().unwrap_or(&inner.url)
    }

    /// Hands a notification that arrived on the GET stream to the requests
    /// it concerns: progress by token, log messages to every one waiting.
    fn route_unsolicited(&self, notification: &Notification) {
        let pending = lock(&self.pending);
        let token = notification
            .params
            .as_ref()
            .and_then(|p| p.get("progressToken"));
        for waiting in pending.values() {
            let concerned = match notification.method.as_str() {
                "notifications/progress" => {
                    token.is_some() && waiting.progress_token.as_ref() == token
                }
                "notifications/message" => true,
                _ => false,
            };
            if concerned {
                let _ = waiting
                    .tx
                    .send(Ok(Message::Notification(notification.clone())));
            }
        }
    }

    fn is_pending(&self, id: &RequestId) -> bool {
        lock(&self.pending).contains_key(id)
    }

    fn related_of(&self, id: &RequestId) -> Option<Related> {
        lock(&self.pending).get(id).map(|w| w.related.clone())
    }

    /// The request in flight, when there is exactly one.
    fn only_pending(&self) -> Option<Related> {
        let pending = lock(&self.pending);
        match pending.len() {
            1 => pending.values().next().map(|w| w.related.clone()),
            _ => None,
        }
    }

    /// Ends the session's streams (the GET stream's task holds the session,
    /// so this is not left to `Drop`).
    fn end(&self, reason: &str) {
        if let Some(task) = lock(&self.get_stream).take() {
            task.abort();
        }
        self.dead.store(true, Ordering::SeqCst);
        for (_, Waiting { tx, .. }) in lock(&self.pending).drain() {
            let _ = tx.send(Err(TransportError::Closed(reason.to_owned())));
        }
        self.state.end(reason);
    }
}

/// The version of the open session, if any.
pub(super) fn negotiated_version(inner: &HttpInner) -> Option<String> {
    let session = inner.session.try_lock().ok()?;
    session.as_ref().map(|s| s.state.version().to_owned())
}

/// True when opening a session failed in a way that says the server is
/// not (or no longer) a legacy one.
pub(super) fn is_handshake_refusal(error: &TransportError) -> bool {
    match error {
        TransportError::Handshake(_) => true,
        TransportError::Http { status, .. } => {
            (400..500).contains(status) && !matches!(status, 401 | 403 | 408 | 429)
        }
        _ => false,
    }
}

/// Sends one request over the legacy session, opening it first when
/// needed; a 404 (the session expired) opens a new one and retries once.
pub(super) async fn send(
    inner: &Arc<HttpInner>,
    outgoing: OutgoingRequest,
) -> Result<Exchange, TransportError> {
    let session = open_session(inner, &outgoing.request).await?;
    match exchange(inner, &session, outgoing.clone()).await {
        Err(TransportError::Http { status: 404, .. }) if session.id.is_some() => {
            tracing::info!(url = %inner.url, "the legacy session expired (404); initialising a new one");
            forget(inner, &session).await;
            let session = open_session(inner, &outgoing.request).await?;
            exchange(inner, &session, outgoing).await
        }
        other => other,
    }
}

/// The open session, or a new one opened with `initialize` built from `first`.
async fn open_session(
    inner: &Arc<HttpInner>,
    first: &Request,
) -> Result<Arc<HttpSession>, TransportError> {
    let mut slot = inner.session.lock().await;
    if let Some(session) = slot.as_ref().filter(|s| !s.dead.load(Ordering::SeqCst)) {
        return Ok(Arc::clone(session));
    }
    let request = initialize_request(internal_id("initialize"), first);
    let mut headers = base_headers(inner, &request.method)?;
    headers.insert(ACCEPT, HeaderValue::from_static(super::ACCEPT_BOTH));
    let reply = match inner
        .post(headers, encode(&Message::Request(request))?)
        .await
    {
        Err(
            refused @ TransportError::Http {
                status: 400 | 404 | 405,
                ..
            },
        ) => {
            let session = old_sse::open(inner, first).await.map_err(|error| {
                tracing::debug!(%error, "not an HTTP+SSE server either");
                refused
            })?;
            *slot = Some(Arc::clone(&session));
            return Ok(session);
        }
        other => other?,
    };
    let session_id = reply.session_id.clone();
    let init = accept_initialize(first_response(inner, reply).await?)?;
    let session = Arc::new(HttpSession::new(session_id, None, init));
    let initialized = Message::Notification(initialized_notification());
    post_message(inner, &session, &initialized).await?;
    tracing::info!(url = %inner.url, version = session.state.version(), session = ?session.id, "legacy session opened");
    // Servers send requests and notifications that belong to no request
    // (e.g. an elicitation a tool makes without naming its request) there.
    start_get_stream(inner, &session).await;
    *slot = Some(Arc::clone(&session));
    Ok(session)
}

/// Drops `session` if it is still the open one.
async fn forget(inner: &HttpInner, session: &Arc<HttpSession>) {
    let mut slot = inner.session.lock().await;
    if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, session)) {
        if let Some(old) = slot.take() {
            old.end(" (the legacy session expired)");
        }
    }
}

/// Ends the session: `DELETE` with its id (servers may refuse with 405).
pub(super) async fn close(inner: &HttpInner) {
    let Some(session) = inner.session.lock().await.take() else {
        return;
    };
    session.end(" (transport closed)");
    if session.id.is_none() {
        return;
    }
    let Ok(mut headers) = base_headers(inner, "") else {
        return;
    };
    if session.insert_headers(&mut headers).is_err() {
        return;
    }
    match inner.send_raw(Method::DELETE, headers, Vec::new()).await {
        Ok(response) => tracing::debug!(status = %response.status(), "legacy session deleted"),
        Err(error) => tracing::debug!(%error, "DELETE of the legacy session failed"),
    }
}

/// One request on the session: answered locally (`server/discover`,
/// `subscriptions/listen`) or POSTed with the session headers.
async fn exchange(
    inner: &Arc<HttpInner>,
    session: &Arc<HttpSession>,
    outgoing: OutgoingRequest,
) -> Result<Exchange, TransportError> {
    let OutgoingRequest {
        mut request,
        param_headers,
    } = outgoing;
    match request.method.as_str() {
        "server/discover" => {
            return Ok(Exchange::ready(vec![Ok(session
                .state
                .discover_reply(request.id))]));
        }
        "subscriptions/listen" => return listen(inner, session, &request).await,
        _ => {}
    }
    let asks = strip_modern_meta(&mut request);
    if let Some(set_level) = session
        .state
        .set_level_request(internal_id("set-level"), &asks)
    {
        if let Err(error) = call(inner, session, set_level).await {
            tracing::warn!(%error, "logging/setLevel failed");
        }
    }
    let outgoing = OutgoingRequest {
        request,
        param_headers,
    };
    let headers = inner.request_headers(&outgoing, Some(session))?;
    let id = outgoing.request.id.clone();
    let body = encode(&Message::Request(outgoing.request.clone()))?;
    // Pending from before the POST: a request of the server's may arrive
    // on the GET stream while the POST waits for its reply headers.
    let (tx, rx) = mpsc::unbounded_channel();
    let waiting = Waiting::new(tx.clone(), &outgoing.request);
    lock(&session.pending).insert(id.clone(), waiting);
    let reply = inner.post_to(session.post_url(inner), headers, body).await;
    let stream = match reply.map(|r| r.body) {
        Ok(ReplyBody::Stream(response)) => response,
        // HTTP+SSE: accepted here, answered on the session's GET stream.
        Ok(ReplyBody::Accepted(_)) if session.endpoint.is_some() => {
            let guard = CancelOnDrop {
                inner: Arc::downgrade(inner),
                session: Arc::downgrade(session),
                id,
                task: None,
            };
            return Ok(Exchange::new(rx, Some(Box::new(guard))));
        }
        other => {
            lock(&session.pending).remove(&id);
            return match other? {
                ReplyBody::Message(message) => Ok(Exchange::ready(vec![Ok(message)])),
                _ => Ok(Exchange::ready(vec![Err(TransportError::Closed(
                    " (HTTP 2xx with no body)".into(),
                ))])),
            };
        }
    };
    Ok(stream_exchange(
        inner,
        session,
        Target { id, tx },
        rx,
        stream,
    ))
}

/// `subscriptions/listen` on a legacy session: acknowledged at once with
/// what the server's capabilities allow, fed from the standalone GET stream
/// (and any notification on the POST streams); resource subscriptions are
/// made with `resources/subscribe`.
async fn listen(
    inner: &Arc<HttpInner>,
    session: &Arc<HttpSession>,
    request: &Request,
) -> Result<Exchange, TransportError> {
    let (exchange, uris) = session.state.listen(request);
    for uri in uris {
        if let Err(error) = call(
            inner,
            session,
            subscribe_request(internal_id("subscribe"), &uri),
        )
        .await
        {
            tracing::warn!(%uri, %error, "resources/subscribe failed");
        }
    }
    let running = lock(&session.get_stream).is_some();
    if !running {
        start_get_stream(inner, session).await;
    }
    Ok(exchange)
}

/// Sends a request of the transport's own and waits for its response.
async fn call(
    inner: &Arc<HttpInner>,
    session: &Arc<HttpSession>,
    request: Request,
) -> Result<Message, TransportError> {
    let outgoing = OutgoingRequest::new(request);
    let mut exchange = Box::pin(exchange(inner, session, outgoing)).await?;
    let wait = async {
        loop {
            match exchange.next().await {
                None => return Err(TransportError::Closed(" (no response)".into())),
                Some(Err(error)) => return Err(error),
                Some(Ok(message @ (Message::Result(_) | Message::Error(_)))) => return Ok(message),
                Some(Ok(_)) => continue,
            }
        }
    };
    tokio::time::timeout(CALL_TIMEOUT, wait)
        .await
        .map_err(|_| TransportError::Io("no answer within 30 s".into()))?
}

/// The first response in a reply (JSON, or the first one on an SSE stream).
async fn first_response(inner: &HttpInner, reply: Reply) -> Result<Message, TransportError> {
    match reply.body {
        ReplyBody::Message(message) => Ok(message),
        ReplyBody::Accepted(status) => Err(TransportError::Closed(format!(
            " (HTTP {status} with no body)"
        ))),
        ReplyBody::Stream(mut response) => {
            let mut parser = SseParser::new(inner.max_message_bytes);
            while let Some(chunk) = next_chunk(&mut response).await? {
                for data in parser.push(chunk.as_ref()).map_err(too_large)? {
                    match Message::from_slice(data.as_bytes()) {
                        Ok(message @ (Message::Result(_) | Message::Error(_))) => {
                            return Ok(message);
                        }
                        _ => continue,
                    }
                }
            }
            Err(TransportError::Closed(
                " (SSE stream ended before the response)".into(),
            ))
        }
    }
}

/// POSTs a notification or a response with the session headers.
pub(super) async fn post_message(
    inner: &HttpInner,
    session: &HttpSession,
    message: &Message,
) -> Result<(), TransportError> {
    let method = message.method().unwrap_or("");
    let mut headers = base_headers(inner, method)?;
    headers.insert(ACCEPT, HeaderValue::from_static(super::ACCEPT_BOTH));
    session.insert_headers(&mut headers)?;
    let response = inner
        .send_raw_to(
            Method::POST,
            session.post_url(inner),
            headers,
            encode(message)?,
        )
        .await?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let body = read_limited(response, 4096).await.unwrap_or_default();
    Err(TransportError::Http {
        status: status.as_u16(),
        body: String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned(),
    })
}

pub(super) fn base_headers(inner: &HttpInner, method: &str) -> Result<HeaderMap, TransportError> {
    let mut headers = inner.headers.clone();
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if !method.is_empty() {
        insert(&mut headers, super::METHOD_HEADER, method)?;
    }
    Ok(headers)
}

pub(super) fn encode(message: &Message) -> Result<Vec<u8>, TransportError> {
    serde_json::to_vec(message).map_err(|e| TransportError::Malformed(e.to_string()))
}

/// Reads a request's SSE stream in a task, resuming it with a GET when it
/// ends before the response. Dropping the exchange first sends
/// `notifications/cancelled`.
fn stream_exchange(
    inner: &Arc<HttpInner>,
    session: &Arc<HttpSession>,
    target: Target,
    rx: mpsc::UnboundedReceiver<Result<Message, TransportError>>,
    response: reqwest::Response,
) -> Exchange {
    let id = target.id.clone();
    let stream = Stream {
        inner: Arc::clone(inner),
        session: Arc::clone(session),
        target: Some(target),
    };
    let task = tokio::spawn(stream.run(response));
    let guard = CancelOnDrop {
        inner: Arc::downgrade(inner),
        session: Arc::downgrade(session),
        id,
        task: Some(task.abort_handle()),
    };
    Exchange::new(rx, Some(Box::new(guard)))
}

/// Opens the standalone GET stream and reads it in a task. It is open
/// before the first request goes out: a server drops what it sends there
/// while no GET stream is connected.
async fn start_get_stream(inner: &Arc<HttpInner>, session: &Arc<HttpSession>) {
    let stream = Stream {
        inner: Arc::clone(inner),
        session: Arc::clone(session),
        target: None,
    };
    let opened = tokio::time::timeout(GET_OPEN_TIMEOUT, stream.open_get(None)).await;
    let response = match opened {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => {
            tracing::info!(%error, "no standalone GET stream; the server's own messages arrive only on request streams");
            return;
        }
        Err(_) => {
            tracing::info!("the standalone GET stream did not open in time; going on without it");
            return;
        }
    };
    let task = tokio::spawn(stream.run(response));
    *lock(&session.get_stream) = Some(task.abort_handle());
}

/// Reads the stream of a 2024-11-05 HTTP+SSE session (past its `endpoint`
/// event) in a task: every response and server request arrives there.
pub(super) fn read_session_stream(
    inner: &Arc<HttpInner>,
    session: &Arc<HttpSession>,
    parser: SseParser,
    response: reqwest::Response,
) {
    let stream = Stream {
        inner: Arc::clone(inner),
        session: Arc::clone(session),
        target: None,
    };
    let task = tokio::spawn(stream.run_with(parser, response));
    *lock(&session.get_stream) = Some(task.abort_handle());
}

/// The request an SSE stream answers, if any.
#[derive(Debug)]
struct Target {
    id: RequestId,
    tx: Sender,
}

/// One SSE stream of the session, across its reconnections.
struct Stream {
    inner: Arc<HttpInner>,
    session: Arc<HttpSession>,
    target: Option<Target>,
}

/// How a stream's body ended.
enum Ended {
    /// The response arrived, or nobody listens any more: stop.
    Done,
    /// The body ended (or broke) first: reconnect if it can be resumed.
    Early(Option<TransportError>),
    /// It cannot go on.
    Failed(TransportError),
}

impl Stream {
    /// Reads the stream, reconnecting with `Last-Event-ID` after the
    /// server's `retry` delay while it ends before its response.
    async fn run(self, response: reqwest::Response) {
        let parser = SseParser::new(self.inner.max_message_bytes);
        self.run_with(parser, response).await;
    }

    /// [`Stream::run`] for a body partly read by `parser` already.
    async fn run_with(self, mut parser: SseParser, mut response: reqwest::Response) {
        let mut reconnects = 0;
        loop {
            let seen = parser.last_event_id.clone();
            let broke = match self.read(&mut response, &mut parser).await {
                Ended::Done => return,
                Ended::Failed(error) => return self.fail(error),
                Ended::Early(broke) => broke,
            };
            if self.answered_elsewhere() {
                return;
            }
            if self.session.endpoint.is_some() {
                // An HTTP+SSE stream cannot be resumed: a new GET is a new session.
                let ended = TransportError::Closed(" (the HTTP+SSE stream ended)".into());
                return self.fail(broke.unwrap_or(ended));
            }
            let Some(last) = parser.last_event_id.clone() else {
                let error = broke.unwrap_or_else(|| {
                    TransportError::Closed(" (SSE stream ended before the response)".into())
                });
                return self.fail(error);
            };
            reconnects = if seen.as_ref() == Some(&last) {
                reconnects + 1
            } else {
                1
            };
            if reconnects > MAX_RECONNECTS {
                return self.fail(TransportError::Closed(format!(
                    " (SSE stream could not be resumed after {MAX_RECONNECTS} attempts)"
                )));
            }
            let delay = parser.retry_ms.map_or(DEFAULT_RETRY, Duration::from_millis);
            tokio::time::sleep(delay).await;
            response = match self.open_get(Some(&last)).await {
                Ok(response) => response,
                Err(error) => return self.fail(error),
            };
        }
    }

    /// Reads one body to its end.
    async fn read(&self, response: &mut reqwest::Response, parser: &mut SseParser) -> Ended {
        loop {
            let chunk = match next_chunk(response).await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Ended::Early(None),
                Err(error) => return Ended::Early(Some(error)),
            };
            let events = match parser.push(chunk.as_ref()) {
                Ok(events) => events,
                Err(e) => return Ended::Failed(too_large(e)),
            };
            for data in events {
                if self.dispatch(&data) {
                    return Ended::Done;
                }
            }
        }
    }

    /// Handles one event; true when the stream's work is done.
    fn dispatch(&self, data: &str) -> bool {
        if data.trim().is_empty() {
            return false;
        }
        let message = match Message::from_slice(data.as_bytes()) {
            Ok(message) => message,
            Err(e) => {
                tracing::warn!(error = %e, "SSE event is not a JSON-RPC message (ignored)");
                return false;
            }
        };
        match message {
            Message::Request(request) => {
                self.answer(request);
                false
            }
            Message::Notification(notification) => {
                self.session.state.broadcast(&notification);
                if self.target.is_none() {
                    self.session.route_unsolicited(&notification);
                }
                match &self.target {
                    Some(target) => target
                        .tx
                        .send(Ok(Message::Notification(notification)))
                        .is_err(),
                    None => false,
                }
            }
            Message::Result(_) | Message::Error(_) => self.deliver(message),
        }
    }

    /// Routes a response by its id; true when it ends this stream's work.
    fn deliver(&self, message: Message) -> bool {
        let id = match &message {
            Message::Result(r) => Some(r.id.clone()),
            Message::Error(e) => e.id.clone(),
            _ => None,
        };
        let Some(id) = id else {
            tracing::warn!(?message, "error response without an id (ignored)");
            return false;
        };
        if !self.session.deliver(&id, message) {
            tracing::debug!(%id, "response for no pending request (ignored)");
        }
        self.target.as_ref().is_some_and(|t| t.id == id)
    }

    /// Answers a server→client request with a POST, in a task of its own
    /// (the handler may wait for the user).
    fn answer(&self, request: Request) {
        let inner = Arc::clone(&self.inner);
        let session = Arc::clone(&self.session);
        let related = match &self.target {
            Some(target) => self.session.related_of(&target.id),
            None => self.session.only_pending(),
        };
        let reply = answer_inbound(inner.inbound.get(), request, related);
        tokio::spawn(async move {
            let response = reply.await;
            if let Err(error) = post_message(&inner, &session, &response).await {
                tracing::warn!(%error, "sending the answer to the server's request failed");
            }
        });
    }

    /// Opens (or resumes) a GET stream.
    async fn open_get(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<reqwest::Response, TransportError> {
        let mut headers = self.inner.headers.clone();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        self.session.insert_headers(&mut headers)?;
        if let Some(last) = last_event_id {
            insert(&mut headers, "Last-Event-ID", last)?;
        }
        let response = self
            .inner
            .send_raw(Method::GET, headers, Vec::new())
            .await?;
        let status = response.status();
        if status.is_success() && super::content_type(&response).starts_with("text/event-stream") {
            return Ok(response);
        }
        let body = read_limited(response, 4096).await.unwrap_or_default();
        Err(TransportError::Http {
            status: status.as_u16(),
            body: String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned(),
        })
    }

    /// True when this stream's request got its response on another stream.
    fn answered_elsewhere(&self) -> bool {
        self.target
            .as_ref()
            .is_some_and(|t| !self.session.is_pending(&t.id))
    }

    fn fail(&self, error: TransportError) {
        match &self.target {
            Some(target) => {
                if lock(&self.session.pending).remove(&target.id).is_some() {
                    let _ = target.tx.send(Err(error));
                }
            }
            None if self.session.endpoint.is_some() => {
                tracing::warn!(%error, "the HTTP+SSE stream ended; the session is over");
                self.session.end(" (the HTTP+SSE stream ended)");
            }
            None => tracing::info!(%error, "the standalone GET stream ended"),
        }
    }
}

pub(super) async fn next_chunk(
    response: &mut reqwest::Response,
) -> Result<Option<impl AsRef<[u8]> + use<>>, TransportError> {
    response
        .chunk()
        .await
        .map_err(|e| TransportError::Io(format!("SSE stream broke: {e}")))
}

pub(super) fn too_large(e: crate::transport::sse::EventTooLarge) -> TransportError {
    TransportError::Malformed(format!("SSE event larger than {} bytes", e.0))
}

/// Stops reading a request's stream when its exchange is dropped, and tells
/// the server with `notifications/cancelled` when no response came yet.
#[derive(Debug)]
struct CancelOnDrop {
    inner: Weak<HttpInner>,
    session: Weak<HttpSession>,
    id: RequestId,
    /// The task reading the request's own stream (none on HTTP+SSE).
    task: Option<tokio::task::AbortHandle>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
        let (Some(inner), Some(session)) = (self.inner.upgrade(), self.session.upgrade()) else {
            return;
        };
        if lock(&session.pending).remove(&self.id).is_none() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let params = serde_json::json!({"requestId": self.id, "reason": "cancelled by the client"});
        let cancelled = Message::Notification(Notification::new(
            "notifications/cancelled",
            params.as_object().cloned(),
        ));
        runtime.spawn(async move {
            if let Err(error) = post_message(&inner, &session, &cancelled).await {
                tracing::debug!(%error, "notifications/cancelled was not delivered");
            }
        });
    }
}
