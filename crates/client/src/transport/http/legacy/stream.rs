//! A legacy session's SSE streams: a request's POST stream (resumed with
//! `Last-Event-ID` after the server's `retry` delay when it ends early),
//! the standalone GET stream, and an HTTP+SSE session's one stream. Every
//! message is dispatched: responses by id, server requests to the client's
//! handler, notifications to the request and the session's listeners.

use std::sync::{Arc, Weak};
use std::time::Duration;

use reqwest::Method;
use reqwest::header::{ACCEPT, HeaderValue};
use tokio::sync::mpsc;
use toolwire_protocol::{Message, Notification, Request, RequestId};

use super::super::{Headers, HttpInner, HttpResponse, content_type, insert, lock, read_limited};
use super::post_message;
use super::session::HttpSession;
use crate::transport::legacy::answer_inbound;
use crate::transport::sse::SseParser;
use crate::transport::{Exchange, TransportError};

type Sender = mpsc::UnboundedSender<Result<Message, TransportError>>;

/// How long to wait before reconnecting when the server gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// How long to wait for the standalone GET stream's response headers.
const GET_OPEN_TIMEOUT: Duration = Duration::from_secs(5);
/// Reconnections in a row without a new event before giving up.
const MAX_RECONNECTS: u32 = 5;

/// Reads a request's SSE stream in a task, resuming it with a GET when it
/// ends before the response. Dropping the exchange first sends
/// `notifications/cancelled`.
pub(super) fn stream_exchange(
    inner: &Arc<HttpInner>,
    session: &Arc<HttpSession>,
    target: Target,
    rx: mpsc::UnboundedReceiver<Result<Message, TransportError>>,
    response: HttpResponse,
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
pub(super) async fn start_get_stream(inner: &Arc<HttpInner>, session: &Arc<HttpSession>) {
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
    response: HttpResponse,
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
pub(super) struct Target {
    pub(super) id: RequestId,
    pub(super) tx: Sender,
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
    async fn run(self, response: HttpResponse) {
        let parser = SseParser::new(self.inner.max_message_bytes);
        self.run_with(parser, response).await;
    }

    /// [`Stream::run`] for a body partly read by `parser` already.
    async fn run_with(self, mut parser: SseParser, mut response: HttpResponse) {
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
    async fn read(&self, response: &mut HttpResponse, parser: &mut SseParser) -> Ended {
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
    async fn open_get(&self, last_event_id: Option<&str>) -> Result<HttpResponse, TransportError> {
        let make_headers = || {
            let mut headers = self.inner.headers.clone();
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            self.session.insert_headers(&mut headers)?;
            if let Some(last) = last_event_id {
                insert(&mut headers, "Last-Event-ID", last)?;
            }
            Ok(headers)
        };
        let headers = Headers::new(&make_headers)?;
        let response = self
            .inner
            .send_raw(Method::GET, headers, Vec::new())
            .await?;
        let status = response.status();
        if status.is_success() && content_type(&response).starts_with("text/event-stream") {
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
    response: &mut HttpResponse,
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
pub(super) struct CancelOnDrop {
    pub(super) inner: Weak<HttpInner>,
    pub(super) session: Weak<HttpSession>,
    pub(super) id: RequestId,
    /// The task reading the request's own stream (none on HTTP+SSE).
    pub(super) task: Option<tokio::task::AbortHandle>,
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
