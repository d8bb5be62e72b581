//! Helpers shared by the `security_*` tests: a real HTTP endpoint on
//! 127.0.0.1:0 and a client that sends what a conforming client sends.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use toolwire_server::Server;
use toolwire_server::http::{HttpConfig, HttpServer};

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(10);

pub const VERSION: &str = "2026-07-28";

/// A running endpoint.
pub struct Endpoint {
    pub base: String,
    pub url: String,
    pub server: Server,
    client: reqwest::Client,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

/// One HTTP reply, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Reply {
    /// A header's value as text, or "".
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The `result` of a JSON-RPC reply (panics on anything else).
    pub fn result(&self) -> &Value {
        assert_eq!(self.status, StatusCode::OK, "{}", self.text);
        assert!(self.body.get("error").is_none(), "{}", self.text);
        &self.body["result"]
    }

    /// The text of a tool result's first block.
    pub fn text0(&self) -> &str {
        self.result()["content"][0]["text"].as_str().unwrap_or("")
    }

    /// True when the reply is a tool execution error.
    pub fn is_tool_error(&self) -> bool {
        self.result()["isError"] == json!(true)
    }
}

impl Endpoint {
    pub async fn start(server: Server, config: HttpConfig) -> Endpoint {
        let path = config.get_path().to_owned();
        let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server.clone(), config)
            .await
            .expect("bind 127.0.0.1:0");
        let addr = http.local_addr();
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(http.run_until(async {
            let _ = shutdown_rx.await;
        }));
        Endpoint {
            base: format!("http://{addr}"),
            url: format!("http://{addr}{path}"),
            server,
            client: reqwest::Client::builder().timeout(WAIT).build().unwrap(),
            shutdown: Some(shutdown_tx),
            task: Some(task),
        }
    }

    /// POSTs `body` with conforming headers, a bearer token when given, and
    /// any extra headers.
    pub async fn post_with(
        &self,
        token: Option<&str>,
        body: &Value,
        extra: &[(&str, &str)],
    ) -> Reply {
        let mut request = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(version) =
            body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str()
        {
            request = request.header("MCP-Protocol-Version", version);
        }
        if let Some(method) = body["method"].as_str() {
            request = request.header("Mcp-Method", method);
            let name = match method {
                "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
                "resources/read" => body["params"]["uri"].as_str(),
                _ => None,
            };
            if let Some(name) = name {
                request = request.header("Mcp-Name", name);
            }
        }
        if let Some(token) = token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        let response = request
            .body(body.to_string())
            .send()
            .await
            .expect("request sent");
        read(response).await
    }

    pub async fn post(&self, token: Option<&str>, body: &Value) -> Reply {
        self.post_with(token, body, &[]).await
    }

    /// GETs `path` on the same host.
    pub async fn get(&self, path: &str) -> Reply {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("request sent");
        read(response).await
    }

    pub async fn call_tool(&self, token: Option<&str>, name: &str, arguments: Value) -> Reply {
        self.post(token, &call(1, name, arguments)).await
    }

    pub async fn list_tools(&self, token: Option<&str>) -> Reply {
        self.post(token, &request(1, "tools/list", json!({}))).await
    }

    pub async fn stop(mut self) {
        let _ = self.shutdown.take().unwrap().send(());
        let result = tokio::time::timeout(WAIT, self.task.take().unwrap())
            .await
            .expect("server stops after shutdown");
        result.expect("server task").expect("server ran cleanly");
    }
}

async fn read(response: reqwest::Response) -> Reply {
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body read");
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
        text,
    }
}

pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "security-test", "version": "0"}
    })
}

/// A request body with `params` plus good `_meta`.
pub fn request(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub fn call(id: i64, tool: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// The names in a `tools/list` (or prompts/resources) result.
pub fn names(list: &Value, field: &str, key: &str) -> Vec<String> {
    list[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[key].as_str().unwrap().to_owned())
        .collect()
}

// ---------------------------------------------------------------------------
// Capturing audit events

/// One captured `tracing` event: its target and fields as text.
#[derive(Debug, Clone)]
pub struct Event {
    pub target: String,
    pub fields: std::collections::BTreeMap<String, String>,
}

impl Event {
    pub fn field(&self, name: &str) -> &str {
        self.fields.get(name).map(String::as_str).unwrap_or("")
    }
}

#[derive(Clone, Default)]
pub struct Captured(pub Arc<Mutex<Vec<Event>>>);

impl Captured {
    /// The audit events seen so far.
    pub fn audit(&self) -> Vec<Event> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.target == "toolwire::audit")
            .cloned()
            .collect()
    }

    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

struct Visitor<'a>(&'a mut std::collections::BTreeMap<String, String>);

impl tracing::field::Visit for Visitor<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Captured {
    fn on_event(&self, event: &tracing::Event<'_>, _cx: tracing_subscriber::layer::Context<'_, S>) {
        let mut fields = std::collections::BTreeMap::new();
        event.record(&mut Visitor(&mut fields));
        self.0.lock().unwrap().push(Event {
            target: event.metadata().target().to_owned(),
            fields,
        });
    }
}

/// Captures events on this thread until the guard drops (tests run on a
/// current-thread runtime, so the server's tasks are seen too).
pub fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    use tracing_subscriber::layer::SubscriberExt;
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(captured.clone());
    let guard = tracing::subscriber::set_default(subscriber);
    (captured, guard)
}
