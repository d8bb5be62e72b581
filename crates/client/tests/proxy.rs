//! A proxy is never lost: a proxy environment variable that applies to the
//! endpoint, or a caller's reqwest client with a proxy, makes the transport
//! send through reqwest (and so through the proxy); `NO_PROXY` naming the
//! host leaves it on its own client, straight to the server.
//!
//! The environment is the process's, so each case runs this test binary
//! again as a child process with the variables set (`child_sends`), against
//! a server the parent runs on 127.0.0.1.

use std::process::Command;
use std::sync::{Arc, Mutex};

use axum::http::{Uri, header};
use toolwire_client::transport::{HttpTransport, OutgoingRequest, ProtocolMode, Transport};
use toolwire_protocol::{Message, Request};

/// The child's endpoint URL, in this variable.
const CHILD_URL: &str = "TOOLWIRE_PROXY_TEST_URL";

/// A server on 127.0.0.1 that answers every request with a JSON-RPC result
/// and records the request target it was sent (absolute through a proxy,
/// a path when asked directly); its address.
async fn recording() -> (String, Arc<Mutex<Vec<String>>>) {
    let targets = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&targets);
    let app = axum::Router::new().fallback(move |uri: Uri| {
        seen.lock().unwrap().push(uri.to_string());
        async {
            (
                [(header::CONTENT_TYPE, "application/json")],
                r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#,
            )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (address, targets)
}

/// Lists tools at `url` with a transport of default settings (or through
/// `client`); true when the result came back.
async fn lists_tools(url: &str, client: Option<reqwest::Client>) -> bool {
    let mut builder = HttpTransport::builder(url).protocol(ProtocolMode::Modern);
    if let Some(client) = client {
        builder = builder.http_client(client);
    }
    let transport = builder.build().unwrap();
    let request = Request::new(1, "tools/list", None);
    let Ok(mut exchange) = transport.send(OutgoingRequest::new(request)).await else {
        return false;
    };
    matches!(exchange.next().await, Some(Ok(Message::Result(_))))
}

/// Runs `child_sends` in a child process with `env` (and no other proxy
/// variable); whether it listed the tools.
fn child_lists_tools(url: &str, env: &[(&str, String)]) -> bool {
    let mut child = Command::new(std::env::current_exe().unwrap());
    child.args(["child_sends", "--exact", "--ignored", "--test-threads=1"]);
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "REQUEST_METHOD",
    ] {
        child.env_remove(name).env_remove(name.to_ascii_lowercase());
    }
    child.env(CHILD_URL, url);
    for (name, value) in env {
        child.env(name, value);
    }
    child.status().unwrap().success()
}

/// The child's side: lists the tools at `CHILD_URL`; fails when it cannot.
#[tokio::test]
#[ignore = "run by the other tests in a child process, with proxy variables set"]
async fn child_sends() {
    let Ok(url) = std::env::var(CHILD_URL) else {
        return;
    };
    assert!(lists_tools(&url, None).await, "no result from {url}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_proxy_from_the_environment_is_used() {
    let (proxy, targets) = recording().await;
    // Nothing listens on port 9 of 127.0.0.1: only the proxy can answer.
    let url = "http://127.0.0.1:9/mcp";
    let env = [("HTTP_PROXY", format!("http://{proxy}"))];
    let listed = tokio::task::spawn_blocking(move || child_lists_tools(url, &env))
        .await
        .unwrap();
    assert!(listed, "the child got no result through the proxy");
    assert_eq!(*targets.lock().unwrap(), [url]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_proxy_naming_the_host_goes_straight_to_the_server() {
    let (server, targets) = recording().await;
    let url = format!("http://{server}/mcp");
    // A proxy where nothing listens: going through it would fail.
    let env = [
        ("HTTP_PROXY", "http://127.0.0.1:9".to_owned()),
        ("NO_PROXY", "127.0.0.1".to_owned()),
    ];
    let child_url = url.clone();
    let listed = tokio::task::spawn_blocking(move || child_lists_tools(&child_url, &env))
        .await
        .unwrap();
    assert!(listed, "the child got no result from the server");
    assert_eq!(*targets.lock().unwrap(), ["/mcp"]);
}

#[tokio::test]
async fn a_callers_reqwest_client_and_its_proxy_are_used() {
    let (proxy, targets) = recording().await;
    let url = "http://127.0.0.1:9/mcp";
    let client = reqwest::Client::builder()
        .proxy(reqwest::Proxy::http(format!("http://{proxy}")).unwrap())
        .build()
        .unwrap();
    assert!(lists_tools(url, Some(client)).await);
    assert_eq!(*targets.lock().unwrap(), [url]);
}
