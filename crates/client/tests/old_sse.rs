//! The deprecated 2024-11-05 HTTP+SSE transport: a server that refuses the
//! `initialize` POST with 405 and names a message URL in the first event of
//! its GET stream. The client falls back to it, and requests, progress and
//! responses travel as that transport has them (POST answered 202, every
//! message from the server on the one stream).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use toolwire_client::transport::{Era, HttpTransport};
use toolwire_client::{Client, RequestNotification, RequestOptions};
use toolwire_protocol::Message;

type Streams = Arc<Mutex<Option<mpsc::UnboundedSender<String>>>>;

/// The fake server: GET /sse, POST /messages?sessionId=s1; records the
/// methods it received.
async fn old_sse_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let stream: Streams = Arc::default();
    let methods: Arc<Mutex<Vec<String>>> = Arc::default();
    let get_stream = Arc::clone(&stream);
    let post_stream = Arc::clone(&stream);
    let log = Arc::clone(&methods);
    let app = axum::Router::new()
        .route(
            "/sse",
            axum::routing::get(move || {
                let (tx, rx) = mpsc::unbounded_channel::<String>();
                let _ = tx.send("event: endpoint\ndata: /messages?sessionId=s1\n\n".into());
                *get_stream.lock().unwrap() = Some(tx);
                let body = futures::stream::unfold(rx, |mut rx| async move {
                    let event = rx.recv().await?;
                    Some((Ok::<_, std::io::Error>(Bytes::from(event)), rx))
                });
                async move {
                    Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(Body::from_stream(body))
                        .unwrap()
                }
            })
            .post(|| async { StatusCode::METHOD_NOT_ALLOWED }),
        )
        .route(
            "/messages",
            axum::routing::post(move |body: Bytes| {
                let stream = Arc::clone(&post_stream);
                let log = Arc::clone(&log);
                async move {
                    let message = Message::from_slice(&body).unwrap();
                    log.lock()
                        .unwrap()
                        .push(message.method().unwrap_or("response").to_owned());
                    for reply in answer(&message) {
                        let event = format!("event: message\ndata: {reply}\n\n");
                        if let Some(tx) = stream.lock().unwrap().as_ref() {
                            let _ = tx.send(event);
                        }
                    }
                    (StatusCode::ACCEPTED, "Accepted")
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/sse", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, methods)
}

/// What the server sends on its stream for one message.
fn answer(message: &Message) -> Vec<Value> {
    let Message::Request(request) = message else {
        return Vec::new();
    };
    let id = serde_json::to_value(&request.id).unwrap();
    let params = request.params.clone().unwrap_or_default();
    match request.method.as_str() {
        "initialize" => vec![json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-03-26", "capabilities": {"tools": {}},
            "serverInfo": {"name": "old-sse", "version": "1"}}})],
        "tools/list" => vec![json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
            {"name": "echo", "inputSchema": {"type": "object",
             "properties": {"text": {"type": "string"}}, "required": ["text"]}}]}})],
        "tools/call" => {
            let token = params["_meta"]["progressToken"].clone();
            let text = params["arguments"]["text"].clone();
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": token, "progress": 1, "total": 2}}),
                json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": text}]}}),
            ]
        }
        _ => vec![json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}})],
    }
}

#[tokio::test]
async fn a_2024_11_05_http_sse_server_is_reached_through_its_message_endpoint() {
    let (url, methods) = old_sse_server().await;
    let client = Client::builder(HttpTransport::new(&url).unwrap()).build();
    let progress = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&progress);
    let options = RequestOptions::new().on_notification(move |n| {
        if let RequestNotification::Progress(p) = n {
            seen.lock().unwrap().push(p.progress);
        }
    });
    let call = client.call_tool_with("echo", json!({"text": "hi"}), &options);
    let result = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("in time")
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("hi"));
    assert_eq!(*progress.lock().unwrap(), [1.0]);
    assert_eq!(client.era(), Some(Era::Legacy));
    assert_eq!(client.protocol_version(), "2025-03-26");
    assert_eq!(
        *methods.lock().unwrap(),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
}
