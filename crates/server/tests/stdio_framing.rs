//! The stdio transport's framing: a bad line costs that line only.

mod common;

use common::*;
use serde_json::{Value, json};
use toolwire_protocol::ElicitAction;
use toolwire_server::stdio::StdioConfig;
use toolwire_server::{NoArgs, RequestContext, Server, ToolBuilder, ToolError};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

fn server() -> Server {
    Server::builder("framing-test", "1.0.0")
        .tool(
            ToolBuilder::new("echo")
                .handler(|args: EchoArgs, _cx: RequestContext| async move { args.text }),
        )
        .tool(
            ToolBuilder::new("confirm").handler(|_: NoArgs, cx: RequestContext| async move {
                let answer = cx.elicit_form("ok", "Go ahead?", json!({"type": "object"}))?;
                let said = match answer.action {
                    ElicitAction::Accept => "accepted",
                    ElicitAction::Decline => "declined",
                    ElicitAction::Cancel => "cancelled",
                };
                Ok::<_, ToolError>(said)
            }),
        )
        .build()
        .unwrap()
}

fn echo(id: i64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}, "_meta": meta()}})
}

async fn answered_echo(stdio: &mut ServedStdio, id: i64, text: &str) {
    stdio.send(&echo(id, text)).await;
    let reply = stdio.next().await;
    assert_eq!(reply["id"], id, "{reply}");
    assert_eq!(reply["result"]["content"][0]["text"], text, "{reply}");
}

#[tokio::test]
async fn a_line_that_is_not_utf8_gets_a_parse_error_and_the_session_goes_on() {
    let mut stdio = ServedStdio::start(server());
    answered_echo(&mut stdio, 1, "before").await;
    stdio
        .send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/\xff\xfe\"}\n")
        .await;
    let reply = stdio.next().await;
    assert_eq!(reply["id"], Value::Null, "{reply}");
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    stdio
        .send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"\xe9\"}}}\n")
        .await;
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "error": {"code": -32700,
            "message": "Parse error: invalid unicode code point at line 1 column 92"}})
    );
    stdio.send_raw(b"\xc3\x28 not json either\n").await;
    assert_eq!(stdio.next().await["error"]["code"], -32700);
    answered_echo(&mut stdio, 3, "after").await;
    stdio.close().await;
}

#[tokio::test]
async fn an_over_long_line_is_refused_and_the_next_one_is_served() {
    let mut stdio = ServedStdio::start(server());
    let huge = format!("{}\n", "x".repeat(5 * 1024 * 1024));
    stdio.send_raw(huge.as_bytes()).await;
    let reply = stdio.next().await;
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "error": {"code": -32600,
            "message": format!("Invalid request: message longer than {} bytes", 4 * 1024 * 1024)}})
    );
    answered_echo(&mut stdio, 1, "still here").await;
    stdio.close().await;
}

#[tokio::test]
async fn crlf_and_blank_lines_are_accepted() {
    let mut stdio = ServedStdio::start(server());
    let mut line = serde_json::to_vec(&echo(1, "crlf")).unwrap();
    line.extend_from_slice(b"\r\n\r\n   \n");
    stdio.send_raw(&line).await;
    let reply = stdio.next().await;
    assert_eq!(reply["result"]["content"][0]["text"], "crlf", "{reply}");
    answered_echo(&mut stdio, 2, "next").await;
    stdio.close().await;
}

#[tokio::test]
async fn a_last_line_without_newline_is_still_served() {
    let mut stdio = ServedStdio::start(server());
    let line = serde_json::to_vec(&echo(7, "tail")).unwrap();
    stdio.send_raw(&line).await;
    stdio.end_input().await;
    let reply = stdio.next().await;
    assert_eq!(reply["result"]["content"][0]["text"], "tail", "{reply}");
    stdio.close().await;
}

/// Open listens must not hold the permits that reading the next line
/// waits for: with every permit taken by a listen, the server could read
/// neither a new request nor the cancellation that would end a listen.
#[tokio::test]
async fn open_listens_do_not_starve_the_next_request() {
    let config = StdioConfig {
        max_in_flight: 2,
        ..StdioConfig::default()
    };
    let mut stdio = ServedStdio::start_with(server(), config);
    for id in [1, 2, 3] {
        stdio
            .send(
                &json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
                "params": {"notifications": {"toolsListChanged": true}, "_meta": meta()}}),
            )
            .await;
        let ack = stdio.next().await;
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
    }
    answered_echo(&mut stdio, 4, "not starved").await;
    stdio.close().await;
}

/// A legacy (2025-11-25) session over stdio with one in-flight permit,
/// held by `tools/call confirm` (id 2) waiting on the `elicitation/create`
/// it sent, which is returned.
async fn confirm_waiting_on_one_permit() -> (ServedStdio, Value) {
    let config = StdioConfig {
        max_in_flight: 1,
        ..StdioConfig::default()
    };
    let mut stdio = ServedStdio::start_with(server(), config);
    stdio
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "c", "version": "1"}}}),
        )
        .await;
    assert_eq!(
        stdio.next().await["result"]["protocolVersion"],
        "2025-11-25"
    );
    stdio
        .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "confirm", "arguments": {}}}))
        .await;
    let ask = stdio.next().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    (stdio, ask)
}

/// The same for a request waiting for a legacy client's answer: with its
/// one permit held by a call waiting on an elicitation, a second request
/// must not stop the answer from being read.
#[tokio::test]
async fn a_request_waiting_for_an_answer_does_not_block_reading() {
    let (mut stdio, ask) = confirm_waiting_on_one_permit().await;
    stdio
        .send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "second"}}}))
        .await;
    stdio
        .send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}}))
        .await;
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "declined"}]}})
    );
    let second = stdio.next().await;
    assert_eq!(second["id"], 3, "{second}");
    assert_eq!(second["result"]["content"][0]["text"], "second");
    stdio.close().await;
}

/// When input ends, a call waiting on the client's answer ends at once
/// (the answer can no longer come), and the request queued behind it is
/// still served before the server stops.
#[tokio::test]
async fn at_end_of_input_waiting_calls_end_and_queued_requests_are_served() {
    let (mut stdio, _ask) = confirm_waiting_on_one_permit().await;
    stdio
        .send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "queued"}}}))
        .await;
    stdio.end_input().await;
    let started = std::time::Instant::now();
    assert_eq!(
        stdio.next().await,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"isError": true, "content": [{"type": "text",
            "text": "the client closed the connection before answering elicitation/create"}]}})
    );
    let queued = stdio.next().await;
    assert_eq!(queued["id"], 3, "{queued}");
    assert_eq!(queued["result"]["content"][0]["text"], "queued");
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    stdio.close().await;
}
