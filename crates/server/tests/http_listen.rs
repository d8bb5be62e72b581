//! subscriptions/listen over Streamable HTTP: an SSE stream with keep-alive
//! comments, freed when the client goes away, completed on shutdown.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::{NoArgs, RequestContext, Server, ToolBuilder};

const WAIT: Duration = Duration::from_secs(10);

fn server() -> Server {
    Server::builder("http-listen", "1")
        .tool(ToolBuilder::new("a").handler(|_: NoArgs, _cx: RequestContext| async { "a" }))
        .build()
        .unwrap()
}

async fn start(
    server: Server,
) -> (
    String,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let config = HttpConfig::new().sse_keep_alive(Some(Duration::from_millis(50)));
    let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server, config)
        .await
        .unwrap();
    let url = format!("http://{}/mcp", http.local_addr());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(http.run_until(async move {
        let _ = stopped.await;
    }));
    (url, stop, task)
}

async fn open_listen(url: &str, id: i64) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": true},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    }});
    let response = reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "subscriptions/listen")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    response
}

/// Reads SSE lines: `data:` payloads as JSON, comments as `Value::String`.
struct Events {
    stream: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

impl Events {
    fn new(response: reqwest::Response) -> Events {
        Events {
            stream: response.bytes_stream().boxed(),
            buffer: String::new(),
        }
    }

    async fn next_line(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.buffer.find('\n') {
                let line = self.buffer[..end].trim_end_matches('\r').to_owned();
                self.buffer.drain(..=end);
                if !line.is_empty() {
                    return Some(line);
                }
                continue;
            }
            let chunk = tokio::time::timeout(WAIT, self.stream.next())
                .await
                .expect("bounded wait")?;
            self.buffer
                .push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        }
    }

    /// The next `data:` message, skipping comments and event names.
    async fn next_message(&mut self) -> Option<Value> {
        while let Some(line) = self.next_line().await {
            if let Some(data) = line.strip_prefix("data:") {
                return Some(serde_json::from_str(data.trim()).unwrap());
            }
        }
        None
    }
}

async fn wait_until(what: &str, check: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn ack_then_notifications_with_keep_alive_comments() {
    let s = server();
    let (url, _stop, _task) = start(s.clone()).await;
    let mut events = Events::new(open_listen(&url, 5).await);
    let ack = events.next_message().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        5
    );
    let mut saw_comment = false;
    for _ in 0..20 {
        let line = events.next_line().await.unwrap();
        if line.starts_with(':') {
            saw_comment = true;
            break;
        }
    }
    assert!(saw_comment, "a keep-alive comment within 20 lines");
    s.add_tool(ToolBuilder::new("b").handler(|_: NoArgs, _cx: RequestContext| async { "b" }))
        .unwrap();
    let note = events.next_message().await.unwrap();
    assert_eq!(
        note,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
               "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 5}}})
    );
}

#[tokio::test]
async fn closing_the_stream_ends_the_subscription() {
    let s = server();
    let (url, _stop, _task) = start(s.clone()).await;
    let mut events = Events::new(open_listen(&url, 1).await);
    events.next_message().await.unwrap();
    assert_eq!(s.open_subscriptions(), 1);
    drop(events);
    wait_until("the subscription to be freed", || {
        s.open_subscriptions() == 0
    })
    .await;
}

#[tokio::test]
async fn graceful_shutdown_sends_each_listener_its_completion() {
    let s = server();
    let (url, stop, task) = start(s.clone()).await;
    let mut first = Events::new(open_listen(&url, 11).await);
    let mut second = Events::new(open_listen(&url, 12).await);
    first.next_message().await.unwrap();
    second.next_message().await.unwrap();
    stop.send(()).unwrap();
    for (events, id) in [(&mut first, 11), (&mut second, 12)] {
        let done = events.next_message().await.unwrap();
        assert_eq!(done["id"], id);
        assert_eq!(done["result"]["resultType"], "complete");
        assert_eq!(
            done["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            id
        );
        assert!(
            events.next_message().await.is_none(),
            "the stream closes after the completion"
        );
    }
    tokio::time::timeout(WAIT, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
