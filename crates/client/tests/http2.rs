//! `HttpTransportBuilder::http2_prior_knowledge` against our server: calls
//! in flight together and a listen stream share one connection, counted by
//! a TCP relay in front of the server; the default stays HTTP/1.1 (one
//! connection per call in flight).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Barrier;
use toolwire_client::transport::{HttpTransport, TransportError};
use toolwire_client::{Client, ListenEvent};
use toolwire_protocol::SubscriptionFilter;
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::{NoArgs, RequestContext, Server, ToolBuilder};

const WAIT: Duration = Duration::from_secs(10);

/// Calls that must all be in flight at once before any returns.
const TOGETHER: usize = 16;

/// A server whose `meet` returns only once [`TOGETHER`] calls run at once.
fn server() -> Server {
    let barrier = Arc::new(Barrier::new(TOGETHER));
    Server::builder("h2-client-test", "1")
        .tool(
            ToolBuilder::new("meet").handler(move |_: NoArgs, _cx: RequestContext| {
                let barrier = barrier.clone();
                async move {
                    barrier.wait().await;
                    "met"
                }
            }),
        )
        .build()
        .unwrap()
}

/// Serves `server` on 127.0.0.1:0 behind a relay that counts the TCP
/// connections made to it; returns the relay's URL and the count.
async fn serve_counted(server: Server) -> (String, Arc<AtomicUsize>) {
    let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server, HttpConfig::new())
        .await
        .unwrap();
    let upstream = http.local_addr();
    tokio::spawn(http.run());
    let relay = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", relay.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((downstream, _)) = relay.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(pipe(downstream, upstream));
        }
    });
    (url, connections)
}

async fn pipe(mut downstream: TcpStream, upstream: SocketAddr) {
    if let Ok(mut upstream) = TcpStream::connect(upstream).await {
        let _ = tokio::io::copy_bidirectional(&mut downstream, &mut upstream).await;
    }
}

/// Calls `meet` [`TOGETHER`] times at once; every call must answer.
async fn meet_together(client: &Client) {
    let calls = (0..TOGETHER).map(|_| client.call_tool("meet", json!({})));
    let results = tokio::time::timeout(WAIT, futures::future::join_all(calls))
        .await
        .expect("the calls meet");
    for result in results {
        assert_eq!(result.unwrap().content[0].as_text(), Some("met"));
    }
}

#[tokio::test]
async fn calls_and_a_listen_stream_share_one_http2_connection() {
    let server = server();
    let (url, connections) = serve_counted(server.clone()).await;
    let transport = HttpTransport::builder(url)
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let client = Client::builder(transport).build();
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        ..Default::default()
    };
    let mut events = client.listen(filter).await.unwrap();
    meet_together(&client).await;
    server
        .add_tool(
            ToolBuilder::new("late").handler(|_: NoArgs, _cx: RequestContext| async { "late" }),
        )
        .unwrap();
    let event = tokio::time::timeout(WAIT, events.next())
        .await
        .expect("a notification")
        .expect("the stream is open")
        .unwrap();
    assert_eq!(event, ListenEvent::ToolsListChanged);
    meet_together(&client).await;
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_default_is_http1_one_connection_per_call_in_flight() {
    let (url, connections) = serve_counted(server()).await;
    let client = Client::builder(HttpTransport::new(url).unwrap()).build();
    meet_together(&client).await;
    assert_eq!(connections.load(Ordering::SeqCst), TOGETHER);
}

#[test]
fn prior_knowledge_with_a_client_of_ones_own_is_refused() {
    let error = HttpTransport::builder("http://127.0.0.1:1/mcp")
        .http_client(reqwest::Client::new())
        .http2_prior_knowledge()
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        TransportError::Io(
            "http2_prior_knowledge applies to the HTTP client the transport builds; \
             with http_client, set it on that reqwest client"
                .to_owned()
        )
    );
}
