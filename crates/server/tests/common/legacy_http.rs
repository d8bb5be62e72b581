//! A legacy (2025-11-25) HTTP endpoint on 127.0.0.1:0 and a client for it:
//! sessions opened with `initialize`, POSTs under `Mcp-Session-Id`, and SSE
//! replies read one event at a time.

use std::time::Duration;

use serde_json::{Value, json};
use toolwire_server::http::{HttpConfig, HttpServer, SessionTable};
use toolwire_server::protocol::{ElicitAction, LoggingLevel};
use toolwire_server::{NoArgs, RequestContext, Server, ServerBuilder, ToolBuilder, ToolError};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

/// Asks the client to confirm, and says what it answered.
pub async fn confirm(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let schema =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let answer = cx.elicit_form("confirm", "Go ahead?", schema)?;
    Ok(match answer.action {
        ElicitAction::Accept => format!("accepted {}", json!(answer.content)),
        other => format!("{}", json!(other)),
    })
}

/// Tools echo, confirm (an elicitation) and reconnect (closes its stream
/// mid-call), and the resource test://watched.
pub fn builder() -> ServerBuilder {
    Server::builder("legacy-http", "1.0.0")
        .tool(
            ToolBuilder::new("echo")
                .handler(|args: EchoArgs, _cx: RequestContext| async move { args.text }),
        )
        .tool(ToolBuilder::new("confirm").handler(confirm))
        .tool(
            ToolBuilder::new("reconnect").handler(|_: NoArgs, cx: RequestContext| async move {
                cx.log(LoggingLevel::Info, None, "closing").await;
                cx.close_stream();
                tokio::time::sleep(Duration::from_millis(100)).await;
                "resumed"
            }),
        )
        .resource(
            toolwire_server::ResourceBuilder::new("test://watched", "watched").handler(
                |req: toolwire_server::ReadRequest, _cx: RequestContext| async move {
                    Ok(vec![toolwire_server::text_contents(
                        req.uri,
                        "text/plain",
                        "x",
                    )])
                },
            ),
        )
}

/// A server on 127.0.0.1:0 with `config`, its session table, and a
/// [`LegacyClient`] for it (its methods are the endpoint's).
pub struct Endpoint {
    pub sessions: SessionTable,
    client: LegacyClient,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl std::ops::Deref for Endpoint {
    type Target = LegacyClient;

    fn deref(&self) -> &LegacyClient {
        &self.client
    }
}

impl Endpoint {
    pub async fn start(server: Server, config: HttpConfig) -> Endpoint {
        let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server, config)
            .await
            .unwrap();
        let url = format!("http://{}/mcp", http.local_addr());
        let sessions = http.sessions().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(http.run_until(async {
            let _ = stopped.await;
        }));
        Endpoint {
            sessions,
            client: LegacyClient::new(url),
            stop: Some(stop),
            task,
        }
    }

    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("shutdown within 10 s")
            .unwrap()
            .unwrap();
    }
}

/// A 2025-11-25 client of the endpoint at `url`.
pub struct LegacyClient {
    pub url: String,
    pub client: reqwest::Client,
}

impl LegacyClient {
    pub fn new(url: String) -> LegacyClient {
        LegacyClient {
            url,
            client: reqwest::Client::new(),
        }
    }

    /// `GET` of session `id`: its standalone stream.
    pub fn standalone(&self, id: &str) -> reqwest::RequestBuilder {
        self.client
            .get(&self.url)
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", id)
            .header("MCP-Protocol-Version", "2025-11-25")
    }

    /// `DELETE` of session `id`.
    pub fn delete(&self, id: &str) -> reqwest::RequestBuilder {
        self.client
            .delete(&self.url)
            .header("Mcp-Session-Id", id)
            .header("MCP-Protocol-Version", "2025-11-25")
    }

    pub fn post(&self, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let mut post = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .json(body);
        if let Some(id) = session {
            post = post
                .header("Mcp-Session-Id", id)
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        post
    }

    /// Opens a session (initialize + initialized); returns its id.
    pub async fn open(&self, token: Option<&str>) -> String {
        let mut post = self.post(None, &initialize(1));
        if let Some(token) = token {
            post = post.bearer_auth(token);
        }
        let response = post.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["result"]["protocolVersion"], "2025-11-25", "{body}");
        let mut post = self.post(
            Some(&id),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        if let Some(token) = token {
            post = post.bearer_auth(token);
        }
        assert_eq!(post.send().await.unwrap().status(), 202);
        id
    }

    /// POSTs a request of session `id`; the status and the JSON reply.
    pub async fn call(&self, id: &str, body: &Value) -> (u16, Value) {
        let response = self.post(Some(id), body).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }
}

pub fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "legacy-http-test", "version": "1"}
    }})
}

pub fn legacy(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// `tools/call echo` with `text`, as request `id`.
pub fn echo(id: i64, text: &str) -> Value {
    legacy(
        id,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": text}}),
    )
}

/// The legacy result of [`echo`].
pub fn echoed(id: i64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
}

/// One SSE event: its id, retry and data lines.
#[derive(Debug, Default, PartialEq)]
pub struct Event {
    pub id: Option<String>,
    pub retry: Option<String>,
    pub data: String,
}

/// Reads SSE events from a response, one at a time.
pub struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    pub fn new(response: reqwest::Response) -> Events {
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Events {
            response,
            buffer: String::new(),
        }
    }

    /// The next event (keep-alive comments skipped); `None` at the end.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = Event::default();
                let mut any = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        event.id = Some(v.to_owned());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("retry: ") {
                        event.retry = Some(v.to_owned());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("data:") {
                        event.data.push_str(v.trim_start());
                        any = true;
                    }
                }
                if any {
                    return Some(event);
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(5), self.response.chunk())
                .await
                .expect("an event within 5 s")
                .unwrap()?;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    pub async fn message(&mut self) -> Value {
        let event = self.next().await.expect("another event");
        serde_json::from_str(&event.data).unwrap_or_else(|e| panic!("{e}: {event:?}"))
    }
}
