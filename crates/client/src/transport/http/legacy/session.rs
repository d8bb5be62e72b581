//! The state of one legacy HTTP session: its id or HTTP+SSE endpoint, the
//! negotiated [`LegacySession`], its GET stream's task, and the requests
//! waiting for a response (routed by id, whichever stream it arrives on).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio::sync::mpsc;
use toolwire_protocol::{Message, Notification, Request, RequestId, keys};

use super::super::{HttpInner, PROTOCOL_VERSION_HEADER, SESSION_ID_HEADER, insert, lock};
use crate::transport::TransportError;
use crate::transport::legacy::{LegacySession, Related, sole_related};

type Sender = mpsc::UnboundedSender<Result<Message, TransportError>>;

/// One open legacy session on an HTTP server.
#[derive(Debug)]
pub(in crate::transport::http) struct HttpSession {
    /// `Mcp-Session-Id`, when the server assigned one.
    pub(super) id: Option<String>,
    /// Where messages are POSTed on a 2024-11-05 HTTP+SSE server (its
    /// `endpoint` event); `None` on Streamable HTTP (the endpoint URL).
    pub(super) endpoint: Option<reqwest::Url>,
    /// Set when the session ended (its HTTP+SSE stream closed).
    pub(super) dead: AtomicBool,
    pub(super) state: LegacySession,
    /// The standalone GET stream's task, once started.
    pub(super) get_stream: Mutex<Option<tokio::task::AbortHandle>>,
    /// Requests waiting for their response. A server may send a response
    /// on any stream of the session (e.g. the GET stream a resumed request
    /// stream was folded into), so responses are routed by id.
    pub(super) pending: Mutex<HashMap<RequestId, Waiting>>,
}

/// A request waiting for its response.
#[derive(Debug)]
pub(super) struct Waiting {
    pub(super) tx: Sender,
    pub(super) related: Related,
    /// Its `progressToken`, to route progress that arrives on the GET stream.
    progress_token: Option<Value>,
}

impl Waiting {
    pub(super) fn new(tx: Sender, request: &Request) -> Waiting {
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
    pub(in crate::transport::http) fn insert_headers(
        &self,
        headers: &mut HeaderMap,
    ) -> Result<(), TransportError> {
        insert(headers, PROTOCOL_VERSION_HEADER, self.state.version())?;
        if let Some(id) = &self.id {
            insert(headers, SESSION_ID_HEADER, id)?;
        }
        Ok(())
    }
}

impl HttpSession {
    pub(in crate::transport::http) fn new(
        id: Option<String>,
        endpoint: Option<reqwest::Url>,
        init: toolwire_protocol::InitializeResult,
    ) -> HttpSession {
        HttpSession {
            id,
            endpoint,
            dead: AtomicBool::new(false),
            state: LegacySession::new(init, toolwire_telemetry::Network::Http),
            get_stream: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// Hands a response to the request it answers; false when none waits.
    pub(super) fn deliver(&self, id: &RequestId, message: Message) -> bool {
        match lock(&self.pending).remove(id) {
            Some(Waiting { tx, .. }) => {
                let _ = tx.send(Ok(message));
                true
            }
            None => false,
        }
    }

    /// Where to POST messages.
    pub(super) fn post_url<'a>(&'a self, inner: &'a HttpInner) -> &'a reqwest::Url {
        self.endpoint.as_ref().unwrap_or(&inner.url)
    }

    /// Hands a notification that arrived on the GET stream to the requests
    /// it concerns: progress by token, log messages to every one waiting.
    pub(super) fn route_unsolicited(&self, notification: &Notification) {
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

    pub(super) fn is_pending(&self, id: &RequestId) -> bool {
        lock(&self.pending).contains_key(id)
    }

    pub(super) fn related_of(&self, id: &RequestId) -> Option<Related> {
        lock(&self.pending).get(id).map(|w| w.related.clone())
    }

    /// The request in flight a request on the GET stream belongs to (see
    /// [`sole_related`]).
    pub(super) fn only_pending(&self) -> Option<Related> {
        sole_related(lock(&self.pending).values().map(|w| &w.related))
    }

    /// Ends the session's streams (the GET stream's task holds the session,
    /// so this is not left to `Drop`).
    pub(super) fn end(&self, reason: &str) {
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
