//! `HttpConfig::connection_threads`: connections handed round robin to
//! threads of their own, each with a single-threaded runtime, over real
//! TCP connections on 127.0.0.1.

mod common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::{NoArgs, RequestContext, Server, ToolBuilder};

use common::request;

const WAIT: Duration = Duration::from_secs(10);

/// Tools `thread` (the name of the thread that runs it, and of the thread a
/// task it spawns runs on) and `held` (notifies `started`, then waits until
/// `release` is notified).
fn server(held: Held) -> Server {
    Server::builder("threads-test", "1.0.0")
        .tool(
            ToolBuilder::new("thread").handler(|_: NoArgs, _cx: RequestContext| async move {
                let spawned = tokio::spawn(async { thread_name() }).await.unwrap();
                format!("{} {spawned}", thread_name())
            }),
        )
        .tool(
            ToolBuilder::new("held").handler(move |_: NoArgs, _cx: RequestContext| {
                let held = held.clone();
                async move {
                    held.started.notify_one();
                    held.release.notified().await;
                    "released"
                }
            }),
        )
        .build()
        .unwrap()
}

#[derive(Clone, Default)]
struct Held {
    started: Arc<Notify>,
    release: Arc<Notify>,
}

fn thread_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_owned()
}

/// A client with one connection of its own: a new client, a new connection.
fn one_connection_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(WAIT)
        .pool_max_idle_per_host(1)
        .build()
        .unwrap()
}

async fn call(client: &reqwest::Client, url: &str, id: i64, tool: &str) -> Value {
    let body = request(id, "tools/call", json!({"name": tool, "arguments": {}}));
    let response = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", tool)
        .body(serde_json::to_vec(&body).unwrap())
        .send()
        .await
        .expect("request sent");
    assert_eq!(response.status(), 200);
    response.json().await.expect("a JSON reply")
}

fn text_of(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {reply}"))
}

async fn start(
    threads: usize,
    held: Held,
) -> (
    String,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let config = HttpConfig::new().connection_threads(threads);
    let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), server(held), config)
        .await
        .expect("bind 127.0.0.1:0");
    let url = format!("http://{}/mcp", http.local_addr());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(
        http.drain_timeout(WAIT)
            .run_until(async move { drop(stopped.await) }),
    );
    (url, stop, task)
}

#[tokio::test]
async fn connections_go_round_robin_to_their_threads_and_stay_there() {
    let (url, stop, task) = start(2, Held::default()).await;
    let clients: Vec<_> = (0..3).map(|_| one_connection_client()).collect();
    let mut seen = Vec::new();
    for (id, client) in (1..).zip(&clients) {
        seen.push(text_of(&call(client, &url, id, "thread").await).to_owned());
    }
    assert_eq!(
        seen,
        [
            "toolwire-conn-0 toolwire-conn-0",
            "toolwire-conn-1 toolwire-conn-1",
            "toolwire-conn-0 toolwire-conn-0",
        ]
    );
    // The second connection's next call is served where it was accepted.
    let again = call(&clients[1], &url, 9, "thread").await;
    assert_eq!(text_of(&again), "toolwire-conn-1 toolwire-conn-1");
    let _ = stop.send(());
    task.await.unwrap().expect("the server stopped cleanly");
}

#[tokio::test]
async fn without_connection_threads_the_callers_runtime_serves() {
    let (url, stop, task) = start(0, Held::default()).await;
    let reply = call(&one_connection_client(), &url, 1, "thread").await;
    // `tokio::test`'s runtime runs every task on this test's own thread.
    let here = thread_name();
    assert_eq!(text_of(&reply), format!("{here} {here}"));
    let _ = stop.send(());
    task.await.unwrap().expect("the server stopped cleanly");
}

#[tokio::test]
async fn a_drain_lets_a_call_on_a_connection_thread_finish() {
    let held = Held::default();
    let (url, stop, task) = start(2, held.clone()).await;
    let client = one_connection_client();
    let call_held = tokio::spawn(async move { call(&client, &url, 1, "held").await });
    tokio::time::timeout(WAIT, held.started.notified())
        .await
        .expect("the call started");
    let _ = stop.send(());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !task.is_finished(),
        "the server stopped with a call in flight"
    );
    held.release.notify_one();
    let reply = tokio::time::timeout(WAIT, call_held)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text_of(&reply), "released");
    tokio::time::timeout(WAIT, task)
        .await
        .unwrap()
        .unwrap()
        .expect("the server stopped cleanly");
}
