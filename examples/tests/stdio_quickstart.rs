//! The quickstart example over stdio, as a real child process.

mod support;

use std::time::Duration;

use tokio::io::AsyncWriteExt;

use serde_json::json;
use support::{Peer, meta};

fn spawn() -> Peer {
    Peer::spawn(env!("CARGO_BIN_EXE_quickstart"))
}

#[tokio::test]
async fn lists_and_calls_tools() {
    let mut peer = spawn();
    peer.request(1, "tools/list", json!({})).await;
    let r = peer.recv().await;
    assert_eq!(r["id"], 1);
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["greet", "stats", "countdown"]);

    peer.request(
        2,
        "tools/call",
        json!({"name": "greet", "arguments": {"name": "Ada"}}),
    )
    .await;
    let r = peer.recv().await;
    assert_eq!(
        r,
        json!({"jsonrpc": "2.0", "id": 2, "result": {
            "content": [{"type": "text", "text": "Hello, Ada!"}],
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "quickstart", "version": env!("CARGO_PKG_VERSION")}}
        }})
    );

    peer.request(
        3,
        "tools/call",
        json!({"name": "stats", "arguments": {"numbers": [1, 2, 6]}}),
    )
    .await;
    let r = peer.recv().await;
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"count": 3, "mean": 3.0, "min": 1.0, "max": 6.0})
    );
}

#[tokio::test]
async fn bad_arguments_give_a_tool_error() {
    let mut peer = spawn();
    peer.request(
        1,
        "tools/call",
        json!({"name": "greet", "arguments": {"name": 5}}),
    )
    .await;
    let r = peer.recv().await;
    assert_eq!(r["result"]["isError"], true);
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Invalid arguments for tool greet:") && text.contains("/name"),
        "{text}"
    );
}

#[tokio::test]
async fn malformed_line_gets_parse_error_and_the_loop_goes_on() {
    let mut peer = spawn();
    peer.send_line("{this is not json").await;
    let r = peer.recv().await;
    assert_eq!(r["error"]["code"], -32700);
    assert!(r.get("id").is_none(), "a parse error has no id: {r}");
    peer.send(json!({"jsonrpc": "2.0", "id": null, "method": "tools/list"}))
        .await;
    let r = peer.recv().await;
    assert_eq!(r["error"]["code"], -32600);
    peer.request(
        2,
        "tools/call",
        json!({"name": "greet", "arguments": {"name": "again"}}),
    )
    .await;
    let r = peer.recv().await;
    assert_eq!(r["result"]["content"][0]["text"], "Hello, again!");
}

#[tokio::test]
async fn progress_arrives_in_order_before_the_result() {
    let mut peer = spawn();
    let mut params = json!({"name": "countdown", "arguments": {"seconds": 3, "step_ms": 10}});
    params["_meta"] = meta();
    params["_meta"]["progressToken"] = json!("tok");
    peer.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}))
        .await;
    let mut progress = Vec::new();
    loop {
        let m = peer.recv().await;
        if m.get("id").is_some() {
            assert_eq!(m["result"]["content"][0]["text"], "Lift-off!");
            break;
        }
        assert_eq!(m["method"], "notifications/progress");
        assert_eq!(m["params"]["progressToken"], "tok");
        progress.push(m["params"]["progress"].as_f64().unwrap());
    }
    assert_eq!(progress, [1.0, 2.0, 3.0]);
}

#[tokio::test]
async fn cancelled_request_gets_no_response() {
    let mut peer = spawn();
    peer.request(
        1,
        "tools/call",
        json!({"name": "countdown", "arguments": {"seconds": 60}}),
    )
    .await;
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "test"}}))
        .await;
    peer.request(
        2,
        "tools/call",
        json!({"name": "greet", "arguments": {"name": "next"}}),
    )
    .await;
    let r = peer.recv().await;
    assert_eq!(
        r["id"], 2,
        "the cancelled request must not be answered: {r}"
    );
    // Closing stdin ends the server promptly: the cancelled handler is not waited for.
    drop(peer.stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), peer.child.wait())
        .await
        .expect("exits on EOF")
        .unwrap();
    assert!(status.success());
    assert!(
        peer.lines.next_line().await.unwrap().is_none(),
        "nothing after the last answer"
    );
}

#[tokio::test]
async fn a_thousand_concurrent_calls_on_one_pipe_are_all_answered_within_the_rate_limit() {
    let mut peer = spawn();
    let mut batch = String::new();
    for id in 0..1000 {
        let params =
            json!({"name": "greet", "arguments": {"name": format!("n{id}")}, "_meta": meta()});
        batch.push_str(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
                .to_string(),
        );
        batch.push('\n');
    }
    peer.stdin.write_all(batch.as_bytes()).await.unwrap();
    // Every call is answered exactly once. The server's default rate limit
    // (100 calls/s per principal, bursts of 200) lets at least a burst through
    // and answers the rest with a tool error the model can back off on.
    let mut seen = vec![false; 1000];
    let mut greeted = 0;
    for _ in 0..1000 {
        let r = peer.recv().await;
        let id = r["id"].as_u64().unwrap() as usize;
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        if text == format!("Hello, n{id}!") {
            greeted += 1;
        } else {
            assert_eq!(
                text, "Rate limit reached for tool calls; retry in 1 s",
                "call {id}"
            );
            assert_eq!(r["result"]["isError"], true);
        }
        assert!(!seen[id], "answered twice: {id}");
        seen[id] = true;
    }
    assert!(seen.iter().all(|s| *s));
    assert!(greeted >= 200, "a full burst goes through, got {greeted}");
}

#[tokio::test]
async fn a_2025_11_25_client_is_served_after_initialize() {
    let mut peer = spawn();
    peer.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "1"}}}),
    )
    .await;
    let opened = peer.recv().await;
    assert_eq!(
        opened["result"]["protocolVersion"], "2025-11-25",
        "{opened}"
    );
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "greet", "arguments": {"name": "Ada"}}}))
        .await;
    assert_eq!(
        peer.recv().await,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "Hello, Ada!"}]}})
    );
}
