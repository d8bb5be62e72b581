//! The Streamable HTTP transport against a real listener on 127.0.0.1:0:
//! every transport rule, positive and negative, with exact statuses and codes.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Barrier, mpsc, oneshot};
use tokio::task::JoinHandle;
use toolwire_protocol::JsonObject;
use toolwire_server::http::{HttpConfig, HttpServer, router};
use toolwire_server::{NoArgs, Principal, RequestContext, Server, ToolBuilder};

/// Every wait in these tests is bounded by this.
const WAIT: Duration = Duration::from_secs(10);

const VERSION: &str = "2026-07-28";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("expected an object, got {other}"),
    }
}

/// Where the test tools report that they saw their cancellation.
#[derive(Clone)]
struct Probes {
    cancelled: mpsc::UnboundedSender<&'static str>,
    barrier: Arc<Barrier>,
}

fn test_server(probes: Probes) -> Server {
    let sql_schema = object(json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "dry_run": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            "where": {"type": "object", "properties": {
                "zone": {"type": "string", "x-mcp-header": "Zone"}
            }},
            "query": {"type": "string"}
        }
    }));
    let on_cancel = probes.cancelled.clone();
    let on_cancel_quiet = probes.cancelled.clone();
    let barrier = probes.barrier.clone();
    Server::builder("http-test", "1.0.0")
        .tool(
            ToolBuilder::new("echo")
                .handler(|a: EchoArgs, _cx: RequestContext| async move { a.text }),
        )
        .tool(ToolBuilder::new("sql").raw_handler(
            sql_schema,
            |args: JsonObject, _cx: RequestContext| async move { Value::Object(args).to_string() },
        ))
        .tool(
            ToolBuilder::new("steps").handler(|_: NoArgs, cx: RequestContext| async move {
                for step in 1..=3 {
                    cx.progress(f64::from(step), Some(3.0), Some(&format!("step {step}")))
                        .await;
                }
                cx.log(
                    toolwire_protocol::LoggingLevel::Info,
                    Some("steps"),
                    json!("all steps done"),
                )
                .await;
                "done"
            }),
        )
        // Sends one progress notification (so the reply is a stream), then
        // waits until cancelled and reports it.
        .tool(
            ToolBuilder::new("wait").handler(move |_: NoArgs, cx: RequestContext| {
                let on_cancel = on_cancel.clone();
                async move {
                    cx.progress(1.0, None, Some("started")).await;
                    cx.cancellation().cancelled().await;
                    let _ = on_cancel.send("wait");
                    "cancelled"
                }
            }),
        )
        // Waits until cancelled without sending anything first.
        .tool(
            ToolBuilder::new("wait_quietly").handler(move |_: NoArgs, cx: RequestContext| {
                let on_cancel = on_cancel_quiet.clone();
                async move {
                    cx.cancellation().cancelled().await;
                    let _ = on_cancel.send("wait_quietly");
                    "cancelled"
                }
            }),
        )
        // Returns only once three calls are running at the same time.
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
            ToolBuilder::new("whoami").handler(|_: NoArgs, cx: RequestContext| async move {
                cx.principal()
                    .subject
                    .clone()
                    .unwrap_or_else(|| "anonymous".to_owned())
            }),
        )
        .build()
        .expect("test tools are valid")
}

struct Harness {
    url: String,
    server: Server,
    client: reqwest::Client,
    cancelled: mpsc::UnboundedReceiver<&'static str>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Harness {
    async fn start() -> Harness {
        Harness::with_config(HttpConfig::new()).await
    }

    async fn with_config(config: HttpConfig) -> Harness {
        let (cancelled_tx, cancelled) = mpsc::unbounded_channel();
        let probes = Probes {
            cancelled: cancelled_tx,
            barrier: Arc::new(Barrier::new(3)),
        };
        let path = config.get_path().to_owned();
        let server = test_server(probes);
        let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server.clone(), config)
            .await
            .expect("bind 127.0.0.1:0");
        let addr = http.local_addr();
        assert!(addr.ip().is_loopback() && addr.port() != 0);
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(http.run_until(async {
            let _ = shutdown_rx.await;
        }));
        Harness {
            url: format!("http://{addr}{path}"),
            server,
            client: reqwest::Client::builder().timeout(WAIT).build().unwrap(),
            cancelled,
            shutdown: Some(shutdown_tx),
            task: Some(task),
        }
    }

    /// POSTs `body` with the given headers.
    async fn post(&self, headers: HeaderMap, body: impl Into<reqwest::Body>) -> reqwest::Response {
        self.client
            .post(&self.url)
            .headers(headers)
            .body(body)
            .send()
            .await
            .expect("request sent")
    }

    /// POSTs `body` with the headers a conforming client would send.
    /// `host:port` of the server, as a raw request's `Host` names it.
    fn addr(&self) -> &str {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
    }

    /// A bare TCP connection to the server, for requests written by hand.
    async fn connect_raw(&self) -> tokio::net::TcpStream {
        tokio::net::TcpStream::connect(self.addr()).await.unwrap()
    }

    async fn send(&self, body: &Value) -> reqwest::Response {
        self.post(headers_for(body), body.to_string()).await
    }

    /// POSTs `body` with the conforming headers changed by `edit`.
    async fn send_with(
        &self,
        body: &Value,
        edit: impl FnOnce(&mut HeaderMap),
    ) -> reqwest::Response {
        let mut headers = headers_for(body);
        edit(&mut headers);
        self.post(headers, body.to_string()).await
    }

    async fn stop(mut self) {
        let _ = self.shutdown.take().unwrap().send(());
        let result = tokio::time::timeout(WAIT, self.task.take().unwrap())
            .await
            .expect("server stops after shutdown");
        result.expect("server task").expect("server ran cleanly");
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "http-test", "version": "0"}
    })
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta()}
    })
}

fn call_with_progress(id: i64, tool: &str) -> Value {
    let mut body = call(id, tool, json!({}));
    body["params"]["_meta"]["progressToken"] = json!("tok");
    body
}

fn list(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": meta()}})
}

/// POSTs `body` to `url` with the headers a conforming client would send.
async fn post_to(client: &reqwest::Client, url: &str, body: &Value) -> reqwest::Response {
    client
        .post(url)
        .headers(headers_for(body))
        .body(body.to_string())
        .send()
        .await
        .expect("request sent")
}

fn set(headers: &mut HeaderMap, name: &str, value: &str) {
    headers.insert(
        HeaderName::from_bytes(name.as_bytes()).unwrap(),
        HeaderValue::from_str(value).unwrap(),
    );
}

fn remove(headers: &mut HeaderMap, name: &str) {
    headers.remove(name);
}

/// The headers a conforming client derives from the body (no Mcp-Param-*).
fn headers_for(body: &Value) -> HeaderMap {
    let mut headers = HeaderMap::new();
    set(&mut headers, "Content-Type", "application/json");
    set(
        &mut headers,
        "Accept",
        "application/json, text/event-stream",
    );
    if let Some(version) =
        body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str()
    {
        set(&mut headers, "MCP-Protocol-Version", version);
    }
    if let Some(method) = body["method"].as_str() {
        set(&mut headers, "Mcp-Method", method);
        let name = match method {
            "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
            "resources/read" => body["params"]["uri"].as_str(),
            _ => None,
        };
        if let Some(name) = name {
            set(&mut headers, "Mcp-Name", name);
        }
    }
    headers
}

/// Reads a JSON reply, checking its status and content type.
async fn json_reply(response: reqwest::Response, status: StatusCode) -> Value {
    assert_eq!(response.status(), status, "status");
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap()),
        Some("application/json")
    );
    assert!(response.headers().get("mcp-session-id").is_none());
    let body = tokio::time::timeout(WAIT, response.text())
        .await
        .unwrap()
        .unwrap();
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// Checks an error reply: status, code, and that the message names `needle`.
async fn expect_error(
    response: reqwest::Response,
    status: StatusCode,
    code: i64,
    needle: &str,
) -> Value {
    let reply = json_reply(response, status).await;
    assert_eq!(reply["error"]["code"], code, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(needle),
        "{message:?} should mention {needle:?}"
    );
    reply
}

async fn expect_header_mismatch(response: reqwest::Response, header: &str) -> Value {
    expect_error(response, StatusCode::BAD_REQUEST, -32020, header).await
}

/// The text of a successful tools/call reply.
async fn expect_text(response: reqwest::Response) -> String {
    let reply = json_reply(response, StatusCode::OK).await;
    assert!(reply.get("error").is_none(), "{reply}");
    assert_eq!(reply["result"]["isError"], Value::Null, "{reply}");
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Reads an SSE body to its end and returns the messages in order.
async fn sse_messages(response: reqwest::Response) -> Vec<Value> {
    let text = tokio::time::timeout(WAIT, response.text())
        .await
        .expect("the stream ends")
        .unwrap();
    parse_sse(&text)
}

/// Reads an SSE body until it holds `count` messages.
async fn read_messages<S>(stream: &mut S, text: &mut String, count: usize) -> Vec<Value>
where
    S: futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin,
{
    loop {
        let complete = &text[..text.rfind("\n\n").map_or(0, |end| end + 2)];
        let messages = parse_sse(complete);
        if messages.len() >= count {
            return messages;
        }
        let chunk = tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("another chunk")
            .expect("the stream is open")
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

fn parse_sse(text: &str) -> Vec<Value> {
    let mut messages = Vec::new();
    for event in text.split("\n\n").filter(|e| !e.trim().is_empty()) {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .collect();
        if data.is_empty() {
            assert!(
                event.lines().all(|l| l.starts_with(':')),
                "unexpected event {event:?}"
            );
            continue;
        }
        assert_eq!(data.len(), 1, "one data line per message: {event:?}");
        messages.push(serde_json::from_str(data[0]).unwrap());
    }
    messages
}

// ---------------------------------------------------------------------------
// Methods, Accept, Content-Type, framing

#[tokio::test]
async fn get_and_delete_without_a_session_are_405() {
    let h = Harness::start().await;
    for method in [
        reqwest::Method::GET,
        reqwest::Method::DELETE,
        reqwest::Method::PUT,
    ] {
        let response = h
            .client
            .request(method.clone(), &h.url)
            .header("Accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method}"
        );
        assert_eq!(response.headers()["allow"], "POST");
        assert!(response.headers().get("mcp-session-id").is_none());
    }
    // The server still answers.
    assert_eq!(
        expect_text(h.send(&call(1, "echo", json!({"text": "hi"}))).await).await,
        "hi"
    );
    h.stop().await;
}

#[tokio::test]
async fn accept_must_list_json_and_event_stream() {
    let h = Harness::start().await;
    let body = call(1, "echo", json!({"text": "hi"}));
    for accept in [
        None,
        Some("application/json"),
        Some("text/event-stream"),
        Some("*/*"),
    ] {
        let response = h
            .send_with(&body, |headers| match accept {
                Some(accept) => set(headers, "Accept", accept),
                None => remove(headers, "Accept"),
            })
            .await;
        expect_error(response, StatusCode::NOT_ACCEPTABLE, -32600, "Accept").await;
    }
    let response = h
        .send_with(&body, |headers| {
            set(
                headers,
                "Accept",
                "text/event-stream;q=0.9, application/json",
            )
        })
        .await;
    assert_eq!(expect_text(response).await, "hi");
    h.stop().await;
}

#[tokio::test]
async fn content_type_must_be_json() {
    let h = Harness::start().await;
    let body = call(1, "echo", json!({"text": "hi"}));
    let response = h
        .send_with(&body, |headers| set(headers, "Content-Type", "text/plain"))
        .await;
    expect_error(
        response,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        -32600,
        "Content-Type",
    )
    .await;
    let response = h
        .send_with(&body, |headers| {
            set(headers, "Content-Type", "application/json; charset=utf-8")
        })
        .await;
    assert_eq!(expect_text(response).await, "hi");
    h.stop().await;
}

#[tokio::test]
async fn notification_is_202_without_body() {
    let h = Harness::start().await;
    for body in [
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        json!({"jsonrpc": "2.0", "method": "notifications/whatever"}),
    ] {
        let response = h.send(&body).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        assert!(response.headers().get("mcp-session-id").is_none());
        assert_eq!(response.bytes().await.unwrap().len(), 0);
    }
    h.stop().await;
}

#[tokio::test]
async fn a_response_in_the_body_is_400() {
    let h = Harness::start().await;
    for body in [
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "x"}}),
    ] {
        let reply = expect_error(
            h.send(&body).await,
            StatusCode::BAD_REQUEST,
            -32600,
            "request or a notification",
        )
        .await;
        assert!(reply.get("id").is_none());
    }
    h.stop().await;
}

#[tokio::test]
async fn parse_error_is_400_32700() {
    let h = Harness::start().await;
    let mut headers = headers_for(&list(1));
    set(&mut headers, "Mcp-Method", "tools/list");
    let reply = expect_error(
        h.post(headers, "{not json").await,
        StatusCode::BAD_REQUEST,
        -32700,
        "Parse error",
    )
    .await;
    assert!(reply.get("id").is_none());
    let reply = expect_error(
        h.post(headers_for(&list(1)), "").await,
        StatusCode::BAD_REQUEST,
        -32700,
        "Parse error",
    )
    .await;
    assert!(reply.get("id").is_none());
    // JSON but not JSON-RPC: -32600, with the id when it could be read.
    let body = json!({"jsonrpc": "1.0", "id": 9, "method": "tools/list"});
    let reply = expect_error(
        h.send(&body).await,
        StatusCode::BAD_REQUEST,
        -32600,
        "jsonrpc",
    )
    .await;
    assert_eq!(reply["id"], 9);
    let reply = expect_error(
        h.send(&json!([1, 2])).await,
        StatusCode::BAD_REQUEST,
        -32600,
        "object",
    )
    .await;
    assert!(reply.get("id").is_none());
    // The server still answers.
    assert_eq!(
        expect_text(h.send(&call(2, "echo", json!({"text": "ok"}))).await).await,
        "ok"
    );
    h.stop().await;
}

#[tokio::test]
async fn body_over_the_limit_is_413() {
    let h = Harness::with_config(HttpConfig::new().max_body_bytes(1024)).await;
    let big = call(1, "echo", json!({"text": "x".repeat(2000)}));
    let reply = expect_error(
        h.send(&big).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        -32600,
        "1024 bytes",
    )
    .await;
    assert!(reply.get("id").is_none());
    // Without Content-Length (chunked), the limit still holds.
    let chunks: Vec<Result<String, std::io::Error>> = (0..4).map(|_| Ok(" ".repeat(400))).collect();
    let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
    let response = h.post(headers_for(&list(1)), body).await;
    expect_error(
        response,
        StatusCode::PAYLOAD_TOO_LARGE,
        -32600,
        "1024 bytes",
    )
    .await;
    // A body within the limit, sent in chunks, is read whole.
    let text = list(2).to_string();
    let (a, b) = text.split_at(10);
    let chunks: Vec<Result<String, std::io::Error>> = vec![Ok(a.to_owned()), Ok(b.to_owned())];
    let response = h
        .post(
            headers_for(&list(2)),
            reqwest::Body::wrap_stream(futures::stream::iter(chunks)),
        )
        .await;
    let reply = json_reply(response, StatusCode::OK).await;
    assert_eq!(reply["id"], 2);
    assert!(reply["result"]["tools"].is_array());
    h.stop().await;
}

// ---------------------------------------------------------------------------
// Replies: JSON and SSE

#[tokio::test]
async fn plain_request_gets_a_json_reply() {
    let h = Harness::start().await;
    let reply = json_reply(
        h.send(&call(7, "echo", json!({"text": "héllo"}))).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(reply["jsonrpc"], "2.0");
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["result"]["content"][0]["text"], "héllo");
    assert_eq!(reply["result"]["resultType"], "complete");
    let reply = json_reply(h.send(&list(8)).await, StatusCode::OK).await;
    assert_eq!(reply["result"]["tools"][0]["name"], "echo");
    h.stop().await;
}

#[tokio::test]
async fn progress_is_streamed_in_order_then_the_result() {
    let h = Harness::start().await;
    let mut body = call_with_progress(3, "steps");
    body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    let response = h.send(&body).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    assert!(response.headers().get("mcp-session-id").is_none());
    let messages = sse_messages(response).await;
    assert_eq!(messages.len(), 5, "{messages:#?}");
    for (i, message) in messages[..3].iter().enumerate() {
        assert_eq!(message["method"], "notifications/progress");
        assert_eq!(message["params"]["progressToken"], "tok");
        assert_eq!(message["params"]["progress"], json!((i + 1) as f64));
        assert_eq!(message["params"]["total"], json!(3.0));
        assert!(message.get("id").is_none());
    }
    assert_eq!(messages[3]["method"], "notifications/message");
    assert_eq!(messages[3]["params"]["data"], "all steps done");
    assert_eq!(messages[4]["id"], 3);
    assert_eq!(messages[4]["result"]["content"][0]["text"], "done");
    h.stop().await;
}

#[tokio::test]
async fn streamable_request_that_fails_early_gets_json_with_its_status() {
    let h = Harness::start().await;
    // Nothing was streamed before the error, so it comes as JSON with 400.
    let mut body = call_with_progress(4, "steps");
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
    let reply = expect_error(
        h.send(&body).await,
        StatusCode::BAD_REQUEST,
        -32022,
        "1999-01-01",
    )
    .await;
    assert_eq!(reply["error"]["data"]["supported"][0], VERSION);
    // A tool that sends no notification answers in JSON too.
    let mut body = call(5, "echo", json!({"text": "quiet"}));
    body["params"]["_meta"]["progressToken"] = json!(1);
    assert_eq!(expect_text(h.send(&body).await).await, "quiet");
    h.stop().await;
}

#[tokio::test]
async fn closing_the_stream_cancels_the_request() {
    let mut h = Harness::start().await;
    let response = h.send(&call_with_progress(1, "wait")).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut stream = response.bytes_stream();
    let first = tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("first event")
        .unwrap()
        .unwrap();
    let first = parse_sse(std::str::from_utf8(&first).unwrap());
    assert_eq!(first[0]["params"]["message"], "started");
    drop(stream);
    let seen = tokio::time::timeout(WAIT, h.cancelled.recv())
        .await
        .expect("the handler saw the cancellation");
    assert_eq!(seen, Some("wait"));
    // The server still answers.
    assert_eq!(
        expect_text(h.send(&call(2, "echo", json!({"text": "after"}))).await).await,
        "after"
    );
    h.stop().await;
}

#[tokio::test]
async fn giving_up_before_the_reply_cancels_the_request() {
    let mut h = Harness::start().await;
    let body = call_with_progress(1, "wait_quietly");
    let response = h
        .client
        .post(&h.url)
        .headers(headers_for(&body))
        .body(body.to_string())
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    assert!(response.unwrap_err().is_timeout());
    let seen = tokio::time::timeout(WAIT, h.cancelled.recv())
        .await
        .expect("the handler saw the cancellation");
    assert_eq!(seen, Some("wait_quietly"));
    h.stop().await;
}

#[tokio::test]
async fn three_concurrent_requests() {
    let h = Harness::start().await;
    let calls = (1..=3).map(|id| {
        let h = &h;
        async move { json_reply(h.send(&call(id, "meet", json!({}))).await, StatusCode::OK).await }
    });
    let replies = tokio::time::timeout(WAIT, futures::future::join_all(calls))
        .await
        .expect("the three calls ran at the same time");
    for (i, reply) in replies.iter().enumerate() {
        assert_eq!(reply["id"], json!(i + 1));
        assert_eq!(reply["result"]["content"][0]["text"], "met");
    }
    h.stop().await;
}

// ---------------------------------------------------------------------------
// Status mapping of dispatcher errors

#[tokio::test]
async fn unknown_method_is_404_32601() {
    let h = Harness::start().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "no/such", "params": {"_meta": meta()}});
    let reply = expect_error(
        h.send(&body).await,
        StatusCode::NOT_FOUND,
        -32601,
        "no/such",
    )
    .await;
    assert_eq!(reply["id"], 1);
    h.stop().await;
}

#[tokio::test]
async fn unsupported_version_is_400_32022() {
    let h = Harness::start().await;
    let mut body = list(1);
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let reply = expect_error(
        h.send(&body).await,
        StatusCode::BAD_REQUEST,
        -32022,
        "2025-11-25",
    )
    .await;
    assert_eq!(reply["error"]["data"]["requested"], "2025-11-25");
    h.stop().await;
}

#[tokio::test]
async fn bad_meta_is_400_32602_other_invalid_params_200() {
    let h = Harness::start().await;
    // No _meta at all: the header cannot be compared; the body is malformed.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let response = h
        .send_with(&body, |headers| {
            set(headers, "MCP-Protocol-Version", VERSION)
        })
        .await;
    expect_error(response, StatusCode::BAD_REQUEST, -32602, "params._meta").await;
    // _meta without clientCapabilities.
    let mut body = list(2);
    body["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    expect_error(
        h.send(&body).await,
        StatusCode::BAD_REQUEST,
        -32602,
        "clientCapabilities",
    )
    .await;
    // A malformed logLevel.
    let mut body = list(3);
    body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
    expect_error(
        h.send(&body).await,
        StatusCode::BAD_REQUEST,
        -32602,
        "logLevel",
    )
    .await;
    // An unknown tool is a -32602 about the method's own params: 200.
    expect_error(
        h.send(&call(4, "nope", json!({}))).await,
        StatusCode::OK,
        -32602,
        "nope",
    )
    .await;
    h.stop().await;
}

#[tokio::test]
async fn tool_errors_are_200_results() {
    let h = Harness::start().await;
    let reply = json_reply(
        h.send(&call(1, "echo", json!({"text": 5}))).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(reply["result"]["isError"], true);
    h.stop().await;
}

// ---------------------------------------------------------------------------
// Standard headers

#[tokio::test]
async fn protocol_version_header_is_required_and_must_match() {
    let h = Harness::start().await;
    let body = list(1);
    let response = h
        .send_with(&body, |headers| remove(headers, "MCP-Protocol-Version"))
        .await;
    let reply = expect_header_mismatch(response, "MCP-Protocol-Version").await;
    assert_eq!(reply["id"], 1);
    let response = h
        .send_with(&body, |headers| {
            set(headers, "MCP-Protocol-Version", "2025-06-18")
        })
        .await;
    let reply = expect_header_mismatch(response, "MCP-Protocol-Version").await;
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("2025-06-18") && message.contains(VERSION),
        "{message}"
    );
    // Values are case-sensitive; names are not.
    let mut headers = headers_for(&body);
    headers.remove("MCP-Protocol-Version");
    set(&mut headers, "mcp-protocol-version", VERSION);
    assert_eq!(
        h.post(headers, body.to_string()).await.status(),
        StatusCode::OK
    );
    h.stop().await;
}

#[tokio::test]
async fn mcp_method_header_is_required_and_must_match() {
    let h = Harness::start().await;
    let body = list(1);
    let response = h
        .send_with(&body, |headers| remove(headers, "Mcp-Method"))
        .await;
    expect_header_mismatch(response, "Mcp-Method").await;
    let response = h
        .send_with(&body, |headers| set(headers, "Mcp-Method", "tools/call"))
        .await;
    expect_header_mismatch(response, "Mcp-Method").await;
    let response = h
        .send_with(&body, |headers| set(headers, "Mcp-Method", "Tools/List"))
        .await;
    expect_header_mismatch(response, "Mcp-Method").await;
    // Sent twice: ambiguous, refused.
    let response = h
        .send_with(&body, |headers| {
            headers.append("mcp-method", HeaderValue::from_static("tools/list"));
        })
        .await;
    expect_header_mismatch(response, "Mcp-Method").await;
    assert_eq!(h.send(&body).await.status(), StatusCode::OK);
    h.stop().await;
}

#[tokio::test]
async fn mcp_name_header_is_required_and_must_match() {
    let h = Harness::start().await;
    let body = call(1, "echo", json!({"text": "hi"}));
    let response = h
        .send_with(&body, |headers| remove(headers, "Mcp-Name"))
        .await;
    expect_header_mismatch(response, "Mcp-Name").await;
    let response = h
        .send_with(&body, |headers| set(headers, "Mcp-Name", "sql"))
        .await;
    let reply = expect_header_mismatch(response, "Mcp-Name").await;
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("'sql'") && message.contains("'echo'"),
        "{message}"
    );
    let response = h
        .send_with(&body, |headers| set(headers, "Mcp-Name", "ECHO"))
        .await;
    expect_header_mismatch(response, "Mcp-Name").await;
    // Other methods that name something need it too.
    for (method, params) in [
        (
            "resources/read",
            json!({"uri": "file:///a.txt", "_meta": meta()}),
        ),
        ("prompts/get", json!({"name": "p", "_meta": meta()})),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
        let response = h
            .send_with(&body, |headers| remove(headers, "Mcp-Name"))
            .await;
        expect_header_mismatch(response, "Mcp-Name").await;
    }
    // Methods that name nothing do not.
    assert_eq!(h.send(&list(3)).await.status(), StatusCode::OK);
    h.stop().await;
}

#[tokio::test]
async fn mcp_name_is_trimmed_and_may_be_base64() {
    let h = Harness::start().await;
    let body = call(1, "echo", json!({"text": "hi"}));
    let response = h
        .send_with(&body, |headers| set(headers, "Mcp-Name", "  echo\t"))
        .await;
    assert_eq!(expect_text(response).await, "hi");
    // base64("echo")
    let response = h
        .send_with(&body, |headers| {
            set(headers, "Mcp-Name", "=?base64?ZWNobw==?=")
        })
        .await;
    assert_eq!(expect_text(response).await, "hi");
    // Bad padding, bad alphabet: malformed.
    for bad in ["=?base64?ZWNobw?=", "=?base64?ZW-obw==?="] {
        let response = h
            .send_with(&body, |headers| set(headers, "Mcp-Name", bad))
            .await;
        let reply = expect_header_mismatch(response, "Mcp-Name").await;
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("malformed")
        );
    }
    // Only partly like the sentinel: a literal, which does not match "echo".
    let response = h
        .send_with(&body, |headers| {
            set(headers, "Mcp-Name", "=?base64?ZWNobw==")
        })
        .await;
    expect_header_mismatch(response, "Mcp-Name").await;
    // Bytes outside visible ASCII must be encoded.
    let response = h
        .send_with(&body, |headers| {
            headers.insert(
                "mcp-name",
                HeaderValue::from_bytes("échö".as_bytes()).unwrap(),
            );
        })
        .await;
    expect_header_mismatch(response, "Mcp-Name").await;
    h.stop().await;
}

/// Header names are compared case-insensitively: sent raw, in odd case.
#[tokio::test]
async fn header_names_are_case_insensitive_on_the_wire() {
    let h = Harness::start().await;
    let addr = h.addr().to_owned();
    let body = call(1, "sql", json!({"region": "eu"})).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhOsT: {addr}\r\nCONTENT-TYPE: application/json\r\n\
         aCCePT: application/json, text/event-stream\r\nmcp-PROTOCOL-version: {VERSION}\r\n\
         MCP-METHOD: tools/call\r\nmcp-name: sql\r\nMCP-PARAM-REGION: eu\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = h.connect_raw().await;
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reply = String::new();
    tokio::time::timeout(WAIT, stream.read_to_string(&mut reply))
        .await
        .unwrap()
        .unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    assert!(reply.contains(r#"\"region\":\"eu\""#), "{reply}");
    h.stop().await;
}

#[tokio::test]
async fn session_and_last_event_id_are_ignored_and_never_echoed() {
    let h = Harness::start().await;
    let body = call(1, "echo", json!({"text": "hi"}));
    let response = h
        .send_with(&body, |headers| {
            set(headers, "Mcp-Session-Id", "session-123");
            set(headers, "Last-Event-ID", "42");
        })
        .await;
    assert!(response.headers().get("mcp-session-id").is_none());
    assert_eq!(expect_text(response).await, "hi");
    let response = h.send(&call_with_progress(2, "steps")).await;
    assert!(response.headers().get("mcp-session-id").is_none());
    // Three progress notifications, then the result (no logLevel: no log message).
    assert_eq!(sse_messages(response).await.len(), 4);
    h.stop().await;
}

// ---------------------------------------------------------------------------
// Mcp-Param-{Name}

async fn sql(
    h: &Harness,
    arguments: Value,
    edit: impl FnOnce(&mut HeaderMap),
) -> reqwest::Response {
    h.send_with(&call(1, "sql", arguments), edit).await
}

#[tokio::test]
async fn param_headers_match_string_integer_boolean_and_nested() {
    let h = Harness::start().await;
    let arguments = json!({"region": "us-west1", "limit": 42, "dry_run": true, "where": {"zone": "b"}, "query": "q"});
    let response = sql(&h, arguments.clone(), |headers| {
        set(headers, "Mcp-Param-Region", "us-west1");
        set(headers, "Mcp-Param-Limit", "42");
        set(headers, "Mcp-Param-Dry-Run", "true");
        set(headers, "mcp-param-zone", "b");
        set(headers, "Mcp-Param-Unknown", "ignored");
    })
    .await;
    let text = expect_text(response).await;
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), arguments);
    // Integers compare numerically.
    for header in ["42.0", "042"] {
        let response = sql(&h, json!({"limit": 42}), |headers| {
            set(headers, "Mcp-Param-Limit", header)
        })
        .await;
        expect_text(response).await;
    }
    let response = sql(&h, json!({"limit": 42.0}), |headers| {
        set(headers, "Mcp-Param-Limit", "42")
    })
    .await;
    expect_text(response).await;
    let response = sql(&h, json!({"limit": -7}), |headers| {
        set(headers, "Mcp-Param-Limit", "-7")
    })
    .await;
    expect_text(response).await;
    let response = sql(&h, json!({"dry_run": false}), |headers| {
        set(headers, "Mcp-Param-Dry-Run", "false")
    })
    .await;
    expect_text(response).await;
    h.stop().await;
}

#[tokio::test]
async fn param_header_mismatches_are_400_32020() {
    let h = Harness::start().await;
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"region": "us-west1"}),
            "Mcp-Param-Region",
            "US-WEST1",
        ),
        (json!({"region": "us-west1"}), "Mcp-Param-Region", "eu"),
        (json!({"limit": 42}), "Mcp-Param-Limit", "43"),
        (json!({"limit": 42}), "Mcp-Param-Limit", "42.5"),
        (json!({"limit": 42}), "Mcp-Param-Limit", "+42"),
        (json!({"limit": 42}), "Mcp-Param-Limit", "forty-two"),
        (json!({"dry_run": true}), "Mcp-Param-Dry-Run", "True"),
        (json!({"dry_run": true}), "Mcp-Param-Dry-Run", "1"),
        (json!({"dry_run": true}), "Mcp-Param-Dry-Run", "false"),
        (json!({"where": {"zone": "a"}}), "Mcp-Param-Zone", "b"),
    ];
    for (arguments, header, value) in cases {
        let response = sql(&h, arguments, |headers| set(headers, header, value)).await;
        let reply = expect_header_mismatch(response, header).await;
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("does not match"),
            "{reply}"
        );
    }
    h.stop().await;
}

#[tokio::test]
async fn param_header_base64_and_partial_sentinels() {
    let h = Harness::start().await;
    // base64("Hello, 世界") and base64(" padded ")
    for (value, encoded) in [
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ] {
        let response = sql(&h, json!({"region": value}), |headers| {
            set(headers, "Mcp-Param-Region", encoded)
        })
        .await;
        expect_text(response).await;
    }
    // A value that looks like the sentinel must be encoded; encoded, it matches.
    let response = sql(&h, json!({"region": "=?base64?literal?="}), |headers| {
        set(
            headers,
            "Mcp-Param-Region",
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
        )
    })
    .await;
    expect_text(response).await;
    // Only partly like the sentinel: taken literally.
    for literal in ["=?base64?abc", "abc?=", "=?BASE64?SGk=?="] {
        let response = sql(&h, json!({"region": literal}), |headers| {
            set(headers, "Mcp-Param-Region", literal)
        })
        .await;
        expect_text(response).await;
    }
    // Strict decoding: bad padding, bad alphabet, not UTF-8.
    for bad in ["=?base64?SGk?=", "=?base64?SG-_?=", "=?base64?/w==?="] {
        let response = sql(&h, json!({"region": "Hi"}), |headers| {
            set(headers, "Mcp-Param-Region", bad)
        })
        .await;
        let reply = expect_header_mismatch(response, "Mcp-Param-Region").await;
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("malformed"),
            "{reply}"
        );
    }
    // Raw bytes outside visible ASCII are invalid characters.
    let response = sql(&h, json!({"region": "Zürich"}), |headers| {
        headers.insert(
            "mcp-param-region",
            HeaderValue::from_bytes("Zürich".as_bytes()).unwrap(),
        );
    })
    .await;
    expect_header_mismatch(response, "Mcp-Param-Region").await;
    h.stop().await;
}

#[tokio::test]
async fn param_header_presence_rules() {
    let h = Harness::start().await;
    // Value in the body, header omitted: rejected.
    let response = sql(&h, json!({"region": "eu", "query": "q"}), |_| {}).await;
    let reply = expect_header_mismatch(response, "Mcp-Param-Region").await;
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("missing")
    );
    let response = sql(&h, json!({"where": {"zone": "a"}}), |_| {}).await;
    expect_header_mismatch(response, "Mcp-Param-Zone").await;
    // Parameter absent: no header expected.
    expect_text(sql(&h, json!({"query": "q"}), |_| {}).await).await;
    expect_text(sql(&h, json!({"where": {}}), |_| {}).await).await;
    // Parameter null: no header expected (the schema then rejects the value: a tool error).
    let reply = json_reply(
        sql(&h, json!({"region": null}), |_| {}).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    // A header with no value in the body is refused.
    let response = sql(&h, json!({"query": "q"}), |headers| {
        set(headers, "Mcp-Param-Region", "eu")
    })
    .await;
    let reply = expect_header_mismatch(response, "Mcp-Param-Region").await;
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("absent")
    );
    // No arguments at all.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "sql", "_meta": meta()}});
    expect_text(h.send(&body).await).await;
    h.stop().await;
}

// ---------------------------------------------------------------------------
// DNS-rebinding protection

#[tokio::test]
async fn foreign_host_or_origin_is_403() {
    let h = Harness::start().await;
    let body = call(1, "echo", json!({"text": "hi"}));
    let response = h
        .send_with(&body, |headers| set(headers, "Host", "evil.example"))
        .await;
    let reply = expect_error(response, StatusCode::FORBIDDEN, -32600, "Host").await;
    assert!(reply.get("id").is_none());
    let response = h
        .send_with(&body, |headers| set(headers, "Host", "127.0.0.2:80"))
        .await;
    expect_error(response, StatusCode::FORBIDDEN, -32600, "Host").await;
    for origin in [
        "https://evil.example",
        "null",
        "http://localhost.evil.example",
    ] {
        let response = h
            .send_with(&body, |headers| set(headers, "Origin", origin))
            .await;
        expect_error(response, StatusCode::FORBIDDEN, -32600, "Origin").await;
    }
    // A GET from a foreign page is refused before anything else.
    let response = h
        .client
        .get(&h.url)
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    // Loopback names, any port, are fine.
    for host in ["localhost", "localhost:1234", "127.0.0.1:9", "[::1]:8080"] {
        let response = h
            .send_with(&body, |headers| set(headers, "Host", host))
            .await;
        assert_eq!(expect_text(response).await, "hi", "{host}");
    }
    for origin in ["http://localhost:3000", "https://127.0.0.1", "http://[::1]"] {
        let response = h
            .send_with(&body, |headers| set(headers, "Origin", origin))
            .await;
        assert_eq!(expect_text(response).await, "hi", "{origin}");
    }
    h.stop().await;
}

#[tokio::test]
async fn allowed_hosts_and_origins_are_accepted() {
    let config = HttpConfig::new()
        .allow_host("mcp.example.com")
        .allow_origin("https://app.example.com");
    let h = Harness::with_config(config).await;
    let body = call(1, "echo", json!({"text": "hi"}));
    let response = h
        .send_with(&body, |headers| {
            set(headers, "Host", "mcp.example.com:443");
            set(headers, "Origin", "https://app.example.com");
        })
        .await;
    assert_eq!(expect_text(response).await, "hi");
    let response = h
        .send_with(&body, |headers| set(headers, "Host", "other.example.com"))
        .await;
    expect_error(response, StatusCode::FORBIDDEN, -32600, "Host").await;
    let response = h
        .send_with(&body, |headers| {
            set(headers, "Origin", "http://app.example.com")
        })
        .await;
    expect_error(response, StatusCode::FORBIDDEN, -32600, "Origin").await;
    h.stop().await;

    let h = Harness::with_config(HttpConfig::new().allow_any_host().allow_any_origin()).await;
    let response = h
        .send_with(&body, |headers| {
            set(headers, "Host", "anything.example");
            set(headers, "Origin", "https://anywhere.example");
        })
        .await;
    assert_eq!(expect_text(response).await, "hi");
    h.stop().await;
}

// ---------------------------------------------------------------------------
// Robustness, configuration, embedding

#[tokio::test]
async fn a_bad_request_then_a_good_one() {
    let h = Harness::start().await;
    let body = call(1, "echo", json!({"text": "hi"}));
    let response = h
        .send_with(&body, |headers| set(headers, "Mcp-Name", "sql"))
        .await;
    expect_header_mismatch(response, "Mcp-Name").await;
    let response = h.post(headers_for(&body), "{").await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(expect_text(h.send(&body).await).await, "hi");
    h.stop().await;
}

#[tokio::test]
async fn custom_path_and_keep_alive() {
    let config = HttpConfig::new()
        .path("rpc")
        .sse_keep_alive(Some(Duration::from_millis(20)));
    let mut h = Harness::with_config(config).await;
    assert!(h.url.ends_with("/rpc"));
    // Keep-alive comments on a quiet stream, ignored by the SSE parser.
    let response = h.send(&call_with_progress(1, "wait")).await;
    let mut stream = response.bytes_stream();
    let mut text = String::new();
    while !text.contains("\n:\n") {
        let chunk = tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("a chunk")
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert_eq!(parse_sse(&text)[0]["params"]["message"], "started");
    drop(stream);
    assert_eq!(
        tokio::time::timeout(WAIT, h.cancelled.recv())
            .await
            .unwrap(),
        Some("wait")
    );
    h.stop().await;
}

#[tokio::test]
async fn router_nests_in_an_app_and_takes_the_principal_from_extensions() {
    let (probe, _cancelled) = mpsc::unbounded_channel();
    let server = test_server(Probes {
        cancelled: probe,
        barrier: Arc::new(Barrier::new(3)),
    });
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .nest("/api", router(server, HttpConfig::new()))
        .layer(axum::Extension(Principal::new("alice")));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
    });
    let client = reqwest::Client::builder().timeout(WAIT).build().unwrap();
    let health = client
        .get(format!("http://{addr}/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.text().await.unwrap(), "ok");
    let body = call(1, "whoami", json!({}));
    let response = post_to(&client, &format!("http://{addr}/api/mcp"), &body).await;
    assert_eq!(expect_text(response).await, "alice");
    let _ = stop.send(());
    tokio::time::timeout(WAIT, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn anonymous_without_a_principal() {
    let h = Harness::start().await;
    assert_eq!(
        expect_text(h.send(&call(1, "whoami", json!({}))).await).await,
        "anonymous"
    );
    h.stop().await;
}

#[tokio::test]
async fn listen_streams_until_graceful_shutdown() {
    let mut h = Harness::start().await;
    let body = json!({
        "jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": meta()}
    });
    let response = h.send(&body).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    let mut stream = response.bytes_stream();
    let mut text = String::new();
    let messages = read_messages(&mut stream, &mut text, 1).await;
    assert_eq!(
        messages[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    h.server
        .add_tool(
            ToolBuilder::new("late").handler(|_: NoArgs, _cx: RequestContext| async { "late" }),
        )
        .unwrap();
    let messages = read_messages(&mut stream, &mut text, 2).await;
    assert_eq!(messages[1]["method"], "notifications/tools/list_changed");
    assert_eq!(
        messages[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub"
    );
    // Graceful shutdown ends the stream with the subscription's completion result.
    let _ = h.shutdown.take().unwrap().send(());
    let messages = read_messages(&mut stream, &mut text, 3).await;
    assert_eq!(messages[2]["id"], "sub");
    assert_eq!(messages[2]["result"]["resultType"], "complete");
    let end = tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("the stream ends");
    assert!(end.is_none(), "{end:?}");
    let result = tokio::time::timeout(WAIT, h.task.take().unwrap())
        .await
        .expect("the server stops");
    result.unwrap().unwrap();
}

#[tokio::test]
async fn closing_a_listen_stream_frees_the_subscription() {
    let h = Harness::start().await;
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": meta()}
    });
    let mut stream = h.send(&body).await.bytes_stream();
    let mut text = String::new();
    read_messages(&mut stream, &mut text, 1).await;
    assert_eq!(h.server.open_subscriptions(), 1);
    drop(stream);
    tokio::time::timeout(WAIT, async {
        while h.server.open_subscriptions() != 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the subscription is released");
    h.stop().await;
}

#[tokio::test]
async fn a_client_that_stalls_in_its_headers_is_disconnected() {
    let config = HttpConfig::new().header_read_timeout(Duration::from_millis(300));
    let harness = Harness::with_config(config).await;
    let mut stalled = harness.connect_raw().await;
    stalled
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let mut buffer = Vec::new();
    let read = tokio::time::timeout(WAIT, stalled.read_to_end(&mut buffer))
        .await
        .expect("the server closes the stalled connection");
    // Closed without a response (a reset counts as closed too).
    assert!(read.is_err() || buffer.is_empty(), "{buffer:?}");
    assert!(started.elapsed() >= Duration::from_millis(250));

    // Everyone else is still served.
    let response = harness.send(&list(2)).await;
    assert_eq!(response.status(), StatusCode::OK);
    harness.stop().await;
}

/// The head read timeout runs anew for each request of a keep-alive
/// connection (hyper's: from the end of the previous reply), whatever the
/// deadline of the request before.
#[tokio::test]
async fn each_request_head_of_a_connection_has_the_whole_header_read_timeout() {
    let config = HttpConfig::new().header_read_timeout(Duration::from_millis(300));
    let harness = Harness::with_config(config).await;
    let mut connection = harness.connect_raw().await;
    // The first head takes 200 of its 300 ms.
    connection
        .write_all(b"GET /mcp HTTP/1.1\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    connection
        .write_all(b"Host: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    while !reply.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(WAIT, connection.read(&mut chunk))
            .await
            .expect("a reply")
            .unwrap();
        assert!(n > 0, "closed before replying: {reply:?}");
        reply.extend_from_slice(&chunk[..n]);
    }
    let replied = std::time::Instant::now();
    assert!(
        reply.starts_with(b"HTTP/1.1 405 "),
        "{:?}",
        String::from_utf8_lossy(&reply)
    );
    // Then nothing more: the connection is closed 300 ms after the reply,
    // not when the first head's deadline passed (about 100 ms after it).
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(WAIT, connection.read_to_end(&mut rest))
        .await
        .expect("the server closes the idle connection");
    let waited = replied.elapsed();
    assert!(
        waited >= Duration::from_millis(250),
        "closed after {waited:?}"
    );
    harness.stop().await;
}

#[tokio::test]
async fn a_client_that_stalls_in_its_body_gets_408_and_is_disconnected() {
    let config = HttpConfig::new().body_read_timeout(Duration::from_millis(300));
    let harness = Harness::with_config(config).await;
    let mut stalled = harness.connect_raw().await;
    stalled
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\
              Accept: application/json, text/event-stream\r\n\
              Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let mut buffer = Vec::new();
    tokio::time::timeout(WAIT, stalled.read_to_end(&mut buffer))
        .await
        .expect("the server closes the stalled connection")
        .expect("the connection ends cleanly after the reply");
    assert!(started.elapsed() >= Duration::from_millis(250));
    let reply = String::from_utf8(buffer).unwrap();
    assert!(reply.starts_with("HTTP/1.1 408 "), "{reply}");
    assert!(reply.contains("connection: close"), "{reply}");
    let body = &reply[reply.find("\r\n\r\n").unwrap() + 4..];
    let body: Value = serde_json::from_str(body).unwrap();
    assert_eq!(
        body,
        json!({"jsonrpc": "2.0", "error": {"code": -32600,
            "message": "Invalid request: the request body did not arrive in full within 300 ms"}})
    );

    // Everyone else is still served.
    let response = harness.send(&list(2)).await;
    assert_eq!(response.status(), StatusCode::OK);
    harness.stop().await;
}

#[tokio::test]
async fn shutdown_closes_idle_keep_alive_connections() {
    let harness = Harness::start().await;
    // reqwest keeps the connection of this request open for the next one.
    let response = harness.send(&list(1)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let _ = response.bytes().await.unwrap();
    harness.stop().await;
}

#[tokio::test]
async fn serves_on_a_listener_bound_beforehand() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (cancelled, _) = mpsc::unbounded_channel();
    let probes = Probes {
        cancelled,
        barrier: Arc::new(Barrier::new(3)),
    };
    let http = HttpServer::from_listener(listener, test_server(probes), HttpConfig::new()).unwrap();
    assert_eq!(http.local_addr(), addr);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(http.run_until(async {
        let _ = stopped.await;
    }));
    let body = list(1);
    let response = post_to(
        &reqwest::Client::new(),
        &format!("http://{addr}/mcp"),
        &body,
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let reply: Value = response.json().await.unwrap();
    assert_eq!(reply["id"], 1);
    assert!(reply["result"]["tools"].is_array(), "{reply}");
    let _ = stop.send(());
    tokio::time::timeout(WAIT, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_mirrored_argument_of_the_wrong_type_is_an_argument_error_not_a_header_mismatch() {
    let h = Harness::start().await;
    let cases = [
        (
            json!({"region": 12345}),
            "Mcp-Param-Region",
            "12345",
            "/region: 12345 is not of type \"string\"",
        ),
        (
            json!({"limit": "42"}),
            "Mcp-Param-Limit",
            "42",
            "/limit: \"42\" is not of type \"integer\"",
        ),
        (
            json!({"dry_run": "true"}),
            "Mcp-Param-Dry-Run",
            "true",
            "/dry_run: \"true\" is not of type \"boolean\"",
        ),
    ];
    for (arguments, header, value, fault) in cases {
        let response = sql(&h, arguments, |headers| set(headers, header, value)).await;
        let reply = json_reply(response, StatusCode::OK).await;
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        assert_eq!(
            reply["result"]["content"],
            json!([{"type": "text", "text": format!("Invalid arguments for tool sql:\n{fault}")}])
        );
    }
    h.stop().await;
}

/// Every -32020 message is true as written: the values it quotes are the
/// ones sent, and they do differ.
#[tokio::test]
async fn header_mismatch_messages_say_exactly_what_differs() {
    let h = Harness::start().await;
    type EditHeaders = Box<dyn Fn(&mut HeaderMap)>;
    let cases: Vec<(Value, EditHeaders, &str)> = vec![
        (
            json!({"region": "us-west1"}),
            Box::new(|headers| set(headers, "Mcp-Param-Region", "eu")),
            "Header mismatch: Mcp-Param-Region header value 'eu' does not match body value 'us-west1'",
        ),
        (
            json!({"limit": 42}),
            Box::new(|headers| set(headers, "Mcp-Param-Limit", "43")),
            "Header mismatch: Mcp-Param-Limit header value '43' does not match body value '42'",
        ),
        (
            json!({"dry_run": true}),
            Box::new(|headers| set(headers, "Mcp-Param-Dry-Run", "false")),
            "Header mismatch: Mcp-Param-Dry-Run header value 'false' does not match body value 'true'",
        ),
        (
            json!({"region": "us-west1"}),
            Box::new(|headers| remove(headers, "Mcp-Param-Region")),
            "Header mismatch: required header Mcp-Param-Region is missing (argument /region is present in the body)",
        ),
        (
            json!({}),
            Box::new(|headers| set(headers, "Mcp-Param-Region", "eu")),
            "Header mismatch: Mcp-Param-Region header value 'eu' has no body value to match (argument /region is absent or null)",
        ),
        (
            json!({"region": "us-west1"}),
            Box::new(|headers| {
                set(headers, "Mcp-Param-Region", "us-west1");
                set(headers, "Mcp-Method", "tools/list");
            }),
            "Header mismatch: Mcp-Method header value 'tools/list' does not match body value 'tools/call'",
        ),
        (
            json!({"region": "us-west1"}),
            Box::new(|headers| {
                set(headers, "Mcp-Param-Region", "us-west1");
                set(headers, "Mcp-Name", "echo");
            }),
            "Header mismatch: Mcp-Name header value 'echo' does not match body value 'sql'",
        ),
        (
            json!({"region": "us-west1"}),
            Box::new(|headers| {
                set(headers, "Mcp-Param-Region", "us-west1");
                remove(headers, "Mcp-Method");
            }),
            "Header mismatch: required header Mcp-Method is missing",
        ),
    ];
    for (arguments, edit, expected) in cases {
        let response = sql(&h, arguments, |headers| edit(headers)).await;
        let reply = json_reply(response, StatusCode::BAD_REQUEST).await;
        assert_eq!(reply["error"]["code"], -32020, "{reply}");
        assert_eq!(reply["error"]["message"], expected, "{reply}");
    }
    h.stop().await;
}

#[tokio::test]
async fn routes_added_beside_the_endpoint_share_its_listener() {
    let server = Server::builder("beside", "1").build().unwrap();
    let page = axum::Router::new().route("/healthz", axum::routing::get(|| async { "fine" }));
    let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server, HttpConfig::new())
        .await
        .unwrap()
        .with_routes(page);
    let base = format!("http://{}", http.local_addr());
    let task = tokio::spawn(http.run());
    let client = reqwest::Client::new();
    let page = client.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.text().await.unwrap(), "fine");
    let listed = post_to(&client, &format!("{base}/mcp"), &list(1)).await;
    let reply = json_reply(listed, StatusCode::OK).await;
    assert_eq!(reply["result"]["tools"], json!([]), "{reply}");
    let missing = client.get(format!("{base}/nothing")).send().await.unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    task.abort();
}
