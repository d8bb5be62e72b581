//! Shared test fixtures: our own server over an in-process pipe or real HTTP,
//! and scripted fake servers for behaviour our server never shows.
#![allow(dead_code)]

pub mod legacy_fake;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, split};
use tokio_util::codec::{FramedRead, LinesCodec};
use toolwire_client::Client;
use toolwire_client::transport::{Connection, HttpTransport, ProtocolMode, StdioTransport};
use toolwire_protocol::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, JsonObject, ListRootsResult,
    LoggingLevel, Message, Request, ResultResponse, Role, SamplingContent, SamplingMessage,
    TextContent, ToolAnnotations,
};
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::stdio::StdioConfig;
use toolwire_server::{
    InputRequired, NoArgs, PromptBuilder, RequestContext, ResourceBuilder, Server, Structured,
    ToolBuilder, ToolError, text_contents,
};

#[derive(Deserialize, JsonSchema)]
pub struct EchoArgs {
    pub text: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct AddArgs {
    pub a: i64,
    pub b: i64,
}

#[derive(serde::Serialize, JsonSchema)]
pub struct Sum {
    pub total: i64,
}

#[derive(Deserialize, JsonSchema)]
pub struct SleepArgs {
    pub ms: u64,
}

/// Our own server with one tool per behaviour under test.
pub fn demo_server() -> Server {
    demo_builder().build().expect("valid demo server")
}

pub fn demo_builder() -> toolwire_server::ServerBuilder {
    Server::builder("demo", "1.0.0")
        .page_size(2)
        .tool(
            ToolBuilder::new("echo")
                .handler(|a: EchoArgs, _cx: RequestContext| async move { a.text }),
        )
        .tool(
            ToolBuilder::new("add")
                .annotations(ToolAnnotations {
                    read_only_hint: Some(true),
                    ..Default::default()
                })
                .handler(|a: AddArgs, _cx: RequestContext| async move {
                    Structured(Sum { total: a.a + a.b })
                }),
        )
        .tool(
            ToolBuilder::new("fail").handler(|_: NoArgs, _cx: RequestContext| async {
                Err::<String, _>(ToolError::new("it broke"))
            }),
        )
        .tool(
            ToolBuilder::new("sleep").handler(|a: SleepArgs, cx: RequestContext| async move {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(a.ms)) => "slept".to_owned(),
                    _ = cx.cancellation().cancelled() => "cancelled".to_owned(),
                }
            }),
        )
        .tool(ToolBuilder::new("progress").handler(progress_tool))
        .tool(ToolBuilder::new("region").raw_handler(
            object(json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "query": {"type": "string"}
            }, "required": ["query"]})),
            |args: JsonObject, _cx: RequestContext| async move {
                format!(
                    "ran in {}",
                    args.get("region")
                        .and_then(Value::as_str)
                        .unwrap_or("default")
                )
            },
        ))
        .tool(ToolBuilder::new("confirm").handler(confirm_tool))
        .tool(ToolBuilder::new("ask_all").handler(ask_all_tool))
        .tool(
            ToolBuilder::new("nag").handler(|_: NoArgs, cx: RequestContext| async move {
                // Asks again every round: a client must give up at some point.
                let round: u32 = cx.state().unwrap_or(0);
                Err::<String, ToolError>(
                    toolwire_server::InputRequired::new()
                        .list_roots(format!("roots{round}"))
                        .with_state(&(round + 1))
                        .into(),
                )
            }),
        )
        .resource(
            ResourceBuilder::new("test://greeting", "greeting").handler(|_req, _cx| async {
                Ok(vec![text_contents(
                    "test://greeting",
                    "text/plain",
                    "hello",
                )])
            }),
        )
        .prompt(
            PromptBuilder::new("review")
                .argument("code", "the code", true)
                .complete("code", |typed: String, _ctx| async move {
                    vec![format!("{typed}1"), format!("{typed}2")]
                })
                .handler(|args, _cx| async move {
                    Ok(vec![toolwire_protocol::PromptMessage::text(
                        Role::User,
                        format!("Review: {}", args["code"]),
                    )])
                }),
        )
}

async fn progress_tool(_: NoArgs, cx: RequestContext) -> String {
    for step in 1..=3 {
        cx.progress(step as f64, Some(3.0), Some("working")).await;
        cx.log(
            LoggingLevel::Info,
            Some("demo"),
            json!(format!("step {step}")),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    "done".into()
}

async fn confirm_tool(a: EchoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let schema =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let answer = cx.elicit_form("confirm", &format!("Really {}?", a.text), schema)?;
    let ok = answer.action == ElicitAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|c| c.get("ok"))
            .and_then(|v| v.as_bool())
            == Some(true);
    Ok(format!(
        "{}: {}",
        a.text,
        if ok { "confirmed" } else { "refused" }
    ))
}

/// Round 1 asks for roots and a sample; round 2 asks for a form.
async fn ask_all_tool(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let params = CreateMessageRequestParams::new(
        vec![SamplingMessage::new(
            Role::User,
            SamplingContent::Text(TextContent {
                text: "capital of France?".into(),
                ..Default::default()
            }),
        )],
        10,
    );
    let roots = cx.answer::<ListRootsResult>("roots")?;
    let sample = cx.answer::<CreateMessageResult>("capital")?;
    let (Some(roots), Some(sample)) = (roots, sample) else {
        return Err(InputRequired::new()
            .list_roots("roots")
            .sample("capital", params)
            .into());
    };
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let name = cx.elicit_form("name", "Your name?", schema)?;
    let name = name
        .content
        .and_then(|c| c.get("name").and_then(|v| v.as_str().map(str::to_owned)))
        .unwrap_or_default();
    let answer = serde_json::to_value(&sample.content).unwrap_or_default();
    Ok(format!(
        "roots={} sample={} name={}",
        roots
            .roots
            .iter()
            .map(|r| r.uri.as_str())
            .collect::<Vec<_>>()
            .join(","),
        answer,
        name
    ))
}

pub fn object(value: Value) -> JsonObject {
    value.as_object().cloned().expect("an object")
}

/// A stdio transport to `server` running in this process over a pipe; every
/// (re)connect starts a fresh serving task.
pub fn pipe_transport(server: Server) -> StdioTransport {
    pipe_builder(server).build()
}

/// A stdio transport builder to `server` running in this process over a
/// pipe (set the era, probe timeout, ... before `build`).
pub fn pipe_builder(server: Server) -> toolwire_client::transport::StdioTransportBuilder {
    StdioTransport::from_fn("in-process demo", move || {
        let server = server.clone();
        async move {
            let (client_end, server_end) = tokio::io::duplex(1 << 20);
            let (server_read, server_write) = split(server_end);
            tokio::spawn(toolwire_server::stdio::serve(
                server,
                server_read,
                server_write,
                StdioConfig::default(),
            ));
            let (read, write) = split(client_end);
            Ok(Connection::new(read, write))
        }
    })
}

/// Our server on a real HTTP endpoint on 127.0.0.1; returns its URL.
pub async fn http_server(server: Server) -> String {
    let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server, HttpConfig::new())
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", http.local_addr());
    tokio::spawn(http.run());
    url
}

/// Both transports to the same server, for tests that must hold on each.
pub async fn both(server: Server) -> Vec<(&'static str, Client)> {
    let url = http_server(server.clone()).await;
    vec![
        (
            "stdio",
            Client::builder(pipe_transport(server)).name("demo").build(),
        ),
        (
            "http",
            Client::builder(HttpTransport::new(url).unwrap())
                .name("demo")
                .build(),
        ),
    ]
}

/// What a scripted fake server does with one request: the messages it
/// sends back (notifications first, then the response).
pub type Script = Arc<dyn Fn(&Request) -> Vec<Message> + Send + Sync>;

/// Requests (and, on HTTP, their headers) a fake server received.
#[derive(Debug, Clone, Default)]
pub struct Received(pub Arc<Mutex<Vec<(Request, Headers)>>>);

/// Header name/value pairs as received.
pub type Headers = Vec<(String, String)>;

impl Received {
    pub fn requests(&self) -> Vec<Request> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(r, _)| r.clone())
            .collect()
    }

    pub fn headers(&self) -> Vec<Vec<(String, String)>> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, h)| h.clone())
            .collect()
    }

    pub fn methods(&self) -> Vec<String> {
        self.requests().into_iter().map(|r| r.method).collect()
    }

    fn push(&self, request: Request, headers: Vec<(String, String)>) {
        self.0.lock().unwrap().push((request, headers));
    }
}

/// A successful response with `result`.
pub fn reply(request: &Request, result: Value) -> Message {
    Message::Result(ResultResponse::new(request.id.clone(), object(result)))
}

/// A fake stdio server in this process, answering with `script`. It plays
/// a 2026-07-28 server, so the transport is told so (no discover probe).
pub fn fake_stdio(script: Script) -> (StdioTransport, Received) {
    let received = Received::default();
    let log = received.clone();
    let transport = StdioTransport::from_fn("fake stdio", move || {
        let script = Arc::clone(&script);
        let log = log.clone();
        async move {
            let (client_end, server_end) = tokio::io::duplex(1 << 20);
            let (server_read, mut server_write) = split(server_end);
            tokio::spawn(async move {
                let mut lines = FramedRead::new(server_read, LinesCodec::new());
                while let Some(Ok(line)) = lines.next().await {
                    let Ok(Message::Request(request)) = Message::from_slice(line.as_bytes()) else {
                        continue;
                    };
                    log.push(request.clone(), Vec::new());
                    for message in script(&request) {
                        let mut bytes = serde_json::to_vec(&message).unwrap();
                        bytes.push(b'\n');
                        if server_write.write_all(&bytes).await.is_err() {
                            return;
                        }
                    }
                }
            });
            let (read, write) = split(client_end);
            Ok(Connection::new(read, write))
        }
    })
    .protocol(ProtocolMode::Modern)
    .build();
    (transport, received)
}

/// A fake HTTP server answering with `script`: one message as JSON, several
/// as an SSE stream. Returns its URL.
pub async fn fake_http(script: Script) -> (String, Received) {
    let received = Received::default();
    let log = received.clone();
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let script = Arc::clone(&script);
            let log = log.clone();
            async move {
                let Ok(Message::Request(request)) = Message::from_slice(&body) else {
                    return Response::builder()
                        .status(StatusCode::ACCEPTED)
                        .body(Body::empty())
                        .unwrap();
                };
                let pairs = headers
                    .iter()
                    .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                    .collect();
                log.push(request.clone(), pairs);
                let messages = script(&request);
                if messages.len() == 1 {
                    return Response::builder()
                        .header("content-type", "application/json")
                        .body(Body::from(serde_json::to_vec(&messages[0]).unwrap()))
                        .unwrap();
                }
                let mut body = String::from(": keep-alive\n\n");
                for m in messages {
                    body.push_str(&format!(
                        "event: message\ndata: {}\n\n",
                        serde_json::to_string(&m).unwrap()
                    ));
                }
                Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(Body::from(body))
                    .unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

/// The `_meta` of a received request.
pub fn meta_of(request: &Request) -> Value {
    request
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The tracing output of the whole test binary (a global subscriber, so
/// concurrent tests cannot race on callsite interest). Search it for markers
/// unique to your test.
pub fn capture_logs() -> LogBuffer {
    static BUFFER: std::sync::OnceLock<LogBuffer> = std::sync::OnceLock::new();
    BUFFER
        .get_or_init(|| {
            let buffer = LogBuffer::default();
            let writer = buffer.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_writer(move || writer.clone())
                .with_ansi(false)
                .with_max_level(tracing::Level::TRACE)
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
            buffer
        })
        .clone()
}

/// Captured log text.
#[derive(Debug, Clone, Default)]
pub struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl LogBuffer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Clients of `server` over both transports, forced to `mode`.
pub async fn both_in(server: Server, mode: ProtocolMode) -> Vec<(&'static str, Client)> {
    let url = http_server(server.clone()).await;
    let stdio = pipe_builder(server).protocol(mode).build();
    let http = HttpTransport::builder(url).protocol(mode).build().unwrap();
    vec![
        ("stdio", Client::builder(stdio).name("demo").build()),
        ("http", Client::builder(http).name("demo").build()),
    ]
}
