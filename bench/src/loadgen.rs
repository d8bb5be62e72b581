//! The HTTP load generator: N keep-alive HTTP/1.1 connections (hyper
//! client), each sending one request at a time as fast as replies come back,
//! first for a warm-up that is not counted, then for the measured duration.
//! Every reply is checked ([`Workload::check`]); a wrong one is an error.
//!
//! Every loop is bounded in time (the deadline, a per-request timeout) and in
//! count (requests per connection, reconnections).
//!
//! A legacy workload ([`Workload::is_legacy`]) first opens a 2025-11-25
//! session per connection ([`open_session`]: `initialize`, then
//! `notifications/initialized`), unless [`LoadConfig::sessions`] hands it
//! sessions opened before, and sends every call with that session's
//! `Mcp-Session-Id`. [`Workload::Bump`] likewise first opens a counter
//! handle per connection ([`open_counter`]), unless [`LoadConfig::counters`]
//! hands it counters, and bumps that one.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http::header::{self, HeaderValue};
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::workload::{
    INITIALIZED_BODY, LEGACY_PROTOCOL_VERSION, PATH, PROTOCOL_VERSION, Workload, check_initialize,
    initialize_body, new_counter_body, result_text,
};

/// Most requests one connection sends in one run.
const MAX_REQUESTS_PER_CONNECTION: u64 = 50_000_000;
/// Most times one connection is re-opened after a failure.
const MAX_RECONNECTS: u32 = 50;
/// Errors kept verbatim for the report.
const KEPT_ERRORS: usize = 5;
/// Most failed attempts of one connection to open its legacy session (or
/// its counter).
const MAX_SESSION_ATTEMPTS: u32 = 50;

/// One load run.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// The server (always on 127.0.0.1).
    pub addr: SocketAddr,
    /// Concurrent connections, each with one request in flight.
    pub connections: usize,
    /// Load before measuring (not counted).
    pub warmup: Duration,
    /// Measured load.
    pub duration: Duration,
    /// Longest wait for one reply; a slower one is an error.
    pub request_timeout: Duration,
    /// What to send.
    pub workload: Workload,
    /// Stop after this many requests in all (warm-up included), if given.
    pub max_requests: Option<u64>,
    /// Legacy workloads: sessions opened before the run, connection `i` uses
    /// `sessions[i % len]` (so that a callgrind count holds only calls);
    /// empty: each connection opens its own first.
    pub sessions: Vec<String>,
    /// [`Workload::Bump`]: counter handles opened before the run, connection
    /// `i` bumps `counters[i % len]`; empty: each connection opens its own.
    pub counters: Vec<String>,
}

/// What one run measured.
#[derive(Debug)]
pub struct LoadResult {
    /// Correct replies to requests started in the measured window.
    pub ok: u64,
    /// Wrong replies, failed requests and timeouts in the measured window.
    pub errors: u64,
    /// Errors during the warm-up (reported, not counted).
    pub warmup_errors: u64,
    /// Every reply received, warm-up included (what the server did in all).
    pub replies: u64,
    /// The measured window.
    pub elapsed: Duration,
    /// Latency of the correct measured replies, in microseconds.
    pub latency: Histogram<u64>,
    /// The first few errors, verbatim.
    pub sample_errors: Vec<String>,
}

impl LoadResult {
    /// Correct replies per second.
    pub fn rps(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// A latency histogram in microseconds, 1 µs to 60 s, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// Runs the load and returns what it measured.
pub async fn run(config: &LoadConfig) -> LoadResult {
    assert!(
        config.addr.ip().is_loopback(),
        "the load generator only targets 127.0.0.1"
    );
    let start = Instant::now();
    let measure_from = start + config.warmup;
    let end = measure_from + config.duration;
    let host = HeaderValue::from_str(&config.addr.to_string()).expect("an address is a valid Host");
    let connections = config.connections.max(1);
    let budget = Arc::new(AtomicU64::new(config.max_requests.unwrap_or(u64::MAX)));
    let mut tasks = Vec::with_capacity(connections);
    for index in 0..connections {
        let session = if config.sessions.is_empty() {
            None
        } else {
            let id = &config.sessions[index % config.sessions.len()];
            Some(HeaderValue::from_str(id).expect("a session id is a valid header value"))
        };
        let counter = (!config.counters.is_empty())
            .then(|| config.counters[index % config.counters.len()].clone());
        let task = Connection {
            session,
            counter,
            last_count: None,
            addr: config.addr,
            host: host.clone(),
            workload: config.workload,
            timeout: config.request_timeout,
            first_id: index as u64 + 1,
            stride: connections as u64,
            measure_from,
            end,
            budget: Arc::clone(&budget),
        };
        tasks.push(tokio::spawn(task.run()));
    }
    let mut result = LoadResult {
        ok: 0,
        errors: 0,
        warmup_errors: 0,
        replies: 0,
        elapsed: config.duration,
        latency: new_histogram(),
        sample_errors: Vec::new(),
    };
    for task in tasks {
        match task.await {
            Ok(tally) => {
                result.ok += tally.ok;
                result.errors += tally.errors;
                result.warmup_errors += tally.warmup_errors;
                result.replies += tally.replies;
                let _ = result.latency.add(&tally.latency);
                for error in tally.sample_errors {
                    if result.sample_errors.len() < KEPT_ERRORS {
                        result.sample_errors.push(error);
                    }
                }
            }
            Err(error) => {
                result.errors += 1;
                result
                    .sample_errors
                    .push(format!("load task failed: {error}"));
            }
        }
    }
    result
}

struct Connection {
    /// The legacy session the calls name, when already open.
    session: Option<HeaderValue>,
    /// The counter [`Workload::Bump`] bumps, when already open.
    counter: Option<String>,
    /// The count `bump` answered last on this connection.
    last_count: Option<u64>,
    addr: SocketAddr,
    host: HeaderValue,
    workload: Workload,
    timeout: Duration,
    first_id: u64,
    stride: u64,
    measure_from: Instant,
    end: Instant,
    budget: Arc<AtomicU64>,
}

struct Tally {
    ok: u64,
    errors: u64,
    warmup_errors: u64,
    replies: u64,
    latency: Histogram<u64>,
    sample_errors: Vec<String>,
}

impl Tally {
    fn error(&mut self, measured: bool, error: String) {
        if measured {
            self.errors += 1;
        } else {
            self.warmup_errors += 1;
        }
        if self.sample_errors.len() < KEPT_ERRORS {
            self.sample_errors.push(error);
        }
    }
}

/// The sending half of one HTTP/1.1 client connection.
pub type Sender = http1::SendRequest<Full<Bytes>>;

impl Connection {
    async fn run(mut self) -> Tally {
        let mut tally = Tally {
            ok: 0,
            errors: 0,
            warmup_errors: 0,
            replies: 0,
            latency: new_histogram(),
            sample_errors: Vec::new(),
        };
        let mut sender: Option<Sender> = None;
        let mut reconnects = 0u32;
        let mut session_attempts = 0u32;
        let mut id = self.first_id;
        for _ in 0..MAX_REQUESTS_PER_CONNECTION {
            let now = Instant::now();
            if now >= self.end {
                break;
            }
            let measured = now >= self.measure_from;
            let send = match sender.as_mut() {
                Some(send) => send,
                None => {
                    if reconnects > MAX_RECONNECTS {
                        tally.error(
                            measured,
                            "too many reconnections; connection given up".into(),
                        );
                        break;
                    }
                    reconnects += 1;
                    match tokio::time::timeout(self.timeout, connect(self.addr)).await {
                        Ok(Ok(send)) => sender.insert(send),
                        Ok(Err(error)) => {
                            tally.error(measured, format!("connect: {error}"));
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                        Err(_) => {
                            tally.error(measured, "connect timed out".into());
                            continue;
                        }
                    }
                }
            };
            if let Some(what) = self.to_open() {
                if session_attempts >= MAX_SESSION_ATTEMPTS {
                    tally.error(
                        measured,
                        format!("could not open a {what}; connection given up"),
                    );
                    break;
                }
                session_attempts += 1;
                match tokio::time::timeout(self.timeout, self.open(send)).await {
                    Ok(Ok(replies)) => tally.replies += replies,
                    Ok(Err(error)) => {
                        tally.error(measured, error);
                        sender = None;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                    Err(_) => {
                        tally.error(measured, format!("opening the {what} timed out"));
                        sender = None;
                        continue;
                    }
                }
            }
            let left = self
                .budget
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
            if left.is_err() {
                break;
            }
            let request = self.request(id);
            let started = Instant::now();
            let outcome = tokio::time::timeout(self.timeout, exchange(send, request)).await;
            let latency = started.elapsed();
            match outcome {
                Ok(Ok((status, content_type, body))) => {
                    tally.replies += 1;
                    let checked = self
                        .workload
                        .check(id, status, content_type.as_deref(), &body)
                        .and_then(|()| self.follow_count(&body));
                    match checked {
                        Ok(()) => {
                            if measured {
                                tally.ok += 1;
                                let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
                                tally.latency.saturating_record(micros.max(1));
                            }
                        }
                        Err(error) => tally.error(measured, error),
                    }
                }
                Ok(Err(error)) => {
                    tally.error(measured, format!("request failed: {error}"));
                    sender = None;
                }
                Err(_) => {
                    tally.error(measured, format!("no reply within {:?}", self.timeout));
                    sender = None;
                }
            }
            id += self.stride;
        }
        tally
    }

    /// What this connection must open before its first call, if anything.
    fn to_open(&self) -> Option<&'static str> {
        if self.workload.is_legacy() && self.session.is_none() {
            Some("session")
        } else if self.workload == Workload::Bump && self.counter.is_none() {
            Some("counter")
        } else {
            None
        }
    }

    /// Opens the session or counter [`Connection::to_open`] names; returns
    /// the replies it took.
    async fn open(&mut self, send: &mut Sender) -> Result<u64, String> {
        if self.workload.is_legacy() {
            let session = open_session(send, &self.host, 0).await?;
            self.session =
                Some(HeaderValue::from_str(&session).map_err(|_| "a bad Mcp-Session-Id")?);
            Ok(2)
        } else {
            self.counter = Some(open_counter(send, &self.host, 0).await?);
            Ok(1)
        }
    }

    /// [`Workload::Bump`]: the count must be one more than the last one
    /// this connection saw (no update lost, each one stored).
    fn follow_count(&mut self, body: &[u8]) -> Result<(), String> {
        if self.workload != Workload::Bump {
            return Ok(());
        }
        let count: u64 = result_text(body)?
            .parse()
            .map_err(|_| "the count is not a number".to_owned())?;
        let last = self.last_count.replace(count);
        match last {
            Some(last) if count != last + 1 => Err(format!(
                "count {count} after {last} on one connection's own counter"
            )),
            _ => Ok(()),
        }
    }

    fn request(&self, id: u64) -> Request<Full<Bytes>> {
        let workload = self.workload;
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(PATH)
            .header(header::HOST, self.host.clone())
            .header(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )
            .header(
                header::ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            )
            .header(
                "mcp-protocol-version",
                HeaderValue::from_static(workload.protocol_version()),
            );
        if workload.is_legacy() {
            // A 2025-11-25 client: its session, and no Mcp-Method/Mcp-Name.
            if let Some(session) = &self.session {
                builder = builder.header("mcp-session-id", session.clone());
            }
        } else {
            builder = builder.header("mcp-method", HeaderValue::from_static(workload.method()));
            if let Some(tool) = workload.tool() {
                builder = builder.header("mcp-name", HeaderValue::from_static(tool));
            }
        }
        builder
            .body(Full::new(Bytes::from(
                workload.body_with(id, self.counter.as_deref()),
            )))
            .expect("a valid request")
    }
}

/// Opens one HTTP/1.1 connection (TCP_NODELAY on) and drives it in a task.
pub async fn connect(addr: SocketAddr) -> Result<Sender, String> {
    let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// One HTTP/2 connection's request handle (cloned for each stream).
pub type H2Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

/// Opens one HTTP/2 connection with prior knowledge (h2c) to `addr`.
pub async fn connect_h2(addr: SocketAddr) -> Result<H2Sender, String> {
    let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (sender, connection) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// A `POST /mcp` as a 2025-11-25 client sends it: JSON body, both media
/// types accepted, and (after `initialize`) its session and protocol version.
pub fn legacy_request(
    host: &HeaderValue,
    session: Option<&str>,
    body: impl Into<Bytes>,
) -> Result<Request<Full<Bytes>>, String> {
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(PATH)
        .header(header::HOST, host.clone())
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream");
    if let Some(session) = session {
        builder = builder
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", LEGACY_PROTOCOL_VERSION);
    }
    builder
        .body(Full::new(body.into()))
        .map_err(|e| e.to_string())
}

/// Opens a 2025-11-25 session on `sender`'s connection: `initialize`
/// (request `id`, protocol version 2025-11-25, no capabilities) must be
/// answered with a result and an `Mcp-Session-Id`, then
/// `notifications/initialized` (with that id) with 202. Returns the id.
pub async fn open_session(
    sender: &mut Sender,
    host: &HeaderValue,
    id: u64,
) -> Result<String, String> {
    let request = legacy_request(host, None, initialize_body(id))?;
    let (status, content_type, session, body) = exchange_with_session(sender, request)
        .await
        .map_err(|e| format!("initialize failed: {e}"))?;
    check_initialize(id, status, content_type.as_deref(), &body)?;
    let session = session.ok_or("initialize: no Mcp-Session-Id in the reply")?;
    let request = legacy_request(host, Some(&session), INITIALIZED_BODY)?;
    let (status, _, body) = exchange(sender, request)
        .await
        .map_err(|e| format!("notifications/initialized failed: {e}"))?;
    if status != 202 {
        return Err(format!(
            "notifications/initialized: HTTP {status}, expected 202: {}",
            String::from_utf8_lossy(&body)
        ));
    }
    Ok(session)
}

/// Opens a counter for [`Workload::Bump`] on `sender`'s connection: a
/// `tools/call` of `new_counter` (request `id`), whose one text block is the
/// new handle's id (`cnt_…`).
pub async fn open_counter(
    sender: &mut Sender,
    host: &HeaderValue,
    id: u64,
) -> Result<String, String> {
    let request = Request::builder()
        .method(Method::POST)
        .uri(PATH)
        .header(header::HOST, host.clone())
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "new_counter")
        .body(Full::new(Bytes::from(new_counter_body(id))))
        .map_err(|e| e.to_string())?;
    let (status, _, body) = exchange(sender, request)
        .await
        .map_err(|e| format!("new_counter failed: {e}"))?;
    if status != 200 {
        return Err(format!("new_counter: HTTP {status}"));
    }
    let counter = result_text(&body).map_err(|e| format!("new_counter: {e}"))?;
    if !counter.starts_with("cnt_") {
        return Err(format!(
            "new_counter answered {counter:?}, not a counter id"
        ));
    }
    Ok(counter)
}

/// Opens `n` counters one after another on one connection to `addr`.
pub async fn open_counters(addr: SocketAddr, n: usize) -> Result<Vec<String>, String> {
    let host = HeaderValue::from_str(&addr.to_string()).map_err(|e| e.to_string())?;
    let mut sender = connect(addr).await?;
    let mut counters = Vec::with_capacity(n);
    for id in 0..n as u64 {
        counters.push(open_counter(&mut sender, &host, id).await?);
    }
    Ok(counters)
}

async fn exchange_with_session(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
) -> Result<(u16, Option<String>, Option<String>, Bytes), String> {
    sender.ready().await.map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    let text = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    Ok((
        parts.status.as_u16(),
        text("content-type"),
        text("mcp-session-id"),
        body,
    ))
}

/// Sends one request and reads the whole reply: status, content type, body.
pub async fn exchange(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
) -> Result<(u16, Option<String>, Bytes), String> {
    let (status, content_type, _, body) = exchange_with_session(sender, request).await?;
    Ok((status, content_type, body))
}
