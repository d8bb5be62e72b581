//! The Streamable HTTP transport: one POST per request, answered with JSON or
//! with an SSE stream scoped to that request.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use toolwire_protocol::{Message, Request, object_member};
use toolwire_schema::header_value::encode_text;

use super::legacy::{is_modern_error, is_modern_error_body, probe_verdict};
use super::sse::SseParser;
use super::{
    BoxFuture, Era, Exchange, InboundHandler, InboundSlot, OutgoingRequest, ProtocolMode,
    Transport, TransportError, TransportKind,
};

mod body;
mod builder;
mod lean;
mod legacy;
mod plain;
mod redirect;
mod request_headers;
mod response;
mod sender;
mod tls;

pub use builder::HttpTransportBuilder;
use request_headers::Headers;
use response::HttpResponse;
use sender::Sender;

/// Header carrying the protocol version of a request.
pub const PROTOCOL_VERSION_HEADER: &str = "MCP-Protocol-Version";
/// Header mirroring the JSON-RPC method.
pub const METHOD_HEADER: &str = "Mcp-Method";
/// Header mirroring `params.name` or `params.uri`.
pub const NAME_HEADER: &str = "Mcp-Name";
/// Header carrying a legacy (2025-11-25 era) session's id.
pub const SESSION_ID_HEADER: &str = "Mcp-Session-Id";

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// Talks to a server's MCP endpoint over Streamable HTTP: through
/// hyper-util's client with rustls, or through reqwest with OAuth, a
/// caller's [`reqwest::Client`] or a proxy (see
/// [`HttpTransportBuilder::build`]).
///
/// ```
/// use toolwire_client::transport::HttpTransport;
/// let transport = HttpTransport::builder("http://127.0.0.1:8080/mcp")
///     .bearer_token("secret")
///     .build()
///     .unwrap();
/// # drop(transport);
/// ```
#[derive(Debug, Clone)]
pub struct HttpTransport {
    inner: Arc<HttpInner>,
}

#[derive(Debug)]
struct HttpInner {
    url: reqwest::Url,
    sender: Sender,
    headers: HeaderMap,
    credentials_key: String,
    max_message_bytes: usize,
    oauth: Option<crate::auth::Session>,
    mode: ProtocolMode,
    /// What auto mode found out (or was told by [`HttpTransportBuilder::era_hint`]).
    verdict: Mutex<Option<Era>>,
    /// The open legacy session, if any (a tokio mutex: opening one is awaited).
    session: tokio::sync::Mutex<Option<Arc<legacy::HttpSession>>>,
    inbound: InboundSlot,
}

impl Transport for HttpTransport {
    fn send(&self, request: OutgoingRequest) -> BoxFuture<'_, Result<Exchange, TransportError>> {
        Box::pin(self.inner.clone().send(request))
    }

    fn kind(&self) -> TransportKind {
        TransportKind::Http
    }

    fn server_key(&self) -> String {
        self.inner.url.to_string()
    }

    fn credentials_key(&self) -> String {
        match &self.inner.oauth {
            Some(session) => session.credentials_key(),
            None => self.inner.credentials_key.clone(),
        }
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(legacy::close(&self.inner))
    }

    fn era(&self) -> Option<Era> {
        self.inner.settled_era()
    }

    fn negotiated_version(&self) -> Option<String> {
        legacy::negotiated_version(&self.inner)
    }

    fn set_inbound(&self, handler: Arc<dyn InboundHandler>) {
        self.inner.inbound.set(handler);
    }
}

/// What the server answered to one POST.
#[derive(Debug)]
struct Reply {
    body: ReplyBody,
    /// The HTTP status (a JSON-RPC error may come with a 4xx).
    status: u16,
    /// The `Mcp-Session-Id` response header.
    session_id: Option<String>,
}

#[derive(Debug)]
enum ReplyBody {
    /// A JSON body holding one message.
    Message(Message),
    /// An SSE stream.
    Stream(HttpResponse),
    /// A 2xx with no body (202 for notifications and responses).
    Accepted(u16),
}

impl HttpInner {
    /// The era to use without asking: forced, or found earlier.
    fn settled_era(&self) -> Option<Era> {
        match self.mode {
            ProtocolMode::Modern => Some(Era::Modern),
            ProtocolMode::Legacy => Some(Era::Legacy),
            ProtocolMode::Auto => *lock(&self.verdict),
        }
    }

    fn set_verdict(&self, era: Era) {
        let mut verdict = lock(&self.verdict);
        if *verdict != Some(era) {
            tracing::info!(url = %self.url, %era, "protocol era of the server");
        }
        *verdict = Some(era);
    }

    /// Sends one request in the era the server speaks. In auto mode a 4xx
    /// without a modern error body (or a `server/discover` the server does
    /// not know) means a legacy server: the request is sent again over a
    /// legacy session.
    async fn send(self: Arc<Self>, outgoing: OutgoingRequest) -> Result<Exchange, TransportError> {
        // The legacy exchanges are boxed: in place their futures (about 7 KB)
        // would double the size of this one, moved into a box per request.
        if self.settled_era() == Some(Era::Legacy) {
            match Box::pin(legacy::send(&self, outgoing.clone())).await {
                Err(error)
                    if self.mode == ProtocolMode::Auto && legacy::is_handshake_refusal(&error) =>
                {
                    tracing::info!(url = %self.url, %error, "the server refused a legacy session; finding out its era again");
                    *lock(&self.verdict) = None;
                }
                other => return other,
            }
        }
        let reply = self.post_modern(&outgoing).await;
        if self.mode == ProtocolMode::Auto {
            let known = *lock(&self.verdict);
            match era_of_reply(&outgoing.request, &reply, known) {
                Some(Era::Legacy) => match Box::pin(legacy::send(&self, outgoing.clone())).await {
                    // Not a legacy server either: the modern reply stands.
                    Err(error) if legacy::is_handshake_refusal(&error) => {
                        tracing::debug!(%error, "initialize was refused too");
                    }
                    sent => {
                        self.set_verdict(Era::Legacy);
                        return sent;
                    }
                },
                Some(Era::Modern) => self.set_verdict(Era::Modern),
                None => {}
            }
        }
        Ok(self.modern_exchange(reply?))
    }

    async fn post_modern(&self, outgoing: &OutgoingRequest) -> Result<Reply, TransportError> {
        let make_headers = || self.request_headers(outgoing, None);
        let headers = Headers::new(&make_headers)?;
        // `Message` is untagged: the request serializes as itself, uncopied.
        let body = serde_json::to_vec(&outgoing.request)
            .map_err(|e| TransportError::Malformed(e.to_string()))?;
        self.post(headers, body).await
    }

    fn modern_exchange(&self, reply: Reply) -> Exchange {
        match reply.body {
            ReplyBody::Message(message) => Exchange::ready(vec![Ok(message)]),
            ReplyBody::Stream(response) => self.stream_events(response),
            ReplyBody::Accepted(status) => Exchange::ready(vec![Err(TransportError::Closed(
                format!(" (HTTP {status} with no body)"),
            ))]),
        }
    }

    /// Sends `method` to the endpoint (with the OAuth token when configured).
    async fn send_raw(
        &self,
        method: reqwest::Method,
        headers: Headers<'_>,
        body: Vec<u8>,
    ) -> Result<HttpResponse, TransportError> {
        self.send_raw_to(method, &self.url, headers, body).await
    }

    /// Sends `method` to `url` (the endpoint, or the message URL of a
    /// 2024-11-05 HTTP+SSE server).
    async fn send_raw_to(
        &self,
        method: reqwest::Method,
        url: &reqwest::Url,
        headers: Headers<'_>,
        body: Vec<u8>,
    ) -> Result<HttpResponse, TransportError> {
        match &self.oauth {
            Some(session) => {
                let client = self.sender.reqwest()?;
                let headers = &headers.first;
                // Boxed for the same reason as redirects are (`lean.rs`).
                let sent = Box::pin(session.send(client, method, url, headers, &body));
                let response = sent.await?;
                Ok(HttpResponse::Reqwest(response))
            }
            None => {
                self.sender
                    .send(method, url, &self.url, headers, body)
                    .await
            }
        }
    }

    /// POSTs one message and classifies the reply.
    async fn post(&self, headers: Headers<'_>, body: Vec<u8>) -> Result<Reply, TransportError> {
        self.post_to(&self.url, headers, body).await
    }

    /// POSTs one message to `url` and classifies the reply.
    async fn post_to(
        &self,
        url: &reqwest::Url,
        headers: Headers<'_>,
        body: Vec<u8>,
    ) -> Result<Reply, TransportError> {
        let response = self
            .send_raw_to(reqwest::Method::POST, url, headers, body)
            .await?;
        let session_id = response
            .headers()
            .get(SESSION_ID_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let content_type = content_type(&response);
        let status = response.status();
        if status.is_redirection() {
            return Err(redirect::refused(url, &response));
        }
        if status.is_success() && content_type.starts_with("text/event-stream") {
            let body = ReplyBody::Stream(response);
            return Ok(Reply {
                body,
                status: status.as_u16(),
                session_id,
            });
        }
        let bytes = read_limited(response, self.max_message_bytes).await?;
        if content_type.starts_with("application/json") {
            if let Ok(message) = Message::from_slice(&bytes) {
                let body = ReplyBody::Message(message);
                return Ok(Reply {
                    body,
                    status: status.as_u16(),
                    session_id,
                });
            }
        }
        // 202 often says "Accepted" in text: no message either way.
        if status.is_success() && (bytes.is_empty() || status.as_u16() == 202) {
            let body = ReplyBody::Accepted(status.as_u16());
            return Ok(Reply {
                body,
                status: status.as_u16(),
                session_id,
            });
        }
        Err(TransportError::Http {
            status: status.as_u16(),
            body: String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).into_owned(),
        })
    }

    /// The headers of one request; `session` adds the legacy session's
    /// `Mcp-Session-Id` and negotiated version.
    fn request_headers(
        &self,
        outgoing: &OutgoingRequest,
        session: Option<&legacy::HttpSession>,
    ) -> Result<HeaderMap, TransportError> {
        let request = &outgoing.request;
        let mut headers = self.headers.clone();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_BOTH));
        match session {
            Some(session) => session.insert_headers(&mut headers)?,
            None => {
                let version = match &outgoing.protocol_version {
                    Some(known) => Some(Cow::Borrowed(known.as_ref())),
                    None => protocol_version(request),
                };
                if let Some(version) = version {
                    insert_value(&mut headers, known::protocol_version(), &version)?;
                }
            }
        }
        insert_value(&mut headers, known::method(), &request.method)?;
        if let Some(name) = name_header_source(request) {
            insert_value(&mut headers, known::name(), &encode_text(&name))?;
        }
        for (name, value) in &outgoing.param_headers {
            insert(&mut headers, name, value)?;
        }
        Ok(headers)
    }

    /// Reads the SSE body in a task; dropping the exchange aborts the task,
    /// which closes the stream: the server takes that as cancellation.
    fn stream_events(&self, response: HttpResponse) -> Exchange {
        let (tx, rx) = mpsc::unbounded_channel();
        let max = self.max_message_bytes;
        let task = tokio::spawn(pump_events(response, tx, max));
        Exchange::new(rx, Some(Box::new(AbortOnDrop(task.abort_handle()))))
    }
}

/// What a modern attempt's reply says about the server's era, in auto mode.
/// `known` is the era found before: a modern server's 400 with a plain
/// JSON-RPC error (bad arguments, say) does not make it a legacy one.
fn era_of_reply(
    request: &Request,
    reply: &Result<Reply, TransportError>,
    known: Option<Era>,
) -> Option<Era> {
    match reply {
        Err(TransportError::Http { status, body }) if is_legacy_refusal(*status, body) => {
            Some(Era::Legacy)
        }
        // A 400 whose JSON-RPC error is not a modern one, e.g. the Python
        // SDK's {"error": {"code": -32600, "message": "Missing session ID"}}.
        // (A modern server answers other statuses with JSON-RPC errors too,
        // e.g. 404 for -32601: those say nothing about the era.)
        Ok(Reply {
            body: ReplyBody::Message(Message::Error(e)),
            status: 400,
            ..
        }) if known.is_none() && !is_modern_error(e.error.code) => Some(Era::Legacy),
        Ok(Reply {
            body: ReplyBody::Message(message),
            ..
        }) if request.method == "server/discover" => Some(probe_verdict(message)),
        Ok(Reply {
            body: ReplyBody::Message(Message::Result(_)),
            ..
        }) => Some(Era::Modern),
        Ok(Reply {
            body: ReplyBody::Message(Message::Error(e)),
            ..
        }) if is_modern_error(e.error.code) => Some(Era::Modern),
        _ => None,
    }
}

/// A 4xx a legacy server gives a request without a session: anything but
/// authorization, timeouts, size and rate limits, unless the body is a
/// modern error.
fn is_legacy_refusal(status: u16, body: &str) -> bool {
    is_legacy_status(status) && !is_modern_error_body(body)
}

fn is_legacy_status(status: u16) -> bool {
    (400..500).contains(&status) && !matches!(status, 401 | 403 | 408 | 413 | 429)
}

fn content_type(response: &HttpResponse) -> String {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn pump_events(
    mut response: HttpResponse,
    tx: mpsc::UnboundedSender<Result<Message, TransportError>>,
    max: usize,
) {
    let mut parser = SseParser::new(max);
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => {
                let _ = tx.send(Err(TransportError::Io(format!("SSE stream broke: {e}"))));
                return;
            }
        };
        let events = match parser.push(&chunk) {
            Ok(events) => events,
            Err(too_large) => {
                let reason = format!("SSE event larger than {} bytes", too_large.0);
                let _ = tx.send(Err(TransportError::Malformed(reason)));
                return;
            }
        };
        for data in events {
            if deliver(&tx, &data) {
                return;
            }
        }
    }
    if let Some(data) = parser.finish() {
        if deliver(&tx, &data) {
            return;
        }
    }
    let _ = tx.send(Err(TransportError::Closed(
        " (SSE stream ended before the response)".into(),
    )));
}

/// Sends one event's message on; true when the exchange is over (a response
/// arrived or nobody listens any more).
fn deliver(tx: &mpsc::UnboundedSender<Result<Message, TransportError>>, data: &str) -> bool {
    if data.trim().is_empty() {
        return false;
    }
    let message = Message::from_slice(data.as_bytes()).map_err(|e| {
        TransportError::Malformed(format!("SSE event is not a JSON-RPC message: {e}"))
    });
    let is_response = matches!(message, Ok(Message::Result(_) | Message::Error(_)));
    tx.send(message).is_err() || is_response
}

async fn read_limited(mut response: HttpResponse, max: usize) -> Result<Vec<u8>, TransportError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| TransportError::Io(format!("reading the reply failed: {e}")))?
    {
        if bytes.len() + chunk.len() > max {
            return Err(TransportError::Malformed(format!(
                "reply larger than {max} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

fn insert(headers: &mut HeaderMap, name: &str, value: &str) -> Result<(), TransportError> {
    let name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|e| TransportError::Io(format!("invalid header name {name:?}: {e}")))?;
    insert_value(headers, name, value)
}

fn insert_value(
    headers: &mut HeaderMap,
    name: HeaderName,
    value: &str,
) -> Result<(), TransportError> {
    let value = HeaderValue::from_str(value)
        .map_err(|e| TransportError::Io(format!("invalid value for header {name}: {e}")))?;
    headers.insert(name, value);
    Ok(())
}

/// The names of the headers every request carries, made without parsing.
mod known {
    use reqwest::header::HeaderName;

    pub(super) fn protocol_version() -> HeaderName {
        HeaderName::from_static("mcp-protocol-version")
    }

    pub(super) fn method() -> HeaderName {
        HeaderName::from_static("mcp-method")
    }

    pub(super) fn name() -> HeaderName {
        HeaderName::from_static("mcp-name")
    }
}

/// `_meta`'s protocol version, read from the params' text.
fn protocol_version(request: &Request) -> Option<Cow<'_, str>> {
    let key = toolwire_protocol::keys::PROTOCOL_VERSION;
    match request.params.as_ref()?.member("_meta")? {
        Cow::Borrowed(meta) => string(object_member(meta, key)?),
        Cow::Owned(meta) => string(object_member(&meta, key)?).map(|s| Cow::Owned(s.into_owned())),
    }
}

/// `params.name` for `tools/call` and `prompts/get`, `params.uri` for
/// `resources/read`, `params.taskId` for `tasks/get|update|cancel`.
fn name_header_source(request: &Request) -> Option<Cow<'_, str>> {
    let field = match request.method.as_str() {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        // The Tasks extension routes by task (SEP-2663).
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    match request.params.as_ref()?.member(field)? {
        Cow::Borrowed(raw) => string(raw),
        Cow::Owned(raw) => string(&raw).map(|s| Cow::Owned(s.into_owned())),
    }
}

/// A JSON string's value (borrowed unless it has escapes); `None` for
/// anything else.
fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    match serde_json::from_str::<&str>(raw.get()) {
        Ok(text) => Some(Cow::Borrowed(text)),
        Err(_) => serde_json::from_str::<String>(raw.get())
            .ok()
            .map(Cow::Owned),
    }
}

#[derive(Debug)]
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `error` and the errors beneath it, `: `-joined (reqwest's own text,
/// "error sending request", does not say that a certificate was refused or
/// a connection reset: its sources do).
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(method: &str, params: serde_json::Value) -> OutgoingRequest {
        OutgoingRequest::new(Request::new(1, method, params.as_object().cloned()))
    }

    fn headers_of(outgoing: &OutgoingRequest) -> HeaderMap {
        let transport = HttpTransport::builder("http://127.0.0.1:1/mcp")
            .bearer_token("t")
            .build()
            .unwrap();
        transport.inner.request_headers(outgoing, None).unwrap()
    }

    #[test]
    fn standard_headers_are_mirrored_from_the_body() {
        let outgoing = request(
            "tools/call",
            json!({"name": "get_weather", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        );
        let h = headers_of(&outgoing);
        assert_eq!(h["accept"], ACCEPT_BOTH);
        assert_eq!(h["mcp-protocol-version"], "2026-07-28");
        assert_eq!(h["mcp-method"], "tools/call");
        assert_eq!(h["mcp-name"], "get_weather");
        assert_eq!(h["authorization"], "Bearer t");
    }

    #[test]
    fn a_known_protocol_version_is_sent_as_given() {
        let mut outgoing = request(
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        );
        outgoing.protocol_version = Some(Cow::Borrowed("2026-07-28"));
        assert_eq!(headers_of(&outgoing)["mcp-protocol-version"], "2026-07-28");
        // Given, it is not read from `_meta` again.
        let mut outgoing = request("tools/list", json!({}));
        outgoing.protocol_version = Some(Cow::Borrowed("2026-07-28"));
        assert_eq!(headers_of(&outgoing)["mcp-protocol-version"], "2026-07-28");
        assert!(
            headers_of(&request("tools/list", json!({})))
                .get("mcp-protocol-version")
                .is_none()
        );
    }

    #[test]
    fn unsafe_names_and_uris_use_the_base64_sentinel() {
        let h = headers_of(&request("resources/read", json!({"uri": "file:///é"})));
        assert_eq!(h["mcp-name"], "=?base64?ZmlsZTovLy/DqQ==?=");
        let h = headers_of(&request("prompts/get", json!({"name": " x "})));
        assert_eq!(h["mcp-name"], "=?base64?IHgg?=");
    }

    #[test]
    fn task_methods_name_their_task() {
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let h = headers_of(&request(method, json!({"taskId": "9c961c88d818"})));
            assert_eq!(h["mcp-name"], "9c961c88d818", "{method}");
            assert_eq!(h["mcp-method"], method);
        }
    }

    #[test]
    fn no_name_header_for_other_methods() {
        let h = headers_of(&request("tools/list", json!({})));
        assert!(h.get("mcp-name").is_none());
        assert_eq!(h["mcp-method"], "tools/list");
    }

    #[test]
    fn credentials_key_depends_on_the_token() {
        let a = HttpTransport::builder("http://h/mcp")
            .bearer_token("a")
            .build()
            .unwrap();
        let b = HttpTransport::builder("http://h/mcp")
            .bearer_token("b")
            .build()
            .unwrap();
        let none = HttpTransport::new("http://h/mcp").unwrap();
        assert_ne!(a.credentials_key(), b.credentials_key());
        assert_eq!(none.credentials_key(), "");
    }

    #[test]
    fn the_known_header_names_are_the_documented_ones() {
        let pairs = [
            (known::protocol_version(), PROTOCOL_VERSION_HEADER),
            (known::method(), METHOD_HEADER),
            (known::name(), NAME_HEADER),
        ];
        for (name, documented) in pairs {
            assert!(name.as_str().eq_ignore_ascii_case(documented), "{name}");
        }
    }

    #[test]
    fn headers_are_read_from_the_params_text() {
        let request: Request = serde_json::from_str(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"caf\u00e9","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        )
        .unwrap();
        assert_eq!(protocol_version(&request).as_deref(), Some("2026-07-28"));
        assert_eq!(name_header_source(&request).as_deref(), Some("café"));
    }
}
