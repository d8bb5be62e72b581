//! HTTP/2 with prior knowledge (h2c) beside HTTP/1.1 on one port: calls and
//! listen streams multiplexed on one connection, the endpoint's checks
//! applied per stream with the statuses HTTP/1.1 gets, the preface's
//! deadline, idle connections closed, graceful shutdown, legacy sessions.
//!
//! `H2` is one HTTP/2 connection made with hyper's client, so "one
//! connection" holds by construction; reqwest with `http2_prior_knowledge`
//! is the everyday client.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Barrier, Notify, oneshot};
use tokio::task::JoinHandle;
use toolwire_server::auth::{AuthConfig, StaticTokens};
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::{NoArgs, Principal, RequestContext, Server, ToolBuilder};

/// Every wait in these tests is bounded by this.
const WAIT: Duration = Duration::from_secs(10);

/// Calls in flight at once on one connection.
const CONCURRENT: usize = 100;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

/// Tools: `echo`; `meet`, which returns only once [`CONCURRENT`] calls
/// run at the same time; `hold`, which returns when `release` is notified;
/// `whoami`.
fn test_server(release: Arc<Notify>) -> Server {
    let barrier = Arc::new(Barrier::new(CONCURRENT));
    Server::builder("h2-test", "1.0.0")
        .tool(
            ToolBuilder::new("echo")
                .handler(|a: EchoArgs, _cx: RequestContext| async move { a.text }),
        )
        .tool(
            ToolBuilder::new("meet").handler(move |_: NoArgs, _cx: RequestContext| {
                let barrier = barrier.clone();
                async move {
                    barrier.wait().await;
                    "met"
                }
            }),
        )
        .tool(
            ToolBuilder::new("hold").handler(move |_: NoArgs, _cx: RequestContext| {
                let release = release.clone();
                async move {
                    release.notified().await;
                    "released"
                }
            }),
        )
        .tool(
            ToolBuilder::new("whoami").handler(|_: NoArgs, cx: RequestContext| async move {
                cx.principal()
                    .subject
                    .clone()
                    .unwrap_or_else(|| "anonymous".to_owned())
            }),
        )
        .build()
        .unwrap()
}

/// A server on 127.0.0.1:0 until [`Harness::stop`].
struct Harness {
    addr: SocketAddr,
    url: String,
    server: Server,
    release: Arc<Notify>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Harness {
    async fn start() -> Harness {
        Harness::with_config(HttpConfig::new()).await
    }

    async fn with_config(config: HttpConfig) -> Harness {
        let release = Arc::new(Notify::new());
        let server = test_server(release.clone());
        let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server.clone(), config)
            .await
            .unwrap();
        let addr = http.local_addr();
        let (shutdown, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(http.run_until(async {
            let _ = stopped.await;
        }));
        Harness {
            addr,
            url: format!("http://{addr}/mcp"),
            server,
            release,
            shutdown: Some(shutdown),
            task: Some(task),
        }
    }

    /// Asks the server to stop; it must within [`WAIT`].
    async fn stop(mut self) {
        let _ = self.shutdown.take().unwrap().send(());
        tokio::time::timeout(WAIT, self.task.take().unwrap())
            .await
            .expect("the server stops")
            .unwrap()
            .expect("the server ran cleanly");
    }
}

type ReqBody = BoxBody<Bytes, Infallible>;

/// One HTTP/2 connection (hyper's client).
struct H2 {
    send: hyper::client::conn::http2::SendRequest<ReqBody>,
    connection: JoinHandle<hyper::Result<()>>,
}

impl H2 {
    async fn connect(addr: SocketAddr) -> H2 {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let (send, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .handshake(TokioIo::new(tcp))
            .await
            .unwrap();
        H2 {
            send,
            connection: tokio::spawn(connection),
        }
    }

    /// Sends `request` on this connection; the future owns what it needs,
    /// so it can be spawned.
    fn send(
        &self,
        request: Request<ReqBody>,
    ) -> impl Future<Output = Response<Incoming>> + Send + 'static {
        let mut send = self.send.clone();
        async move {
            let response = tokio::time::timeout(WAIT, send.send_request(request))
                .await
                .expect("a response within the wait")
                .expect("the request was sent");
            assert_eq!(response.version(), Version::HTTP_2);
            response
        }
    }

    /// POSTs `body` to `/mcp` with the headers a conforming client sends.
    fn post(
        &self,
        authority: &str,
        body: &Value,
    ) -> impl Future<Output = Response<Incoming>> + Send + 'static {
        self.send(request(authority, body, full(body.to_string())))
    }
}

fn full(body: impl Into<Bytes>) -> ReqBody {
    Full::new(body.into()).boxed()
}

/// A POST of `body` to `http://{authority}/mcp` with the headers a
/// conforming client derives from `json`.
fn request(authority: &str, json: &Value, body: ReqBody) -> Request<ReqBody> {
    let mut request = Request::post(format!("http://{authority}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(version) =
        json["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str()
    {
        request = request.header("mcp-protocol-version", version);
    }
    if let Some(method) = json["method"].as_str() {
        request = request.header("mcp-method", method);
        if let Some(name) = json["params"]["name"].as_str() {
            request = request.header("mcp-name", name);
        }
    }
    request.body(body).unwrap()
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "h2-test", "version": "0"}
    })
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments, "_meta": meta()}})
}

fn listen(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
           "params": {"notifications": {"toolsListChanged": true}, "_meta": meta()}})
}

/// The status and the JSON body of a reply.
async fn json_of(response: Response<Incoming>) -> (StatusCode, Value) {
    let status = response.status();
    let bytes = tokio::time::timeout(WAIT, response.into_body().collect())
        .await
        .expect("the body within the wait")
        .unwrap()
        .to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

/// The text of a successful tools/call reply.
async fn text_of(response: Response<Incoming>) -> String {
    let (status, reply) = json_of(response).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {reply}"))
        .to_owned()
}

/// Reads the `data:` messages of an SSE reply as they come.
struct Events {
    body: Incoming,
    text: String,
}

impl Events {
    fn new(response: Response<Incoming>) -> Events {
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Events {
            body: response.into_body(),
            text: String::new(),
        }
    }

    /// The next message; `None` when the stream ends.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.text.find("\n\n") {
                let event: String = self.text.drain(..end + 2).collect();
                if let Some(data) = event.lines().find_map(|l| l.strip_prefix("data: ")) {
                    return Some(serde_json::from_str(data).unwrap());
                }
                continue;
            }
            let frame = tokio::time::timeout(WAIT, self.body.frame())
                .await
                .expect("an event within the wait")?
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.text.push_str(std::str::from_utf8(&data).unwrap());
            }
        }
    }
}

/// A reqwest client that speaks HTTP/2 with prior knowledge.
fn h2_reqwest() -> reqwest::Client {
    reqwest::Client::builder()
        .http2_prior_knowledge()
        .timeout(WAIT)
        .build()
        .unwrap()
}

/// POSTs `body` with reqwest and the headers a conforming client sends.
async fn reqwest_post(client: &reqwest::Client, url: &str, body: &Value) -> reqwest::Response {
    let mut post = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28");
    if let Some(method) = body["method"].as_str() {
        post = post.header("mcp-method", method);
    }
    if let Some(name) = body["params"]["name"].as_str() {
        post = post.header("mcp-name", name);
    }
    post.body(body.to_string()).send().await.unwrap()
}

// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_tools_call_over_h2c() {
    let h = Harness::start().await;
    let response = reqwest_post(
        &h2_reqwest(),
        &h.url,
        &call(7, "echo", json!({"text": "héllo"})),
    )
    .await;
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let reply: Value = response.json().await.unwrap();
    assert_eq!(reply["id"], 7);
    assert_eq!(
        reply["result"]["content"],
        json!([{"type": "text", "text": "héllo"}])
    );
    assert_eq!(reply["result"]["resultType"], "complete");
    h.stop().await;
}

#[tokio::test]
async fn http1_is_still_served_on_the_same_port() {
    let h = Harness::start().await;
    let http1 = reqwest::Client::builder().timeout(WAIT).build().unwrap();
    for (client, version) in [
        (&http1, reqwest::Version::HTTP_11),
        (&h2_reqwest(), reqwest::Version::HTTP_2),
        (&http1, reqwest::Version::HTTP_11),
    ] {
        let response = reqwest_post(client, &h.url, &call(1, "echo", json!({"text": "v"}))).await;
        assert_eq!(response.version(), version);
        let reply: Value = response.json().await.unwrap();
        assert_eq!(reply["result"]["content"][0]["text"], "v");
    }
    h.stop().await;
}

#[tokio::test]
async fn many_concurrent_calls_share_one_connection() {
    let h = Harness::start().await;
    let h2 = H2::connect(h.addr).await;
    let authority = h.addr.to_string();
    // `meet` returns only once CONCURRENT calls run together: on one
    // connection that takes multiplexing.
    let calls = (0..CONCURRENT as i64).map(|id| {
        let h2 = &h2;
        let authority = &authority;
        async move {
            let (status, reply) =
                json_of(h2.post(authority, &call(id, "meet", json!({}))).await).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(reply["id"], id);
            assert_eq!(reply["result"]["content"][0]["text"], "met");
        }
    });
    futures::future::join_all(calls).await;
    // And plain calls with distinct answers, all in flight at once.
    let echoes = (0..CONCURRENT).map(|n| {
        let h2 = &h2;
        let authority = &authority;
        async move {
            let text = format!("call {n}");
            let body = call(n as i64, "echo", json!({"text": text}));
            assert_eq!(text_of(h2.post(authority, &body).await).await, text);
        }
    });
    futures::future::join_all(echoes).await;
    assert!(!h2.connection.is_finished(), "the connection is still open");
    h.stop().await;
}

#[tokio::test]
async fn a_listen_stream_gets_list_changed_while_a_call_runs_on_the_same_connection() {
    let h = Harness::start().await;
    let h2 = H2::connect(h.addr).await;
    let authority = h.addr.to_string();
    let mut events = Events::new(h2.post(&authority, &listen(1)).await);
    let ack = events.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    // A call that runs until released, on the same connection.
    let held = tokio::spawn(h2.post(&authority, &call(2, "hold", json!({}))));
    h.server
        .add_tool(
            ToolBuilder::new("late").handler(|_: NoArgs, _cx: RequestContext| async { "late" }),
        )
        .unwrap();
    assert_eq!(
        events.next().await.unwrap(),
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
               "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 1}}})
    );
    assert!(!held.is_finished(), "the call is still running");
    h.release.notify_one();
    let response = tokio::time::timeout(WAIT, held).await.unwrap().unwrap();
    assert_eq!(text_of(response).await, "released");
    // The listen stream is still open and still told.
    h.server.remove_tool("late").unwrap();
    assert_eq!(
        events.next().await.unwrap()["method"],
        "notifications/tools/list_changed"
    );
    h.stop().await;
}

#[tokio::test]
async fn refusals_have_the_statuses_and_bodies_of_http1() {
    let h = Harness::with_config(HttpConfig::new().max_body_bytes(1024)).await;
    let h2 = H2::connect(h.addr).await;
    let http1 = reqwest::Client::builder().timeout(WAIT).build().unwrap();
    let ok = call(1, "echo", json!({"text": "hi"}));
    let big = call(1, "echo", json!({"text": "x".repeat(2000)}));
    let authority = h.addr.to_string();
    // (what is wrong, the request over h2, the same over HTTP/1.1, the status)
    let cases: Vec<(&str, Request<ReqBody>, reqwest::RequestBuilder, StatusCode)> = vec![
        (
            "a foreign Origin",
            with_header(
                request(&authority, &ok, full(ok.to_string())),
                "origin",
                "https://evil.example",
            ),
            http1_post(&http1, &h.url, &ok, ("origin", "https://evil.example")),
            StatusCode::FORBIDDEN,
        ),
        (
            "a foreign Host (:authority over h2)",
            request(
                &format!("evil.example:{}", h.addr.port()),
                &ok,
                full(ok.to_string()),
            ),
            http1_post(
                &http1,
                &h.url,
                &ok,
                ("host", &format!("evil.example:{}", h.addr.port())),
            ),
            StatusCode::FORBIDDEN,
        ),
        (
            "a body over the limit",
            request(&authority, &big, full(big.to_string())),
            http1_post(
                &http1,
                &h.url,
                &big,
                ("accept", "application/json, text/event-stream"),
            ),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            "an Mcp-Name that does not match the body",
            with_header(
                request(&authority, &ok, full(ok.to_string())),
                "mcp-name",
                "whoami",
            ),
            http1_post(&http1, &h.url, &ok, ("mcp-name", "whoami")),
            StatusCode::BAD_REQUEST,
        ),
        (
            "no Accept",
            without_header(request(&authority, &ok, full(ok.to_string())), "accept"),
            http1_post(&http1, &h.url, &ok, ("accept", "application/json")),
            StatusCode::NOT_ACCEPTABLE,
        ),
    ];
    for (case, over_h2, over_http1, status) in cases {
        let (h2_status, h2_reply) = json_of(h2.send(over_h2).await).await;
        let response = over_http1.send().await.unwrap();
        assert_eq!(response.version(), reqwest::Version::HTTP_11);
        let http1_status = response.status().as_u16();
        let http1_reply: Value = response.json().await.unwrap();
        assert_eq!(h2_status, status, "{case}: {h2_reply}");
        assert_eq!(http1_status, status.as_u16(), "{case}: {http1_reply}");
        assert_eq!(h2_reply, http1_reply, "{case}");
        // The connection serves its next stream.
        assert_eq!(
            text_of(h2.post(&authority, &ok).await).await,
            "hi",
            "{case}"
        );
    }
    let (_, reply) = json_of(
        h2.send(with_header(
            request(&authority, &ok, full(ok.to_string())),
            "origin",
            "https://evil.example",
        ))
        .await,
    )
    .await;
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "error": {"code": -32600, "message":
            "Invalid request: Origin 'https://evil.example' is not allowed (allow it with HttpConfig::allow_origin)"}})
    );
    let (_, reply) = json_of(h2.post(&authority, &big).await).await;
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "error": {"code": -32600, "message":
            "Invalid request: the request body is larger than 1024 bytes"}})
    );
    h.stop().await;
}

/// A conforming HTTP/1.1 POST of `body`, with one header replaced.
fn http1_post(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    (name, value): (&'static str, &str),
) -> reqwest::RequestBuilder {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("content-type", "application/json".parse().unwrap());
    headers.insert(
        "accept",
        "application/json, text/event-stream".parse().unwrap(),
    );
    headers.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
    headers.insert(
        "mcp-method",
        body["method"].as_str().unwrap().parse().unwrap(),
    );
    headers.insert(
        "mcp-name",
        body["params"]["name"].as_str().unwrap().parse().unwrap(),
    );
    headers.insert(name, value.parse().unwrap());
    client.post(url).headers(headers).body(body.to_string())
}

fn with_header(mut request: Request<ReqBody>, name: &'static str, value: &str) -> Request<ReqBody> {
    request.headers_mut().insert(name, value.parse().unwrap());
    request
}

fn without_header(mut request: Request<ReqBody>, name: &'static str) -> Request<ReqBody> {
    request.headers_mut().remove(name);
    request
}

#[tokio::test]
async fn authentication_is_checked_per_stream() {
    let tokens = StaticTokens::new().token("alice-token-0123456789", Principal::new("alice"));
    let auth = AuthConfig::new("https://mcp.example.com/mcp", tokens).unwrap();
    let h = Harness::with_config(HttpConfig::new().auth(auth)).await;
    let h2 = H2::connect(h.addr).await;
    let authority = h.addr.to_string();
    let body = call(1, "whoami", json!({}));
    for _ in 0..2 {
        let response = h2.post(&authority, &body).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            response.headers()["www-authenticate"],
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\""
        );
        let with_token = with_header(
            request(&authority, &body, full(body.to_string())),
            "authorization",
            "Bearer alice-token-0123456789",
        );
        assert_eq!(text_of(h2.send(with_token).await).await, "alice");
    }
    h.stop().await;
}

#[tokio::test]
async fn a_stalled_body_gets_408_on_its_stream_and_the_connection_serves_on() {
    let config = HttpConfig::new().body_read_timeout(Duration::from_millis(300));
    let h = Harness::with_config(config).await;
    let h2 = H2::connect(h.addr).await;
    let authority = h.addr.to_string();
    let body = call(1, "echo", json!({"text": "hi"}));
    // Half the body, then nothing (the sender is kept, so it never ends).
    let (mut sender, frames) =
        futures::channel::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(1);
    let text = body.to_string();
    sender
        .try_send(Ok(Frame::data(Bytes::from(text[..10].to_owned()))))
        .unwrap();
    let stalled = request(&authority, &body, StreamBody::new(frames).boxed());
    let (status, reply) = json_of(h2.send(stalled).await).await;
    assert_eq!(status, StatusCode::REQUEST_TIMEOUT);
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "error": {"code": -32600,
            "message": "Invalid request: the request body did not arrive in full within 300 ms"}})
    );
    assert_eq!(text_of(h2.post(&authority, &body).await).await, "hi");
    drop(sender);
    h.stop().await;
}

#[tokio::test]
async fn half_a_preface_then_nothing_is_closed_after_the_header_timeout() {
    let config = HttpConfig::new().header_read_timeout(Duration::from_millis(300));
    let h = Harness::with_config(config).await;
    let mut stalled = TcpStream::connect(h.addr).await.unwrap();
    stalled.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
    // Others are served meanwhile, over both protocols.
    let h2 = H2::connect(h.addr).await;
    let body = call(1, "echo", json!({"text": "hi"}));
    assert_eq!(
        text_of(h2.post(&h.addr.to_string(), &body).await).await,
        "hi"
    );
    let response = reqwest_post(&reqwest::Client::new(), &h.url, &body).await;
    assert_eq!(response.status(), 200);
    let mut buffer = Vec::new();
    let read = tokio::time::timeout(WAIT, stalled.read_to_end(&mut buffer))
        .await
        .expect("the server closes the stalled connection");
    // Closed without a byte (a reset counts as closed too).
    assert!(read.is_err() || buffer.is_empty(), "{buffer:?}");
    h.stop().await;
}

#[tokio::test]
async fn a_connection_with_no_open_stream_is_closed_after_the_header_timeout() {
    let config = HttpConfig::new().header_read_timeout(Duration::from_millis(300));
    let h = Harness::with_config(config).await;
    // Never a request: closed (GOAWAY) once the timeout has passed.
    let quiet = H2::connect(h.addr).await;
    // A request, then quiet: closed too.
    let served = H2::connect(h.addr).await;
    let body = call(1, "echo", json!({"text": "hi"}));
    assert_eq!(
        text_of(served.post(&h.addr.to_string(), &body).await).await,
        "hi"
    );
    for connection in [quiet.connection, served.connection] {
        tokio::time::timeout(WAIT, connection)
            .await
            .expect("the server closes the quiet connection")
            .unwrap()
            .expect("a graceful close");
    }
    h.stop().await;
}

#[tokio::test]
async fn an_open_listen_stream_keeps_its_connection_open() {
    let config = HttpConfig::new().header_read_timeout(Duration::from_millis(100));
    let h = Harness::with_config(config).await;
    let h2 = H2::connect(h.addr).await;
    let mut events = Events::new(h2.post(&h.addr.to_string(), &listen(3)).await);
    assert_eq!(
        events.next().await.unwrap()["method"],
        "notifications/subscriptions/acknowledged"
    );
    // Several header timeouts later the stream is still there.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!h2.connection.is_finished());
    h.server
        .add_tool(
            ToolBuilder::new("late").handler(|_: NoArgs, _cx: RequestContext| async { "late" }),
        )
        .unwrap();
    assert_eq!(
        events.next().await.unwrap()["method"],
        "notifications/tools/list_changed"
    );
    h.stop().await;
}

#[tokio::test]
async fn graceful_shutdown_completes_listen_streams_and_closes_h2_connections() {
    let h = Harness::start().await;
    let h2 = H2::connect(h.addr).await;
    let idle = H2::connect(h.addr).await;
    let authority = h.addr.to_string();
    let mut first = Events::new(h2.post(&authority, &listen(11)).await);
    let mut second = Events::new(h2.post(&authority, &listen(12)).await);
    first.next().await.unwrap();
    second.next().await.unwrap();
    let H2 { connection, .. } = h2;
    h.stop().await;
    for (events, id) in [(&mut first, 11), (&mut second, 12)] {
        let done = events.next().await.unwrap();
        assert_eq!(done["id"], id);
        assert_eq!(done["result"]["resultType"], "complete");
        assert!(events.next().await.is_none(), "the stream ends");
    }
    for connection in [connection, idle.connection] {
        tokio::time::timeout(WAIT, connection)
            .await
            .expect("the connection closes")
            .unwrap()
            .expect("a graceful close");
    }
}

#[tokio::test]
async fn a_legacy_session_over_h2c() {
    let h = Harness::start().await;
    let client = h2_reqwest();
    let post = |session: Option<&str>, body: Value| {
        let mut post = client
            .post(&h.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(id) = session {
            post = post
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-11-25");
        }
        post.send()
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "h2-legacy", "version": "1"}}});
    let response = post(None, initialize).await.unwrap();
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.status(), 200);
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let reply: Value = response.json().await.unwrap();
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(Some(&id), initialized).await.unwrap().status(), 202);
    let echo = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "legacy"}}});
    let response = post(Some(&id), echo).await.unwrap();
    assert_eq!(response.status(), 200);
    let reply: Value = response.json().await.unwrap();
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["result"]["content"][0]["text"], "legacy");
    assert_eq!(h.server.open_subscriptions(), 0);
    h.stop().await;
}

#[tokio::test]
async fn shutdown_does_not_wait_for_a_connection_still_sending_its_preface() {
    // The default header timeout (30 s) is longer than the wait below.
    let h = Harness::start().await;
    let mut stalled = TcpStream::connect(h.addr).await.unwrap();
    stalled.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
    let body = call(1, "echo", json!({"text": "hi"}));
    let response = reqwest_post(&reqwest::Client::new(), &h.url, &body).await;
    assert_eq!(response.status(), 200);
    h.stop().await;
    let mut buffer = Vec::new();
    let read = tokio::time::timeout(WAIT, stalled.read_to_end(&mut buffer))
        .await
        .expect("the connection is closed");
    assert!(read.is_err() || buffer.is_empty(), "{buffer:?}");
}
