//! The legacy (2025-11-25 and earlier) side of the endpoint: `initialize`
//! opens a session, later POSTs carry its `Mcp-Session-Id`, `GET` opens its
//! standalone stream (or resumes one with `Last-Event-ID`), `DELETE` ends it.
//!
//! A request is served in its POST's task until it first waits, then in a
//! task of its own, and writes to its own resumable stream:
//! a response that comes alone is sent as plain JSON; anything before it
//! (progress, logs, a request to the client) makes the reply an SSE stream,
//! led by a priming event with a `retry` field. A client that drops that
//! connection does not cancel the request (2025-11-25): it may come back
//! with `Last-Event-ID`.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::Value;
use toolwire_protocol::{ErrorObject, Message, Notification, Request, RequestId, ResultResponse};

use super::config::{MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use super::endpoint::Endpoint;
use super::event_log::{EventLog, Opening, parse_event_id};
use super::reply::{empty, error_reply, json_body};
use super::sessions::{HttpSession, OpenRefused, SessionTable};
use super::sse::sse_response;
use crate::context::encode::encode_message;
use crate::context::{Outbox, Principal, RequestEnv};
use crate::store::sessions::SessionEvent;
use crate::transport::drain::CallGuard;
use crate::transport::legacy::{LegacyResponse, LegacySession, forward_changes};
use toolwire_telemetry::Network;

impl Endpoint {
    /// `initialize`: opens a session and answers with its id.
    pub(super) async fn initialize(
        &self,
        request: Request,
        principal: &Principal,
        network: Network,
    ) -> Response {
        let (legacy, result) = match LegacySession::open(&self.server, request.params) {
            Ok((legacy, result)) => (legacy.over(network), result),
            Err(error) => return error_reply(StatusCode::BAD_REQUEST, Some(request.id), error),
        };
        let session = match self.sessions.open(legacy, principal).await {
            Ok(session) => session,
            Err(OpenRefused::Full(max)) => {
                let error = ErrorObject::new(
                    -32000,
                    format!(
                        "Server busy: it holds its limit of {max} sessions; try again later \
                         (sessions end after an idle timeout or with DELETE)"
                    ),
                );
                return error_reply(StatusCode::SERVICE_UNAVAILABLE, Some(request.id), error);
            }
            Err(OpenRefused::Store(unavailable)) => {
                let error = store_down(format!("the session cannot be opened: {unavailable}"));
                return error_reply(StatusCode::SERVICE_UNAVAILABLE, Some(request.id), error);
            }
        };
        let result = match serde_json::to_value(result) {
            Ok(Value::Object(result)) => result,
            _ => Default::default(),
        };
        let mut response = legacy_json(&Message::Result(ResultResponse::new(request.id, result)));
        let id = HeaderValue::from_str(&session.id).expect("hex is a valid header value");
        response.headers_mut().insert(MCP_SESSION_ID, id);
        response
    }

    /// The session a request names, or the response refusing it: 404 when
    /// unknown, ended, expired or another principal's; 400 when its
    /// `MCP-Protocol-Version` is not a legacy version this server serves.
    pub(super) async fn session(
        &self,
        headers: &HeaderMap,
        id: &str,
        principal: &Principal,
        request: Option<&RequestId>,
    ) -> Result<Arc<HttpSession>, Box<Response>> {
        let found = self
            .sessions
            .get(id, principal)
            .await
            .map_err(|unavailable| {
                let error = store_down(format!("the session cannot be looked up: {unavailable}"));
                Box::new(error_reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    request.cloned(),
                    error,
                ))
            })?;
        let Some(session) = found else {
            return Err(Box::new(error_reply(
                StatusCode::NOT_FOUND,
                request.cloned(),
                ErrorObject::new(
                    -32001,
                    "Session not found: it ended, expired or never existed; send initialize to start a new one",
                ),
            )));
        };
        // Every copy must name a served version (a second, different copy
        // is as wrong as one bad value).
        for version in headers.get_all(MCP_PROTOCOL_VERSION) {
            let version = version.to_str().unwrap_or("\u{fffd}").trim();
            let legacy = &self.server.config().legacy_versions;
            if !legacy.iter().any(|v| v == version) {
                let error = ErrorObject::invalid_request(format!(
                    "Unsupported MCP-Protocol-Version {version:?} for this session (it negotiated {}; supported: {})",
                    session.legacy.version(),
                    legacy.join(", ")
                ));
                let refusal = error_reply(StatusCode::BAD_REQUEST, request.cloned(), error);
                return Err(Box::new(refusal));
            }
        }
        Ok(session)
    }

    /// A POSTed message of a session.
    pub(super) async fn legacy_message(
        &self,
        session: Arc<HttpSession>,
        message: Message,
        principal: Principal,
        network: Network,
    ) -> Response {
        match message {
            Message::Request(request) => {
                self.legacy_request(session, request, principal, network)
                    .await
            }
            Message::Notification(notification) => {
                self.cancel_if_asked(&session, &notification);
                empty(StatusCode::ACCEPTED)
            }
            response @ (Message::Result(_) | Message::Error(_)) => {
                // An answer to a request the server sent: when none waits
                // here, another instance may have sent it.
                let value = serde_json::to_value(&response).unwrap_or_default();
                if !session.legacy.answer(response) {
                    let event = SessionEvent::Answer {
                        session: session.id.clone(),
                        message: value,
                    };
                    self.sessions.pass_on(&session.id, event);
                }
                empty(StatusCode::ACCEPTED)
            }
        }
    }

    async fn legacy_request(
        &self,
        session: Arc<HttpSession>,
        request: Request,
        principal: Principal,
        network: Network,
    ) -> Response {
        let log = session.new_stream();
        let id = request.id.clone();
        let cancel = session.start_request(id.clone());
        let env = RequestEnv {
            principal,
            outbox: Some(Outbox::sink(Arc::clone(&log) as _)),
            cancel,
            network,
            // Copied only for telemetry: it costs an allocation.
            session_id: toolwire_telemetry::enabled().then(|| Arc::from(session.id.as_str())),
        };
        // Made in its box: the future is large (about 5 KB, the dispatcher's
        // with it), and each move of it is a copy.
        let mut running = Box::pin(run_request(
            self.sessions.clone(),
            Arc::clone(&session),
            Arc::clone(&log),
            request,
            env,
            self.calls.enter(),
        ));
        // Served here until it first waits (most calls never do), then in a
        // task of its own: a client that drops the connection must not
        // cancel it (2025-11-25), and this future ends with the connection.
        if futures::poll!(running.as_mut()).is_pending() {
            tokio::spawn(running);
        }
        match log.opening().await {
            Opening::OnlyResponse(json) => json_body(json, StatusCode::OK),
            Opening::Streaming => {
                session.keep_stream(&log);
                self.stream_reply(&session, &log, true, 0, None)
            }
        }
    }

    /// `GET`: the standalone stream, or the rest of a stream after `Last-Event-ID`.
    pub(super) fn legacy_get(&self, session: Arc<HttpSession>, headers: &HeaderMap) -> Response {
        let resume = headers
            .get(header::HeaderName::from_static("last-event-id"))
            .and_then(|v| v.to_str().ok())
            .and_then(parse_event_id);
        if let Some((stream, seq)) = resume {
            if let Some(log) = session.stream(stream) {
                if stream != super::sessions::STANDALONE_STREAM {
                    return self.stream_reply(&session, &log, false, seq, None);
                }
            }
        }
        let Some(claim) = session.claim_standalone() else {
            return error_reply(
                StatusCode::CONFLICT,
                None,
                ErrorObject::invalid_request(
                    "this session's standalone stream is already open on another connection",
                ),
            );
        };
        let (log, first) = session.standalone();
        if first {
            let forward = forward_changes(
                self.server.clone(),
                session.legacy.subscriptions(),
                Outbox::sink(Arc::clone(&log) as _),
                session.ended.clone(),
            );
            tokio::spawn(forward);
        }
        let after = match resume {
            Some((super::sessions::STANDALONE_STREAM, seq)) => seq,
            _ => log.last_seq(),
        };
        let claim = Some(Box::new(claim) as _);
        self.stream_reply(&session, &log, false, after, claim)
    }

    /// `DELETE`: ends the session on every instance.
    pub(super) async fn legacy_delete(&self, id: &str, principal: &Principal) -> Response {
        match self.sessions.end(id, principal).await {
            Ok(true) => empty(StatusCode::NO_CONTENT),
            Err(unavailable) => {
                let error = store_down(format!("the session cannot be ended: {unavailable}"));
                error_reply(StatusCode::SERVICE_UNAVAILABLE, None, error)
            }
            Ok(false) => error_reply(
                StatusCode::NOT_FOUND,
                None,
                ErrorObject::new(
                    -32001,
                    "Session not found: it ended, expired or never existed",
                ),
            ),
        }
    }

    fn stream_reply(
        &self,
        session: &HttpSession,
        log: &Arc<EventLog>,
        first: bool,
        after: u64,
        guard: Option<Box<dyn Send + Sync>>,
    ) -> Response {
        // A fresh stream is primed with its first event id (and `retry`);
        // a resumed one goes on where the client stopped.
        let prime = first || guard.is_some();
        let keep_alive = self.config.sse_keep_alive;
        let stop = session.ended.clone();
        let body = log.reader(first, after, prime, keep_alive, stop, guard);
        sse_response(Body::from_stream(body))
    }
}

/// Runs one request of a session and writes its response to its stream;
/// what it changed in the session is saved for the other instances first.
async fn run_request(
    sessions: SessionTable,
    session: Arc<HttpSession>,
    log: Arc<EventLog>,
    request: Request,
    env: RequestEnv,
    _call: CallGuard,
) {
    let id = request.id.clone();
    let changes_record = LegacySession::changes_record(&request.method);
    let cancel = env.cancel.clone();
    let response = tokio::select! {
        biased;
        response = session.legacy.serve(request, env) => Some(response),
        () = cancel.cancelled() => None,
    };
    session.finish_request(&id);
    if changes_record && response.as_ref().is_some_and(LegacyResponse::succeeded) {
        sessions.save(&session).await;
    }
    match response.filter(|_| !cancel.is_cancelled()) {
        Some(response) => log.finish(response.to_json()),
        None => log.abandon(),
    }
}

impl Endpoint {
    /// `notifications/cancelled` naming a request of the session cancels it,
    /// here or (passed on) on the instance running it.
    fn cancel_if_asked(&self, session: &HttpSession, notification: &Notification) {
        if notification.method != "notifications/cancelled" {
            return;
        }
        let id = notification
            .params
            .as_ref()
            .and_then(|p| p.get("requestId"))
            .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
        if let Some(id) = id {
            if !session.cancel_request(&id) {
                let event = SessionEvent::Cancel {
                    session: session.id.clone(),
                    request: id,
                };
                self.sessions.pass_on(&session.id, event);
            }
        }
    }
}

/// The error of a request refused because the session store is down.
fn store_down(what: String) -> ErrorObject {
    ErrorObject::new(-32000, format!("{what}; retry in 1 s"))
}

/// A legacy JSON reply: JSON-RPC errors travel with 200, as in 2025-11-25.
fn legacy_json(message: &Message) -> Response {
    let mut body = Vec::with_capacity(256);
    encode_message(&mut body, message);
    json_body(body, StatusCode::OK)
}
