//! A strictly legacy (2025-11-25) fake server, over stdio and over HTTP: it
//! refuses everything before `initialize` (stdio: -32601 for
//! `server/discover`, -32600 for anything else; HTTP: 400 without a session
//! id, 404 for an unknown one), records every message it gets, and lets a
//! test push messages to the client (stdio: down the pipe; HTTP: on the
//! standalone GET streams).

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, split};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec};
use toolwire_client::transport::{Connection, StdioTransport, StdioTransportBuilder};

use super::Headers;

/// The session id the fake mints for its `n`-th `initialize` (from 1).
pub fn session_id(n: u64) -> String {
    format!("legacy-session-{n}")
}

/// How the fake behaves beyond the strict legacy rules.
#[derive(Debug, Clone, Copy, Default)]
pub struct FakeOptions {
    /// Never answer `server/discover` (stdio), before or after `initialize`.
    pub silent_discover: bool,
    /// Refuse `server/discover` before `initialize` with -32600 (invalid
    /// request) instead of -32601 (method not found) (stdio).
    pub discover_invalid_request: bool,
    /// Answer every request (not notifications or responses) 404, as if
    /// each session expired at once (HTTP).
    pub expire_at_once: bool,
    /// Mint no session ids and check none; `GET` is 405 (HTTP: a stateless
    /// legacy server, which answers whatever comes, `initialize` or not).
    pub sessionless: bool,
}

/// One message the fake received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `STDIO`, or the HTTP method (`POST`, `GET`, `DELETE`).
    pub verb: String,
    /// HTTP headers (lower-case names); empty on stdio.
    pub headers: Headers,
    /// The JSON-RPC message (`Null` for a GET or DELETE).
    pub body: Value,
    /// When it arrived.
    pub at: Instant,
}

impl Seen {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC method, if the body has one.
    pub fn method(&self) -> Option<&str> {
        self.body.get("method").and_then(Value::as_str)
    }
}

/// The fake server's shared state.
#[derive(Debug, Default)]
pub struct LegacyFake {
    options: FakeOptions,
    log: Mutex<Vec<Seen>>,
    /// Where pushed messages go: stdio pipes and HTTP GET streams.
    push: Mutex<Vec<mpsc::UnboundedSender<Bytes>>>,
    sessions: Mutex<HashSet<String>>,
    minted: AtomicU64,
    /// The `tools/call resume` waiting for its resumed stream: (id, progress token).
    resume: Mutex<Option<(Value, Value)>>,
    /// When the resumable POST stream was sent (and closed).
    pub resume_closed_at: Mutex<Option<Instant>>,
}

impl LegacyFake {
    pub fn new(options: FakeOptions) -> Arc<LegacyFake> {
        Arc::new(LegacyFake {
            options,
            ..Default::default()
        })
    }

    /// Everything received so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }

    /// `verb method` per message received (`GET`/`DELETE` alone), e.g.
    /// `POST tools/list`; responses appear as `POST response`.
    pub fn trail(&self) -> Vec<String> {
        self.seen()
            .iter()
            .map(|s| {
                let what = match s.method() {
                    Some(method) => method.to_owned(),
                    None if s.body.is_null() => String::new(),
                    None => "response".to_owned(),
                };
                format!("{} {what}", s.verb).trim_end().to_owned()
            })
            .collect()
    }

    /// The messages received with `method`.
    pub fn with_method(&self, method: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method() == Some(method))
            .collect()
    }

    /// How many `initialize` requests arrived.
    pub fn initializes(&self) -> usize {
        self.with_method("initialize").len()
    }

    /// Forgets every session: their ids answer 404 from now on.
    pub fn expire_sessions(&self) {
        self.sessions.lock().unwrap().clear();
    }

    /// Sends `message` to every connected client (stdio pipe, HTTP GET
    /// stream); returns how many got it.
    pub fn push(&self, message: Value) -> usize {
        let mut targets = self.push.lock().unwrap();
        targets.retain(|tx| !tx.is_closed());
        for tx in targets.iter() {
            let _ = tx.send(Bytes::from(message.to_string()));
        }
        targets.len()
    }

    /// How many push targets (pipes, GET streams) are open.
    pub fn listeners(&self) -> usize {
        let mut targets = self.push.lock().unwrap();
        targets.retain(|tx| !tx.is_closed());
        targets.len()
    }

    fn record(&self, verb: &str, headers: Headers, body: Value) {
        self.log.lock().unwrap().push(Seen {
            verb: verb.to_owned(),
            headers,
            body,
            at: Instant::now(),
        });
    }

    /// The answer to a request on an initialised session (`None`: no answer).
    fn answer(&self, request: &Value) -> Option<Value> {
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let params = request.get("params").cloned().unwrap_or(json!({}));
        let result = match method {
            "initialize" => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "legacy-fake", "version": "0.0.1"},
                "instructions": "a strictly legacy fake"
            }),
            "server/discover" if self.options.silent_discover => return None,
            "ping" => json!({}),
            "tools/list" => json!({"tools": [
                {"name": "echo", "description": "Echoes the text back",
                 "inputSchema": {"type": "object",
                                 "properties": {"text": {"type": "string"}},
                                 "required": ["text"]}},
                {"name": "resume", "inputSchema": {"type": "object"}}
            ]}),
            "tools/call" => match params.get("name").and_then(Value::as_str) {
                Some("echo") => {
                    let text = params["arguments"]["text"].as_str().unwrap_or_default();
                    json!({"content": [{"type": "text", "text": text}]})
                }
                Some("resume") => json!({"content": [{"type": "text", "text": "resumed"}]}),
                // Never answers: for timeouts and cancellation.
                Some("hang") => return None,
                other => return Some(error(id, -32602, &format!("unknown tool {other:?}"))),
            },
            other => return Some(error(id, -32601, &format!("Method not found: {other}"))),
        };
        Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    /// A stdio transport builder to a fresh fake connection per (re)connect.
    pub fn stdio(self: &Arc<Self>) -> StdioTransportBuilder {
        let fake = Arc::clone(self);
        StdioTransport::from_fn("legacy fake", move || {
            let fake = Arc::clone(&fake);
            async move {
                let (client_end, server_end) = tokio::io::duplex(1 << 20);
                let (server_read, server_write) = split(server_end);
                let (push_tx, push_rx) = mpsc::unbounded_channel();
                fake.push.lock().unwrap().push(push_tx);
                tokio::spawn(serve_stdio(fake, server_read, server_write, push_rx));
                let (read, write) = split(client_end);
                Ok(Connection::new(read, write))
            }
        })
    }

    /// Serves the fake on 127.0.0.1; returns its URL.
    pub async fn http(self: &Arc<Self>) -> String {
        let (post, get, delete) = (Arc::clone(self), Arc::clone(self), Arc::clone(self));
        let app = axum::Router::new().route(
            "/mcp",
            axum::routing::post(move |headers: HeaderMap, body: Bytes| {
                let fake = Arc::clone(&post);
                async move { fake.http_post(&headers, &body) }
            })
            .get(move |headers: HeaderMap| {
                let fake = Arc::clone(&get);
                async move { fake.http_get(&headers) }
            })
            .delete(move |headers: HeaderMap| {
                let fake = Arc::clone(&delete);
                async move { fake.http_delete(&headers) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    /// The refusal for a request without a valid session, if it has none.
    fn refusal(&self, headers: &HeaderMap) -> Option<Response> {
        match headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            None => Some(plain(
                StatusCode::BAD_REQUEST,
                "Bad Request: No valid session ID provided",
            )),
            Some(id) if !self.sessions.lock().unwrap().contains(id) => {
                Some(plain(StatusCode::NOT_FOUND, "Session not found"))
            }
            Some(_) => None,
        }
    }

    fn http_post(&self, headers: &HeaderMap, body: &[u8]) -> Response {
        let message: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        self.record("POST", pairs(headers), message.clone());
        let method = message.get("method").and_then(Value::as_str);
        if self.options.sessionless {
            return match self.answer(&message) {
                Some(reply) if message.get("id").is_some() && method.is_some() => {
                    Response::builder()
                        .header("content-type", "application/json")
                        .body(Body::from(reply.to_string()))
                        .unwrap()
                }
                _ => plain(StatusCode::ACCEPTED, ""),
            };
        }
        if method == Some("initialize") {
            let id = session_id(self.minted.fetch_add(1, Ordering::SeqCst) + 1);
            self.sessions.lock().unwrap().insert(id.clone());
            let reply = self.answer(&message).expect("initialize is answered");
            return Response::builder()
                .header("content-type", "application/json")
                .header("mcp-session-id", id)
                .body(Body::from(reply.to_string()))
                .unwrap();
        }
        if let Some(refusal) = self.refusal(headers) {
            return refusal;
        }
        if method.is_none() || message.get("id").is_none() {
            // A notification or a response.
            return Response::builder()
                .status(StatusCode::ACCEPTED)
                .body(Body::empty())
                .unwrap();
        }
        if self.options.expire_at_once {
            return plain(StatusCode::NOT_FOUND, "Session not found");
        }
        if method == Some("tools/call") && message["params"]["name"] == "resume" {
            return self.resumable_stream(&message);
        }
        match self.answer(&message) {
            Some(reply) => Response::builder()
                .header("content-type", "application/json")
                .body(Body::from(reply.to_string()))
                .unwrap(),
            None => plain(StatusCode::ACCEPTED, ""),
        }
    }

    /// A POST stream that sends one progress notification and a resumable
    /// event (`id: e1`, `retry: 200`), then ends without the response.
    fn resumable_stream(&self, request: &Value) -> Response {
        let id = request["id"].clone();
        let token = request["params"]["_meta"]["progressToken"].clone();
        *self.resume.lock().unwrap() = Some((id, token.clone()));
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1, "total": 2, "message": "before the break"}});
        let body = format!("id: e0\ndata: {progress}\n\nid: e1\nretry: 200\ndata: \n\n");
        *self.resume_closed_at.lock().unwrap() = Some(Instant::now());
        sse(Body::from(body))
    }

    fn http_get(&self, headers: &HeaderMap) -> Response {
        self.record("GET", pairs(headers), Value::Null);
        if self.options.sessionless {
            return plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        }
        if let Some(refusal) = self.refusal(headers) {
            return refusal;
        }
        if let Some(last) = headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
            let pending = self.resume.lock().unwrap().take();
            let Some((id, token)) = pending.filter(|_| last == "e1") else {
                return plain(StatusCode::NOT_FOUND, "nothing to resume");
            };
            let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 2, "total": 2, "message": "after the break"}});
            let response = json!({"jsonrpc": "2.0", "id": id,
                "result": {"content": [{"type": "text", "text": "resumed"}]}});
            let body = format!("id: e2\ndata: {progress}\n\nid: e3\ndata: {response}\n\n");
            return sse(Body::from(body));
        }
        // The standalone stream: open until the client goes away.
        let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
        let _ = tx.send(Bytes::from_static(b": open\n\n"));
        self.push.lock().unwrap().push(tx);
        let stream = futures::stream::unfold(rx, |mut rx| async move {
            let bytes = rx.recv().await?;
            let event = if bytes.starts_with(b":") {
                bytes
            } else {
                Bytes::from(format!("data: {}\n\n", String::from_utf8_lossy(&bytes)))
            };
            Some((Ok::<_, Infallible>(event), rx))
        });
        sse(Body::from_stream(stream))
    }

    fn http_delete(&self, headers: &HeaderMap) -> Response {
        self.record("DELETE", pairs(headers), Value::Null);
        if let Some(refusal) = self.refusal(headers) {
            return refusal;
        }
        if let Some(id) = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            self.sessions.lock().unwrap().remove(id);
        }
        plain(StatusCode::OK, "")
    }
}

async fn serve_stdio(
    fake: Arc<LegacyFake>,
    read: impl tokio::io::AsyncRead + Send + Unpin,
    mut write: impl tokio::io::AsyncWrite + Send + Unpin,
    mut push: mpsc::UnboundedReceiver<Bytes>,
) {
    let mut lines = FramedRead::new(read, LinesCodec::new());
    let mut initialized = false;
    loop {
        let out = tokio::select! {
            line = lines.next() => {
                let Some(Ok(line)) = line else { return };
                let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                fake.record("STDIO", Vec::new(), message.clone());
                let method = message.get("method").and_then(Value::as_str).unwrap_or("");
                let id = message.get("id").cloned();
                let reply = match id {
                    // Notifications and responses get no answer.
                    None => None,
                    Some(_) if message.get("method").is_none() => None,
                    Some(id) if !initialized && method != "initialize" => match method {
                        "server/discover" if fake.options.silent_discover => None,
                        "server/discover" if fake.options.discover_invalid_request => {
                            Some(error(id, -32600, "Bad Request: Server not initialized"))
                        }
                        "server/discover" => Some(error(id, -32601, "Method not found: server/discover")),
                        _ => Some(error(id, -32600, "Bad Request: Server not initialized")),
                    },
                    Some(_) => {
                        initialized |= method == "initialize";
                        fake.answer(&message)
                    }
                };
                reply.map(|v| Bytes::from(v.to_string()))
            }
            pushed = push.recv() => {
                let Some(pushed) = pushed else { return };
                Some(pushed)
            }
        };
        if let Some(bytes) = out {
            let mut line = bytes.to_vec();
            line.push(b'\n');
            if write.write_all(&line).await.is_err() {
                return;
            }
        }
    }
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain")
        .body(Body::from(text))
        .unwrap()
}

fn sse(body: Body) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
        .unwrap()
}

fn pairs(headers: &HeaderMap) -> Headers {
    headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect()
}

/// Waits up to `limit` for `done`, checking every 10 ms.
pub async fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}
