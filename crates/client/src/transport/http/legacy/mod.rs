//! Legacy (2025-11-25 era) sessions over Streamable HTTP: `initialize`,
//! `Mcp-Session-Id` and `MCP-Protocol-Version` on every later request, one
//! re-initialise and retry when the session expired (404), SSE streams
//! resumed with `Last-Event-ID` after the `retry` delay, the standalone
//! `GET` stream for unsolicited notifications and requests, server→client
//! requests answered with a POST, `notifications/cancelled` when a request is
//! dropped, and `DELETE` on close. A server that refuses the `initialize`
//! POST with 400, 404 or 405 may run the deprecated 2024-11-05 HTTP+SSE
//! transport instead; see [`old_sse`].
//!
//! [`session`] holds a session's state, [`stream`] reads its SSE streams.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use reqwest::Method;
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use tokio::sync::mpsc;
use toolwire_protocol::{Message, Request};

use super::{Headers, HttpInner, OutgoingRequest, Reply, ReplyBody, insert, lock, read_limited};
use crate::transport::legacy::{
    accept_initialize, initialize_request, initialized_notification, internal_id,
    strip_modern_meta, subscribe_request,
};
use crate::transport::sse::SseParser;
use crate::transport::{Exchange, TransportError};

mod old_sse;
mod session;
mod stream;

pub(super) use session::HttpSession;
use session::Waiting;
use stream::{CancelOnDrop, Target, next_chunk, start_get_stream, stream_exchange, too_large};

/// How long to wait for the answer to a request of the transport's own.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

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
    let method = request.method.clone();
    let make_headers = || {
        let mut headers = base_headers(inner, &method)?;
        headers.insert(ACCEPT, HeaderValue::from_static(super::ACCEPT_BOTH));
        Ok(headers)
    };
    let headers = Headers::new(&make_headers)?;
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
    let make_headers = || {
        let mut headers = base_headers(inner, "")?;
        session.insert_headers(&mut headers)?;
        Ok(headers)
    };
    let Ok(headers) = Headers::new(&make_headers) else {
        return;
    };
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
        protocol_version,
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
        protocol_version,
    };
    let make_headers = || inner.request_headers(&outgoing, Some(session));
    let headers = Headers::new(&make_headers)?;
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
    let make_headers = || {
        let mut headers = base_headers(inner, method)?;
        headers.insert(ACCEPT, HeaderValue::from_static(super::ACCEPT_BOTH));
        session.insert_headers(&mut headers)?;
        Ok(headers)
    };
    let headers = Headers::new(&make_headers)?;
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
