//! Helpers shared by the server's integration tests.
#![allow(dead_code)]

pub mod legacy_http;

use serde_json::{Value, json};
use toolwire_protocol::{JsonObject, Message, Request};
use toolwire_server::{RequestEnv, Server};

/// The `_meta` a well-behaved 2026-07-28 client sends.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"}
    })
}

/// A request with the given params plus good `_meta`.
pub fn request(id: i64, method: &str, params: Value) -> Request {
    let mut params = as_object(params);
    params.entry("_meta").or_insert_with(meta);
    Request::new(id, method, Some(params))
}

/// A request whose params are exactly as given (no `_meta` added).
pub fn raw_request(id: i64, method: &str, params: Option<Value>) -> Request {
    Request::new(id, method, params.map(as_object))
}

pub fn as_object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("expected an object, got {other}"),
    }
}

/// Sends a request with no transport and returns the response as JSON.
pub async fn call(server: &Server, request: Request) -> Value {
    let response = server.handle_request(request, RequestEnv::new()).await;
    serde_json::to_value(response).unwrap()
}

/// The `result` of a response, panicking on an error response.
pub async fn result(server: &Server, request: Request) -> Value {
    let response = call(server, request).await;
    assert!(
        response.get("error").is_none(),
        "unexpected error: {response}"
    );
    response["result"].clone()
}

/// The `error` of a response, panicking on a result.
pub async fn error(server: &Server, request: Request) -> Value {
    let response = call(server, request).await;
    assert!(
        response.get("result").is_none(),
        "unexpected result: {response}"
    );
    response["error"].clone()
}

/// Reads a message as JSON.
pub fn json_of(message: &Message) -> Value {
    serde_json::to_value(message).unwrap()
}

/// A server on 127.0.0.1:0 over Streamable HTTP with the default
/// configuration, until [`ServedHttp::stop`].
pub struct ServedHttp {
    pub url: String,
    client: reqwest::Client,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl ServedHttp {
    pub async fn start(server: Server) -> ServedHttp {
        let addr = "127.0.0.1:0".parse().unwrap();
        let config = toolwire_server::http::HttpConfig::new();
        let http = toolwire_server::http::HttpServer::bind(addr, server, config)
            .await
            .expect("bind 127.0.0.1:0");
        let url = format!("http://{}/mcp", http.local_addr());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(http.run_until(async {
            let _ = stopped.await;
        }));
        ServedHttp {
            url,
            client: reqwest::Client::new(),
            stop,
            task,
        }
    }

    /// POSTs `request` with the headers a conforming client sends; returns
    /// the status and the body as sent.
    pub async fn post(&self, request: &Request) -> (u16, String) {
        let mut post = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", &request.method);
        let params = request.params.as_ref();
        if let Some(Value::String(name)) = params.and_then(|p| p.get("name").or(p.get("uri"))) {
            post = post.header("Mcp-Name", name);
        }
        let response = post
            .body(serde_json::to_vec(request).unwrap())
            .send()
            .await
            .expect("request sent");
        let status = response.status().as_u16();
        (status, response.text().await.expect("a body"))
    }

    /// POSTs `request` and returns the JSON-RPC response it gets.
    pub async fn post_json(&self, request: &Request) -> Value {
        let (_, body) = self.post(request).await;
        serde_json::from_str(&body).expect("a JSON body")
    }

    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap().expect("the server ran cleanly");
    }
}

/// A server on an in-memory stdio pipe: write lines in, read lines out.
pub struct ServedStdio {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    input: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl ServedStdio {
    pub fn start(server: Server) -> ServedStdio {
        Self::start_with(server, Default::default())
    }

    /// [`ServedStdio::start`] with a transport configuration.
    pub fn start_with(server: Server, config: toolwire_server::stdio::StdioConfig) -> ServedStdio {
        use tokio::io::AsyncBufReadExt;
        let (client, server_end) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server_end);
        let serving = tokio::spawn(toolwire_server::stdio::serve(
            server,
            server_read,
            server_write,
            config,
        ));
        let (client_read, input) = tokio::io::split(client);
        ServedStdio {
            lines: tokio::io::BufReader::new(client_read).lines(),
            input,
            serving,
        }
    }

    /// Writes `message` as one line.
    pub async fn send(&mut self, message: &impl serde::Serialize) {
        use tokio::io::AsyncWriteExt;
        let mut line = serde_json::to_string(message).unwrap();
        line.push('\n');
        self.input.write_all(line.as_bytes()).await.unwrap();
    }

    /// Writes `bytes` as they are (the test adds any `\n`).
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt;
        self.input.write_all(bytes).await.unwrap();
    }

    /// The next line the server writes (within 5 s).
    pub async fn next_line(&mut self) -> String {
        tokio::time::timeout(std::time::Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("a line within 5 s")
            .unwrap()
            .expect("the server is still writing")
    }

    /// The next line the server writes, as JSON.
    pub async fn next(&mut self) -> Value {
        serde_json::from_str(&self.next_line().await).unwrap()
    }

    /// Ends the input without waiting for the server to stop.
    pub async fn end_input(&mut self) {
        use tokio::io::AsyncWriteExt;
        self.input.shutdown().await.unwrap();
    }

    /// Ends the input; the server must stop within 5 s.
    pub async fn close(mut self) {
        use tokio::io::AsyncWriteExt;
        self.input.shutdown().await.unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(5), self.serving)
            .await
            .expect("end of input stops the server")
            .unwrap()
            .unwrap();
    }
}
