//! The endpoint: one POST, its transport checks, authentication and request
//! limit, then the dispatcher; the reply as JSON or as an SSE stream.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::header::{self};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolwire_protocol::{ErrorObject, Message, Request};

use super::config::{HttpConfig, OUTBOX_CAPACITY};
use super::headers::{
    McpHeaders, accepts_json_and_sse, accepts_sse, check_headers, is_json_content_type, quote,
};
use super::reply::{empty, error_reply, json_body, json_reply};
use super::sessions::SessionTable;
use super::sse::{Next, SseStream, listen_reply, sse_event, sse_reply};
use crate::context::{Outbox, Principal, RequestEnv, response_streams};
use crate::dispatch::Reply;
use crate::security::audit::{self, Denial};
use crate::server::Server;
use crate::store::rate_limit::retry_secs;
use crate::transport::drain::CallCounter;
use crate::transport::legacy::{is_modern, opens_session};
use toolwire_telemetry::Network;

pub(super) struct Endpoint {
    pub(super) server: Server,
    pub(super) config: HttpConfig,
    /// Legacy (2025-11-25) sessions.
    pub(super) sessions: SessionTable,
    /// The requests being served (for a drain's count).
    pub(super) calls: CallCounter,
}

/// The endpoint as an axum handler: the peer's address, when known, from
/// the request's `ConnectInfo`.
pub(super) async fn handle(
    State(endpoint): State<Arc<Endpoint>>,
    request: axum::extract::Request,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| *peer);
    serve(&endpoint, request, peer).await
}

/// Serves one request from `peer` (when known).
pub(super) async fn serve(
    endpoint: &Endpoint,
    request: axum::extract::Request,
    peer: Option<SocketAddr>,
) -> Response {
    let (mut parts, body) = request.into_parts();
    if let Some(refusal) = endpoint.refuse_host_or_origin(&parts.headers, &parts.uri) {
        return error_reply(
            StatusCode::FORBIDDEN,
            None,
            ErrorObject::invalid_request(refusal),
        );
    }
    if let Err(refusal) = endpoint.admit(&mut parts, peer).await {
        return refusal;
    }
    let mcp = McpHeaders::read(&parts.headers);
    let session_id = mcp
        .session_id
        .first()
        .map(|v| v.to_str().unwrap_or("\u{fffd}").to_owned());
    if parts.method != Method::POST {
        return match (&parts.method, session_id) {
            (&Method::GET, Some(id)) => endpoint.get_stream(&mut parts, &id).await,
            (&Method::DELETE, Some(id)) => {
                let principal = parts.extensions.remove::<Principal>().unwrap_or_default();
                endpoint.legacy_delete(&id, &principal).await
            }
            _ => method_not_allowed(),
        };
    }
    if !accepts_json_and_sse(&parts.headers) {
        return error_reply(
            StatusCode::NOT_ACCEPTABLE,
            None,
            ErrorObject::invalid_request(
                "the Accept header must list both application/json and text/event-stream",
            ),
        );
    }
    if !is_json_content_type(&parts.headers) {
        return error_reply(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            ErrorObject::invalid_request("the Content-Type must be application/json"),
        );
    }
    let limit = endpoint.config.max_body_bytes;
    let deadline = endpoint.config.body_read_timeout;
    let bytes = match read_body(body, &parts.headers, limit, deadline).await {
        Ok(bytes) => bytes,
        Err(BodyError::TimedOut) => {
            let error = ErrorObject::invalid_request(format!(
                "the request body did not arrive in full within {} ms",
                deadline.as_millis()
            ));
            let mut reply = error_reply(StatusCode::REQUEST_TIMEOUT, None, error);
            // The rest of the body may never come: do not wait to drain it.
            reply
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return reply;
        }
        Err(BodyError::TooLarge) => {
            let error = ErrorObject::invalid_request(format!(
                "the request body is larger than {limit} bytes"
            ));
            return error_reply(StatusCode::PAYLOAD_TOO_LARGE, None, error);
        }
        Err(BodyError::Read(problem)) => {
            let error =
                ErrorObject::invalid_request(format!("could not read the request body: {problem}"));
            return error_reply(StatusCode::BAD_REQUEST, None, error);
        }
    };
    let message = match Message::from_slice(&bytes) {
        Ok(message) => message,
        Err(error) => {
            let response = error.to_response();
            return error_reply(StatusCode::BAD_REQUEST, response.id, response.error);
        }
    };
    drop(bytes);
    let principal = parts.extensions.remove::<Principal>().unwrap_or_default();
    let network = network_of(parts.version);
    if let Some(id) = session_id.filter(|_| !is_modern_message(&message)) {
        let request_id = match &message {
            Message::Request(request) => Some(&request.id),
            _ => None,
        };
        return match endpoint
            .session(&parts.headers, &id, &principal, request_id)
            .await
        {
            Ok(session) => {
                endpoint
                    .legacy_message(session, message, principal, network)
                    .await
            }
            Err(refusal) => *refusal,
        };
    }
    match message {
        Message::Request(request) if opens_session(&request) => {
            if endpoint.server.config().legacy_versions.is_empty() {
                let error = endpoint.server.refuse_initialize();
                return error_reply(StatusCode::BAD_REQUEST, Some(request.id), error);
            }
            endpoint.initialize(request, &principal, network).await
        }
        Message::Request(request) if looks_legacy(mcp.protocol_version.first(), &request) => {
            error_reply(
                StatusCode::BAD_REQUEST,
                Some(request.id),
                ErrorObject::invalid_request(
                    "this request has no Mcp-Session-Id; a 2025-11-25 client sends \
                 initialize first and then the session id it got, a 2026-07-28 client puts \
                 _meta (io.modelcontextprotocol/protocolVersion, clientCapabilities) on every request",
                ),
            )
        }
        Message::Request(request) => {
            if let Err(error) = check_headers(&endpoint.server, &parts.headers, &mcp, &request) {
                return error_reply(StatusCode::BAD_REQUEST, Some(request.id), error);
            }
            // Not kept while the request runs.
            drop(parts);
            endpoint.dispatch(request, principal, network).await
        }
        Message::Notification(_) => empty(StatusCode::ACCEPTED),
        Message::Result(_) | Message::Error(_) => error_reply(
            StatusCode::BAD_REQUEST,
            None,
            ErrorObject::invalid_request(
                "the body must be a request or a notification; clients send no responses",
            ),
        ),
    }
}

fn method_not_allowed() -> Response {
    let mut response = empty(StatusCode::METHOD_NOT_ALLOWED);
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// True for a request served statelessly whatever headers come with it.
fn is_modern_message(message: &Message) -> bool {
    matches!(message, Message::Request(request) if is_modern(request))
}

/// A request without modern `_meta` and without a 2026-07-28
/// `MCP-Protocol-Version`: a legacy client that lost (or never had) its session.
fn looks_legacy(protocol_version: Option<&HeaderValue>, request: &Request) -> bool {
    // The header first: a modern one settles it without reading `_meta`.
    let legacy_header = match protocol_version.and_then(|v| v.to_str().ok()) {
        None => true,
        Some(version) => toolwire_protocol::is_legacy_version(version.trim()),
    };
    legacy_header && !is_modern(request)
}

impl Endpoint {
    /// `GET` with a session id: the session's standalone stream, or a resumed one.
    async fn get_stream(&self, parts: &mut http::request::Parts, id: &str) -> Response {
        let principal = parts.extensions.remove::<Principal>().unwrap_or_default();
        let session = match self.session(&parts.headers, id, &principal, None).await {
            Ok(session) => session,
            Err(refusal) => return *refusal,
        };
        if !accepts_sse(&parts.headers) {
            return error_reply(
                StatusCode::NOT_ACCEPTABLE,
                None,
                ErrorObject::invalid_request("the Accept header must list text/event-stream"),
            );
        }
        self.legacy_get(session, &parts.headers)
    }

    /// Authenticates the request (when auth is on: the principal goes into
    /// its extensions) and applies the request limit (when on) to it, from
    /// `peer`.
    pub(super) async fn admit(
        &self,
        parts: &mut http::request::Parts,
        peer: Option<SocketAddr>,
    ) -> Result<(), Response> {
        if let Some(auth) = &self.config.auth {
            match auth.admit(parts).await {
                Ok(principal) => {
                    parts.extensions.insert(principal);
                }
                // A flood of refused requests is limited by address: it
                // gets 429 instead of the refusal once over the limit.
                Err(refusal) => return Err(self.limit(parts, peer).await.err().unwrap_or(refusal)),
            }
        }
        self.limit(parts, peer).await
    }

    /// Applies the request limit (when on) to the request's principal: the
    /// authenticated subject, else the peer's address.
    pub(super) async fn limit(
        &self,
        parts: &http::request::Parts,
        peer: Option<SocketAddr>,
    ) -> Result<(), Response> {
        let Some(limit) = &self.config.request_limit else {
            return Ok(());
        };
        let principal = parts
            .extensions
            .get::<Principal>()
            .filter(|p| p.is_authenticated());
        let key = match (principal, peer) {
            (Some(principal), _) => format!("http\u{0}{}", principal.key()),
            (None, Some(peer)) => format!("http-ip\u{0}{}", peer.ip()),
            (None, None) => "http-anonymous".to_owned(),
        };
        if let Err(wait) = self.config.rate_limits.check(&key, limit).await {
            audit::denial(principal, Denial::RateLimited, "HTTP endpoint");
            let secs = retry_secs(wait);
            // A store that cannot reach its buckets refuses too: say so (503).
            let (status, text) = match self.config.rate_limits.unavailable() {
                Some(why) => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("rate limits cannot be checked ({why}); retry in {secs} s"),
                ),
                None => (
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("too many requests; retry in {secs} s"),
                ),
            };
            let error = ErrorObject::invalid_request(text);
            let mut response = error_reply(status, None, error);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            return Err(response);
        }
        Ok(())
    }

    /// Why the request's `Host` or `Origin` is refused, if it is.
    pub(super) fn refuse_host_or_origin(&self, headers: &HeaderMap, uri: &Uri) -> Option<String> {
        let config = &self.config;
        if !config.any_host {
            let host = match headers.get(header::HOST) {
                Some(value) => Some(value.to_str().unwrap_or("\u{fffd}")),
                None => uri.authority().map(|a| a.as_str()),
            };
            if let Some(host) = host.filter(|h| !config.host_allowed(h)) {
                return Some(format!(
                    "Host {} is not allowed (DNS rebinding protection; allow it with HttpConfig::allow_host)",
                    quote(host)
                ));
            }
        }
        if !config.any_origin {
            for origin in headers.get_all(header::ORIGIN) {
                let origin = origin.to_str().unwrap_or("\u{fffd}");
                if !config.origin_allowed(origin) {
                    return Some(format!(
                        "Origin {} is not allowed (allow it with HttpConfig::allow_origin)",
                        quote(origin)
                    ));
                }
            }
        }
        None
    }

    pub(super) async fn dispatch(
        &self,
        request: Request,
        principal: Principal,
        network: Network,
    ) -> Response {
        let cancel = CancellationToken::new();
        if request.method == "subscriptions/listen" {
            // Admitted here; its stream is the response body, and dropping
            // the body (the client went away) ends it.
            let env = RequestEnv::new()
                .with_principal(principal)
                .with_network(network);
            return match self.server.reply_streaming(request, env).await {
                Reply::Listening(listening) => listen_reply(*listening, self.config.sse_keep_alive),
                reply => json_reply(&reply.into_message()),
            };
        }
        let call = self.calls.enter();
        if !response_streams(&request) {
            // Dropping this future (the client went away) cancels the token.
            let guard = cancel.clone().drop_guard();
            let env = RequestEnv {
                principal,
                outbox: None,
                cancel,
                network,
                session_id: None,
            };
            // `reply_streaming`, not `reply`: one future fewer to move, and
            // no clones of the token and outbox for a listen stream this
            // path never has (`subscriptions/listen` was served above).
            let reply = self.server.reply_streaming(request, env).await;
            guard.disarm();
            drop(call);
            return match reply {
                Reply::Message(message) => json_reply(&message),
                Reply::Listening(listening) => listen_reply(*listening, self.config.sse_keep_alive),
                reply => {
                    let mut body = Vec::with_capacity(1024);
                    reply.encode(&mut body);
                    json_body(body, StatusCode::OK)
                }
            };
        }
        // Notifications travel as encoded SSE events (a small queue per open
        // stream); the final response on its own channel.
        let (events, receiver) = mpsc::channel(OUTBOX_CAPACITY);
        let (respond, response) = oneshot::channel();
        let env = RequestEnv {
            principal,
            outbox: Some(Outbox::encoding(events, sse_event)),
            cancel: cancel.clone(),
            network,
            session_id: None,
        };
        let running = run_streamed(self.server.clone(), request, env, respond);
        tokio::spawn(async move {
            let _call = call;
            running.await;
        });
        let mut stream = SseStream {
            pending: None,
            receiver,
            response: Some(response),
            guard: Some(cancel.drop_guard()),
            keep_alive: self.config.sse_keep_alive,
        };
        match stream.next().await {
            Next::Response(message) => {
                stream.disarm();
                json_reply(&message)
            }
            Next::Event(event) => {
                stream.pending = Some(event);
                sse_reply(stream)
            }
            Next::Ended => {
                stream.disarm();
                error_reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    None,
                    ErrorObject::internal("the request ended without a response"),
                )
            }
        }
    }
}

/// Runs a request whose notifications are streamed; the final response goes
/// to `respond`. A cancelled request sends nothing more.
pub(super) async fn run_streamed(
    server: Server,
    request: Request,
    env: RequestEnv,
    respond: oneshot::Sender<Message>,
) {
    let cancel = env.cancel.clone();
    let response = tokio::select! {
        // The handler is polled first so it sees the cancellation it waits on.
        biased;
        response = server.handle_request(request, env) => response,
        () = cancel.cancelled() => return,
    };
    if !cancel.is_cancelled() {
        let _ = respond.send(response);
    }
}

pub(super) enum BodyError {
    TooLarge,
    TimedOut,
    Read(String),
}

/// Reads the whole body within `deadline`, refusing more than `limit`
/// bytes; a body that arrives in one chunk is not copied.
pub(super) async fn read_body(
    body: Body,
    headers: &HeaderMap,
    limit: usize,
    deadline: Duration,
) -> Result<Bytes, BodyError> {
    tokio::time::timeout(deadline, read_body_within(body, headers, limit))
        .await
        .unwrap_or(Err(BodyError::TimedOut))
}

async fn read_body_within(
    body: Body,
    headers: &HeaderMap,
    limit: usize,
) -> Result<Bytes, BodyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge);
    }
    let mut stream = body.into_data_stream();
    let mut first: Option<Bytes> = None;
    let mut more: Option<BytesMut> = None;
    let mut total = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| BodyError::Read(e.to_string()))?;
        total = total.saturating_add(chunk.len());
        if total > limit {
            return Err(BodyError::TooLarge);
        }
        match (&mut first, &mut more) {
            (None, _) => first = Some(chunk),
            (Some(head), None) => {
                let mut buffer =
                    BytesMut::with_capacity(declared.map_or(head.len() * 2, |n| n as usize));
                buffer.extend_from_slice(head);
                buffer.extend_from_slice(&chunk);
                more = Some(buffer);
            }
            (Some(_), Some(buffer)) => buffer.extend_from_slice(&chunk),
        }
    }
    Ok(match (first, more) {
        (_, Some(buffer)) => buffer.freeze(),
        (Some(head), None) => head,
        (None, None) => Bytes::new(),
    })
}

/// The telemetry attributes of a request that came over this HTTP version.
pub(super) fn network_of(version: http::Version) -> Network {
    match version {
        http::Version::HTTP_2 => Network::Http2,
        http::Version::HTTP_10 => Network::Http10,
        _ => Network::Http11,
    }
}
