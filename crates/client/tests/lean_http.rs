//! The transport's own HTTP client (hyper, without reqwest) over real
//! HTTP on 127.0.0.1: the reply limit while reading, SSE replies streamed
//! and ended by a closed connection, connections kept alive (and not used
//! again once the server closed or reset them), error statuses and refused
//! connections
//! (`proxy.rs` covers when reqwest is kept).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use toolwire_client::TransportError;
use toolwire_client::transport::{HttpTransport, OutgoingRequest, ProtocolMode, Transport};
use toolwire_protocol::{Message, Request};

const RESULT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;

/// A server on 127.0.0.1 whose `/mcp` answers every POST with `reply`
/// (content type, body) and records the peer address of each request.
async fn serving(
    content_type: &'static str,
    body: String,
) -> (String, Arc<Mutex<Vec<SocketAddr>>>) {
    answering(move || ([(header::CONTENT_TYPE, content_type)], body.clone()).into_response()).await
}

/// A server on 127.0.0.1 whose `/mcp` answers every POST with what
/// `respond` makes and records the peer address of each request.
async fn answering(
    respond: impl Fn() -> Response + Clone + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<SocketAddr>>>) {
    let peers = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&peers);
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |ConnectInfo(peer): ConnectInfo<SocketAddr>| {
            seen.lock().unwrap().push(peer);
            let response = respond();
            async move { response }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let service = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await });
    (format!("http://127.0.0.1:{port}/mcp"), peers)
}

fn transport(url: &str, max_message_bytes: usize) -> HttpTransport {
    HttpTransport::builder(url)
        .protocol(ProtocolMode::Modern)
        .max_message_bytes(max_message_bytes)
        .build()
        .unwrap()
}

fn message(text: &str) -> Message {
    Message::from_slice(text.as_bytes()).unwrap()
}

/// The messages of one `tools/list` exchange, until its end or its error.
async fn exchange(transport: &HttpTransport) -> Vec<Result<Message, TransportError>> {
    let request = Request::new(1, "tools/list", None);
    let mut exchange = match transport.send(OutgoingRequest::new(request)).await {
        Ok(exchange) => exchange,
        Err(error) => return vec![Err(error)],
    };
    let mut messages = Vec::new();
    while let Some(message) = exchange.next().await {
        let ends = !matches!(message, Ok(Message::Notification(_)));
        messages.push(message);
        if ends {
            break;
        }
    }
    messages
}

#[tokio::test]
async fn a_json_reply_over_the_limit_is_refused_while_reading() {
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"pad":"{}"}}}}"#,
        "x".repeat(100_000)
    );
    assert_eq!(
        malformed_reply("application/json", big).await,
        "reply larger than 1000 bytes"
    );
}

#[tokio::test]
async fn an_sse_reply_is_streamed_and_its_events_limited() {
    let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#;
    let stream = format!("data: {progress}\n\ndata: {RESULT}\n\n");
    let (url, _) = serving("text/event-stream", stream).await;
    let messages = exchange(&transport(&url, 1_000)).await;
    let expected = [progress, RESULT].map(|text| Ok(message(text)));
    assert_eq!(messages, expected);

    let oversized = format!("data: {}\n\n", "x".repeat(2_000));
    assert_eq!(
        malformed_reply("text/event-stream", oversized).await,
        "SSE event larger than 1000 bytes"
    );
}

/// The reason given when `body`, served as `content_type`, is refused by a
/// transport whose message limit is 1,000 bytes (the exchange must bring
/// that one error and nothing else).
async fn malformed_reply(content_type: &'static str, body: String) -> String {
    let (url, _) = serving(content_type, body).await;
    match &exchange(&transport(&url, 1_000)).await[..] {
        [Err(TransportError::Malformed(reason))] => reason.clone(),
        other => panic!("expected one Malformed error, got {other:?}"),
    }
}

#[tokio::test]
async fn sequential_requests_share_one_connection() {
    let (url, peers) = serving("application/json", RESULT.to_owned()).await;
    let transport = transport(&url, 1_000);
    for _ in 0..5 {
        let messages = exchange(&transport).await;
        assert_eq!(messages, [Ok(message(RESULT))]);
    }
    let peers = peers.lock().unwrap().clone();
    assert_eq!(peers.len(), 5);
    assert!(peers.iter().all(|p| *p == peers[0]), "{peers:?}");
}

#[tokio::test]
async fn an_error_status_is_reported_with_its_body() {
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(|| async { (StatusCode::SERVICE_UNAVAILABLE, "busy") }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let messages = exchange(&transport(&url, 1_000)).await;
    assert!(
        matches!(&messages[..], [Err(TransportError::Http { status: 503, body })] if body == "busy"),
        "{messages:?}"
    );
}

#[tokio::test]
async fn a_refused_connection_is_an_io_error_naming_the_request() {
    // A port just bound and released: nothing listens there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let messages = exchange(&transport(&url, 1_000)).await;
    let prefix = format!("POST {url} failed: error sending request for url ({url}): ");
    assert!(
        matches!(&messages[..], [Err(TransportError::Io(m))] if m.starts_with(&prefix) && m.contains("Connection refused")),
        "{messages:?}"
    );
}

#[tokio::test]
async fn a_reply_without_a_body_gives_its_connection_back() {
    let (url, peers) = answering(|| StatusCode::SERVICE_UNAVAILABLE.into_response()).await;
    let transport = transport(&url, 1_000);
    for _ in 0..3 {
        let messages = exchange(&transport).await;
        assert!(
            matches!(&messages[..], [Err(TransportError::Http { status: 503, body })] if body.is_empty()),
            "{messages:?}"
        );
    }
    let peers = peers.lock().unwrap().clone();
    assert_eq!(peers.len(), 3);
    assert!(peers.iter().all(|p| *p == peers[0]), "{peers:?}");
}

/// A server that answers each connection's first request with `RESULT` and
/// then closes it, without saying so in the reply; it records the peers.
async fn closing_after_one_reply() -> (String, Arc<Mutex<Vec<SocketAddr>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let peers = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&peers);
    tokio::spawn(async move {
        while let Ok((mut stream, peer)) = listener.accept().await {
            seen.lock().unwrap().push(peer);
            if read_request(&mut stream).await {
                let _ = stream.write_all(json_reply().as_bytes()).await;
            }
        }
    });
    (url, peers)
}

/// Reads one request from `stream`: its head, then the body of the length
/// it announces. False when the connection ends or fails first.
async fn read_request(stream: &mut TcpStream) -> bool {
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    while !request_is_complete(&request) {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    true
}

fn request_is_complete(request: &[u8]) -> bool {
    let text = String::from_utf8_lossy(request);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    body.len() >= length
}

/// `RESULT` as an HTTP/1.1 reply that keeps the connection open.
fn json_reply() -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{RESULT}",
        RESULT.len()
    )
}

#[tokio::test]
async fn a_connection_the_server_closed_while_idle_is_not_used_again() {
    let (url, peers) = closing_after_one_reply().await;
    let transport = transport(&url, 1_000);
    for _ in 0..3 {
        assert_eq!(exchange(&transport).await, [Ok(message(RESULT))]);
        // Time for the client to see the close before the next request.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let peers = peers.lock().unwrap().clone();
    assert_eq!(peers.len(), 3);
    assert!(peers[0] != peers[1] && peers[1] != peers[2], "{peers:?}");
}

#[tokio::test]
async fn an_sse_reply_whose_connection_closes_ends_its_exchange() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#;
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        assert!(read_request(&mut stream).await);
        let event = format!("data: {progress}\n\n");
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let chunk = format!("{:x}\r\n{event}\r\n", event.len());
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(chunk.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        // The server goes away in the middle of the stream.
    });
    let transport = transport(&url, 1_000);
    let messages = tokio::time::timeout(Duration::from_secs(5), exchange(&transport))
        .await
        .expect("the exchange ends when the connection closes");
    assert!(
        matches!(&messages[..], [Ok(first), Err(TransportError::Io(broke))]
            if *first == message(progress)
                && broke == "SSE stream broke: error decoding response body"),
        "{messages:?}"
    );
}

#[tokio::test]
async fn a_server_that_closes_its_idle_connection_and_stops_is_reported_unreachable() {
    reported_unreachable_after_it_stops(false).await;
}

#[tokio::test]
async fn a_server_that_resets_its_idle_connection_and_stops_is_reported_unreachable() {
    reported_unreachable_after_it_stops(true).await;
}

/// One request answered on a kept-alive connection; then the server closes
/// it (resets it when `reset`, as a killed process's connection may be)
/// and stops listening. The next request must fail at once, not wait on
/// the dead connection.
async fn reported_unreachable_after_it_stops(reset: bool) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (served, gone) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        assert!(read_request(&mut stream).await);
        stream.write_all(json_reply().as_bytes()).await.unwrap();
        // Closed only once the client holds the connection idle.
        tokio::time::sleep(Duration::from_millis(100)).await;
        if reset {
            socket2::SockRef::from(&stream)
                .set_linger(Some(Duration::ZERO))
                .unwrap();
        }
        drop((stream, listener));
        let _ = served.send(());
    });
    let transport = transport(&url, 1_000);
    assert_eq!(exchange(&transport).await, [Ok(message(RESULT))]);
    gone.await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let messages = tokio::time::timeout(Duration::from_secs(5), exchange(&transport))
        .await
        .expect("a closed connection is not waited on");
    let prefix = format!("POST {url} failed: error sending request for url ({url}): ");
    assert!(
        matches!(&messages[..], [Err(TransportError::Io(m))]
            if m.starts_with(&prefix) && m.contains("Connection refused")),
        "{messages:?}"
    );
}
