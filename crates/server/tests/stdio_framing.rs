//! The stdio transport's framing: a bad line costs that line only; lines
//! come in any chunks; requests that wait overlap with the lines after them.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolwire_protocol::ElicitAction;
use toolwire_server::stdio::StdioConfig;
use toolwire_server::{NoArgs, RequestContext, Server, ToolBuilder, ToolError};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

fn server() -> Server {
    server_with_gate(CancellationToken::new())
}

/// The test server; its `wait` tool answers once `gate` is cancelled (by
/// the `release` tool, or by the test).
fn server_with_gate(gate: CancellationToken) -> Server {
    let waiting = gate.clone();
    Server::builder("framing-test", "1.0.0")
        // Thousands of calls within a second: this is about framing.
        .no_tool_call_limit()
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
        .tool(
            ToolBuilder::new("wait").handler(move |_: NoArgs, _cx: RequestContext| {
                let gate = waiting.clone();
                async move {
                    gate.cancelled().await;
                    "waited"
                }
            }),
        )
        .tool(
            ToolBuilder::new("release").handler(move |_: NoArgs, _cx: RequestContext| {
                let gate = gate.clone();
                async move {
                    gate.cancel();
                    "released"
                }
            }),
        )
        .tool(
            ToolBuilder::new("nap").handler(|_: NoArgs, _cx: RequestContext| async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                "rested"
            }),
        )
        .tool(
            ToolBuilder::new("steps").handler(|_: NoArgs, cx: RequestContext| async move {
                cx.progress(1.0, Some(2.0), None).await;
                cx.progress(2.0, Some(2.0), None).await;
                "stepped"
            }),
        )
        .tool(
            ToolBuilder::new("slow_steps").handler(|_: NoArgs, cx: RequestContext| async move {
                cx.progress(1.0, Some(2.0), None).await;
                tokio::task::yield_now().await;
                cx.progress(2.0, Some(2.0), None).await;
                tokio::time::sleep(Duration::from_millis(5)).await;
                "stepped slowly"
            }),
        )
        .build()
        .unwrap()
}

/// A 2026-07-28 `tools/call` of `tool` without arguments.
fn call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": meta()}})
}

/// Messages as the lines of one chunk.
fn chunk(messages: &[Value]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for message in messages {
        serde_json::to_writer(&mut bytes, message).unwrap();
        bytes.push(b'\n');
    }
    bytes
}

/// The text of the first content block of a `tools/call` reply.
fn text_of(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {reply}"))
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

/// Every request of a chunk is answered, however many lines the chunk
/// holds, with bad lines and blank ones among them.
#[tokio::test]
async fn a_chunk_of_many_lines_is_answered_line_by_line() {
    let mut stdio = ServedStdio::start(server());
    let mut bytes = chunk(
        &(1..=200)
            .map(|id| echo(id, &format!("n{id}")))
            .collect::<Vec<_>>(),
    );
    bytes.extend_from_slice(
        b"{not json\n\n   \n{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}\n",
    );
    bytes.extend(chunk(&[echo(201, "last")]));
    stdio.send_raw(&bytes).await;
    let mut answered = BTreeSet::new();
    let mut errors = Vec::new();
    for _ in 0..203 {
        let reply = stdio.next().await;
        match reply["id"].as_i64() {
            Some(id) => {
                let expected = if id == 201 {
                    "last".into()
                } else {
                    format!("n{id}")
                };
                assert_eq!(text_of(&reply), expected, "{reply}");
                assert!(answered.insert(id), "answered twice: {reply}");
            }
            None => errors.push(reply["error"]["code"].as_i64().unwrap()),
        }
    }
    assert_eq!(answered, (1..=201).collect());
    errors.sort_unstable();
    assert_eq!(errors, [-32700, -32600]);
    answered_echo(&mut stdio, 300, "still serving").await;
    stdio.close().await;
}

/// A client that writes all its requests before reading any reply is
/// served: reading goes on while stdout is full.
#[tokio::test]
async fn a_client_that_reads_nothing_until_it_has_written_everything_is_served() {
    let mut stdio = ServedStdio::start(server());
    // Far more replies than the pipe and the transport's queue hold.
    let requests: Vec<Value> = (1..=3000).map(|id| echo(id, "x")).collect();
    tokio::time::timeout(Duration::from_secs(30), stdio.send_raw(&chunk(&requests)))
        .await
        .expect("the server reads on while nobody reads its replies");
    let mut answered = BTreeSet::new();
    for _ in 0..3000 {
        let reply = stdio.next().await;
        assert_eq!(text_of(&reply), "x", "{reply}");
        answered.insert(reply["id"].as_i64().unwrap());
    }
    assert_eq!(answered.len(), 3000);
    stdio.close().await;
}

/// A line may arrive in pieces, split anywhere (inside a multi-byte
/// character, between `\r` and `\n`); it is served once it is whole.
#[tokio::test]
async fn a_line_split_across_reads_is_served_when_whole() {
    let mut stdio = ServedStdio::start(server());
    let mut line = serde_json::to_vec(&echo(1, "caf\u{e9} au lait")).unwrap();
    line.extend_from_slice(b"\r\n");
    let accent = line.windows(2).position(|w| w == [0xc3, 0xa9]).unwrap();
    let pieces = [
        &line[..10],
        &line[10..=accent],
        &line[accent + 1..line.len() - 1],
        &line[line.len() - 1..],
    ];
    for piece in pieces {
        stdio.send_raw(piece).await;
        // Lets the server read what came so far on its own.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let reply = stdio.next().await;
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(text_of(&reply), "caf\u{e9} au lait");
    answered_echo(&mut stdio, 2, "next").await;
    stdio.close().await;
}

/// Requests that wait do not hold up the lines after them: 64 calls wait
/// at once, a quick call is answered meanwhile, and all 64 end when
/// released.
#[tokio::test]
async fn waiting_calls_overlap_and_a_quick_call_is_answered_meanwhile() {
    let mut stdio = ServedStdio::start(server());
    let waits: Vec<Value> = (1..=64).map(|id| call(id, "wait")).collect();
    stdio.send_raw(&chunk(&waits)).await;
    answered_echo(&mut stdio, 100, "not held up").await;
    stdio.send(&call(101, "release")).await;
    let mut waited = BTreeSet::new();
    for _ in 0..65 {
        let reply = stdio.next().await;
        let id = reply["id"].as_i64().unwrap();
        let expected = if id == 101 { "released" } else { "waited" };
        assert_eq!(text_of(&reply), expected, "{reply}");
        waited.insert(id);
    }
    assert_eq!(waited, (1..=64).chain([101]).collect());
    stdio.close().await;
}

/// A request's progress notifications precede its response, whether it
/// ends in its first poll or goes on in a task; requests sent together
/// keep that order each.
#[tokio::test]
async fn progress_precedes_the_response_of_quick_and_slow_calls() {
    let mut stdio = ServedStdio::start(server());
    let with_token = |id: i64, tool: &str| {
        let mut request = call(id, tool);
        request["params"]["_meta"]["progressToken"] = json!(format!("p{id}"));
        request
    };
    let requests: Vec<Value> = (1..=20)
        .map(|id| with_token(id, if id % 2 == 0 { "steps" } else { "slow_steps" }))
        .collect();
    stdio.send_raw(&chunk(&requests)).await;
    let mut seen: std::collections::HashMap<String, Vec<f64>> = Default::default();
    let mut answered = BTreeSet::new();
    for _ in 0..60 {
        let line = stdio.next().await;
        if line["method"] == "notifications/progress" {
            let token = line["params"]["progressToken"].as_str().unwrap().to_owned();
            assert!(
                !answered.contains(&token),
                "progress after the response: {line}"
            );
            let progress = line["params"]["progress"].as_f64().unwrap();
            seen.entry(token).or_default().push(progress);
        } else {
            let token = format!("p{}", line["id"]);
            assert_eq!(seen.get(&token), Some(&vec![1.0, 2.0]), "{line}");
            answered.insert(token);
        }
    }
    assert_eq!(answered.len(), 20);
    stdio.close().await;
}

/// A cancelled request that was waiting sends no response; the calls
/// after it are served.
#[tokio::test]
async fn a_cancelled_waiting_call_sends_no_response() {
    let gate = CancellationToken::new();
    let mut stdio = ServedStdio::start(server_with_gate(gate.clone()));
    stdio.send(&call(1, "wait")).await;
    stdio
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1, "reason": "changed my mind"}}),
        )
        .await;
    answered_echo(&mut stdio, 2, "after the cancellation").await;
    gate.cancel();
    // Had id 1 been answered, its reply would come before this one's.
    answered_echo(&mut stdio, 3, "nothing for 1").await;
    stdio.close().await;
}

/// At end of input, calls still running are answered before the server
/// stops.
#[tokio::test]
async fn at_end_of_input_running_calls_are_answered() {
    let mut stdio = ServedStdio::start(server());
    let mut requests: Vec<Value> = (1..=20).map(|id| call(id, "nap")).collect();
    requests.extend((21..=25).map(|id| echo(id, "quick")));
    stdio.send_raw(&chunk(&requests)).await;
    stdio.end_input().await;
    let mut answered = BTreeSet::new();
    for _ in 0..25 {
        let reply = stdio.next().await;
        let id = reply["id"].as_i64().unwrap();
        assert_eq!(text_of(&reply), if id > 20 { "quick" } else { "rested" });
        answered.insert(id);
    }
    assert_eq!(answered, (1..=25).collect());
    stdio.close().await;
}
